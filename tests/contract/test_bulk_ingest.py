"""Bulk ingest (restore, reembed) embeds hundreds of memories per call (issue 23).

Whatever the batching, every memory must get its own text's vector, in order, and
a record the tools refuse must be named without losing the others. The archive is
longer than one embedding call (``EMBED_CHUNK``) so that the chunk boundary is
crossed, with the refused record inside the first chunk.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from metacortex.domain.records import ALL_STATES
from metacortex.operations.backup import EMBED_CHUNK, export_portable, restore_portable
from metacortex.operations.reembed import reembed
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import Access, MemoryService
from metacortex.storage.base import MemoryFilter, MemoryStore
from metacortex.storage.sqlite import SQLiteStore
from tests.contract.conftest import StoreFactory
from tests.fakes import HashingEmbedder

ADMIN = Access.admin()
COUNT = EMBED_CHUNK + 40
BAD = 300  # its position in the archive


def _text(i: int) -> str:
    # Lengths vary so the local model would reorder them; words differ per record.
    return f"record {i} mentions word{i} and word{i * 7 % 97} " + "filler " * (i % 13)


def _archive(tmp_path: Path) -> tuple[Path, list[str]]:
    """A real backup's record as the template for COUNT records; one of them refused."""
    source = SQLiteStore(tmp_path / "source.sqlite3")
    service = MemoryService(source, HashingEmbedder(), merger=SentenceUnionMerger())
    service.save(ADMIN, content="template", topic="bulk")
    folder = tmp_path / "backup"
    export_portable(source, folder, "test-hashing:64")
    source.close()
    template: dict[str, Any] = json.loads((folder / "memories.ndjson").read_text())
    records = []
    for i in range(COUNT):
        record = json.loads(json.dumps(template))
        record.update(id=f"bulk-{i:04d}", content=_text(i), retrieval_text=_text(i))
        if i == BAD:
            record["metadata"]["topic"] = ["not", "a", "string"]
        records.append(record)
    data = "".join(json.dumps(r) + "\n" for r in records).encode()
    (folder / "memories.ndjson").write_bytes(data)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest.update(count=COUNT, sha256=hashlib.sha256(data).hexdigest())
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder, [r["id"] for r in records]


def _assert_own_vectors(store: MemoryStore, embedder: HashingEmbedder, ids: list[str]) -> None:
    """Each memory's stored vector is its own text's single embedding (nearest, cosine 1)."""
    for i in [*range(0, COUNT, 23), EMBED_CHUNK - 1, EMBED_CHUNK, COUNT - 1]:
        if i == BAD:
            continue
        [vector] = embedder.embed_documents([_text(i)])
        [best] = store.vector_search(vector, MemoryFilter(states=ALL_STATES), 1)
        assert best.memory.id == ids[i]
        assert best.score > 1 - 1e-5


def test_a_bulk_restore_gives_every_memory_its_own_vector_and_names_the_refused_one(
    store: MemoryStore, tmp_path: Path
) -> None:
    folder, ids = _archive(tmp_path)
    embedder = HashingEmbedder()
    store.bind_embedding(embedder.identity)

    summary = restore_portable(store, embedder, folder)

    assert summary.restored == COUNT - 1
    assert summary.skipped_existing == 0
    [refusal] = summary.refused
    assert f"line {BAD + 1}" in refusal
    assert "metadata.topic is a list, not a string" in refusal
    assert store.get(ids[BAD]) is None
    assert [m is not None for m in store.get_many(ids)].count(True) == COUNT - 1
    # The model is called once per chunk, not once per transaction.
    assert embedder.calls == 2
    _assert_own_vectors(store, embedder, ids)

    again = restore_portable(store, embedder, folder)
    assert (again.restored, again.skipped_existing) == (0, COUNT - 1)


def test_a_bulk_reembed_gives_every_memory_its_own_vector(
    store_factory: StoreFactory, tmp_path: Path
) -> None:
    folder, ids = _archive(tmp_path)
    store = store_factory()
    store.bind_embedding(HashingEmbedder().identity)
    restore_portable(store, HashingEmbedder(), folder)
    new_model = HashingEmbedder(32, "model-b")

    summary = reembed(store, new_model)

    assert summary.count == COUNT - 1
    reopened = store_factory()
    reopened.bind_embedding(new_model.identity)
    _assert_own_vectors(reopened, new_model, ids)
