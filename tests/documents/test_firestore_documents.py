"""What Firestore's many-batch document write leaves behind when it fails, on the real
emulator: a write the server refuses half-way is undone on the spot; a process killed
half-way leaves the version ``ingesting``, which the next add of the same file undoes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any, Final

import pytest
from google.api_core import exceptions as google_errors
from google.cloud import firestore

from metacortex.domain.documents import Document, DocumentState
from metacortex.domain.records import BranchState, Memory, utc_now
from metacortex.errors import FailedPrecondition, Unavailable
from metacortex.storage.base import DocumentWrite, MemoryFilter
from metacortex.storage.firestore import FirestoreStore
from metacortex.storage.firestore_documents import STALE_AFTER
from metacortex.usecases.passage_relations import passage_links, relation_change
from tests.documents.records import document_record, passage_records
from tests.fakes import HashingEmbedder
from tests.firestore_support import PROJECT, FirestoreStoreFactory

pytestmark = pytest.mark.firestore
ROOT: Final = Path(__file__).resolve().parents[2]
EVERYTHING: Final = MemoryFilter(states=tuple(BranchState))


def _document() -> Document:
    return document_record(sha="c" * 64, source="big.txt")


def _passages(document: Document, count: int, *, huge_last: bool = False) -> list[Memory]:
    def text(number: int) -> str:
        if huge_last and number == count - 1:
            return "word " * 250_000  # 1.25 MB: over Firestore's 1 MiB document limit
        return f"Passage {number} of the big document, about rivers and bridges."

    return passage_records(document, count, text)


def _write(document: Document, records: list[Memory]) -> DocumentWrite:
    vectors = HashingEmbedder().embed_documents([r.content[:200] for r in records])
    return DocumentWrite(
        document=document,
        data=b"big",
        text="x" * 5_000,
        passages=list(zip(records, vectors, strict=True)),
    )


def _left_behind(store: FirestoreStore, document: Document) -> dict[str, Any]:
    client = store._client  # the test looks at the raw collections
    documents = client.collection("memory_vectors_documents")
    parts = documents.document(document.id).collection("memory_vectors_document_parts")
    keys = client.collection("memory_vectors_document_keys")
    return {
        "version": documents.document(document.id).get().exists,
        "parts": len(list(parts.select([]).stream())),
        "records": len(store.list_page(EVERYTHING, 1000, None)),
        "keys": len(list(keys.select([]).stream())),
    }


def test_a_write_the_server_refuses_half_way_is_undone(
    firestore_store_factory: FirestoreStoreFactory,
) -> None:
    store = firestore_store_factory()
    document = _document()
    records = _passages(document, 700, huge_last=True)  # the first 500 commit, then refused
    with pytest.raises((FailedPrecondition, Unavailable, google_errors.GoogleAPICallError)):
        store.add_document(_write(document, records))
    assert _left_behind(store, document) == {"version": False, "parts": 0, "records": 0, "keys": 0}
    again = _document()
    assert store.add_document(_write(again, _passages(again, 3))).created


def test_relations_a_refused_write_made_are_deleted_and_those_it_changed_put_back(
    firestore_store_factory: FirestoreStoreFactory,
) -> None:
    """The passages' relations go in batches after the passages: a write refused at its
    last relation (a summary over Firestore's 1 MiB document limit) has committed the
    batches before it, and undoing it must leave the relations as they were."""
    store = firestore_store_factory()
    first = _document()
    first_passages = _passages(first, 300)
    links = passage_links(first, first_passages, utc_now())
    store.add_document(replace(_write(first, first_passages), relations=links))
    stored = store.relations_of([p.id for p in first_passages], include_invalid=True)
    assert len(stored) == 599

    second = document_record(sha="d" * 64, source="big.txt")
    second_passages = _passages(second, 300)
    change = relation_change(second, second_passages, first_passages, stored, utc_now(), None)
    assert len(change.before) == 599  # the first version's, invalidated
    huge = replace(change.write[-1], target_summary="word " * 250_000)
    write = replace(
        _write(second, second_passages),
        retired=[p.with_changes(branch_state=BranchState.DEPRECATED) for p in first_passages],
        previous=store.get_document(first.id),
        relations=[*change.write[:-1], huge],
        relations_before=change.before,
    )
    with pytest.raises((FailedPrecondition, Unavailable, google_errors.GoogleAPICallError)):
        store.add_document(write)
    ends = [p.id for p in [*first_passages, *second_passages]] + [first.id, second.id]
    assert store.relations_of(ends, include_invalid=True) == stored
    assert all(r.valid for r in stored)


_CHILD: Final = textwrap.dedent(
    """
    import os, signal, sys
    sys.path.insert(0, {root!r})
    from tests.rpc_counting import CountingClient, RpcRecorder
    from tests.documents.test_firestore_documents import _document, _passages, _write
    from metacortex.storage.firestore import FirestoreStore

    class Crashing(RpcRecorder):
        commits = 0

        def open(self, kind, start, end=None, documents=0, size=0):
            if kind == "Commit":
                Crashing.commits += 1
                if Crashing.commits == 3:  # the claim, the first batch: then die
                    os.kill(os.getpid(), signal.SIGKILL)
            return super().open(kind, start, end, documents, size)

    store = FirestoreStore(CountingClient(Crashing(), project={project!r}), "memory_vectors")
    document = _document()
    store.add_document(_write(document, _passages(document, 1200)))
    """
)


def test_a_process_killed_half_way_leaves_an_ingesting_version_the_next_add_undoes(
    firestore_store_factory: FirestoreStoreFactory,
) -> None:
    store = firestore_store_factory()
    child = subprocess.run(  # noqa: S603 - our interpreter, a fixed script
        [sys.executable, "-c", _CHILD.format(root=str(ROOT), project=PROJECT)],
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert child.returncode == -9, child.stderr
    [stuck] = _versions(store)
    assert stuck.state is DocumentState.INGESTING
    assert store.find_document(sha256=stuck.sha256) is None  # never current
    assert store.list_documents(10, None) == []
    assert 0 < len(store.list_page(EVERYTHING, 1000, None)) < 1200  # one batch got in

    again = _document()
    fresh = _write(again, _passages(again, 2))
    with pytest.raises(Exception, match="being added right now"):
        store.add_document(fresh)  # not stale yet: someone may still be writing it
    _age(store, stuck.id, STALE_AFTER + timedelta(minutes=1))
    assert store.add_document(fresh).created
    assert store.get_document(stuck.id) is None
    assert [m.document.id for m in store.list_page(EVERYTHING, 1000, None) if m.document] == [
        again.id,
        again.id,
    ]


def _versions(store: FirestoreStore) -> list[Document]:
    from metacortex.storage.firestore_document_codec import decode_document

    client: firestore.Client = store._client
    return [
        decode_document(s.id, s.to_dict() or {}, "default")
        for s in client.collection("memory_vectors_documents").stream()
    ]


def _age(store: FirestoreStore, document_id: str, by: timedelta) -> None:
    """Move the version's start and its keys' claims back in time (as if ``by`` passed)."""
    client: firestore.Client = store._client
    then = utc_now() - by
    client.collection("memory_vectors_documents").document(document_id).update(
        {"ingest_started_at": then}
    )
    for key in client.collection("memory_vectors_document_keys").stream():
        if (key.to_dict() or {}).get("pending") == document_id:
            key.reference.update({"pending_at": then})
