"""The original's portable archive restores: ``metacortex restore`` on its backup folder.

Counterpart: a folder written as the TypeScript MetaCortex's ``backup:memories``
writes it (archive.ts and backup-memories.ts at 36afd74, rebuilt in
``original_metacortex.py``): ``memories.ndjson`` with its ``metadata`` maps and
epoch-millisecond times, ``manifest.json`` with ``document_count`` and no format
name, read from a collection its tools wrote on the emulator. Restored into the
embedded store and served over MCP, every record has the topic, state, links and
times the original had.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from google.cloud import firestore

from metacortex.cli.main import main
from metacortex.operations.backup import restore_portable
from metacortex.storage.sqlite import SQLiteStore
from tests.firestore_support import PROJECT, FirestoreStoreFactory
from tests.migration.original_metacortex import MEMORY_COLLECTION, write_archive
from tests.migration.support import (
    as_the_original_had_it,
    connected,
    original_model,
    served,
    the_original,
    the_originals_corpus,
)

pytestmark = [pytest.mark.firestore, pytest.mark.anyio]

Archived = tuple[Path, dict[str, dict[str, Any]]]


@pytest.fixture
def archived(firestore_store_factory: FirestoreStoreFactory, tmp_path: Path) -> Archived:
    """The original's archive of a corpus its tools wrote, and that corpus's documents."""
    firestore_store_factory()
    client = firestore.Client(project=PROJECT)
    original = the_original(client)
    the_originals_corpus(original, every_era=False)
    original.export_archive(tmp_path / "archive")
    documents = {d.id: d.to_dict() or {} for d in client.collection(MEMORY_COLLECTION).stream()}
    return tmp_path / "archive", documents


async def test_the_originals_archive_restores_with_its_topics_states_links_and_times(
    archived: Archived, tmp_path: Path
) -> None:
    folder, documents = archived
    store = SQLiteStore(tmp_path / "restored.sqlite3")
    store.bind_embedding(original_model().identity)

    summary = restore_portable(store, original_model(), folder)

    assert (summary.restored, summary.refused) == (len(documents), ())
    with served(store, tmp_path) as url:
        async with connected(url) as tools:
            for memory_id, data in documents.items():
                item = (await tools.call("fetch_context", id=memory_id))["item"]
                assert item["content"] == data["content"]
                assert item["metadata"] == as_the_original_had_it(data), memory_id
            found = await tools.call("search_context", query="exponential backoff capped")
            merged = next(i for i, d in documents.items() if "backoff capped" in d["content"])
            assert found["matches"][0]["id"] == merged


def test_metacortex_restore_reads_the_originals_folder_and_names_what_it_refuses(
    archived: Archived,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder, documents = archived
    lines = (folder / "memories.ndjson").read_text().splitlines()
    broken = json.loads(lines[0])
    broken["id"] = "has space"
    first_release = {  # archive.ts orderKeys drops its metadata.timestamp: no created_at
        "id": "firstRelease00000001",
        "content": "Use MVI for the Android screens.",
        "retrieval_text": "Use MVI for the Android screens.",
        "metadata": {"module_name": "android", "branch_state": "active", "modality": "text"},
    }
    records = [json.loads(line) for line in lines] + [broken, first_release]
    write_archive(folder, records, generated_at=1_767_225_600_000)

    status = main(["restore", str(folder), "--data-dir", str(tmp_path / "data")])

    printed = capsys.readouterr()
    out = printed.out
    assert status == 1  # some records were refused
    assert "2 of the backup's records were refused" in printed.err
    assert (
        f"restored {len(documents)} memories from the TypeScript MetaCortex's portable "
        "archive; 0 already present; 2 refused"
    ) in out
    assert "(id 'has space'): the tools would refuse it: id is not a memory id" in out
    assert "(id 'firstRelease00000001'): no creation time: metadata.created_at is missing" in out
