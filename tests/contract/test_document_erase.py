"""Erased means gone for documents too (issue 37, High), on every store: ``space remove
--erase``, ``erase --topic`` and erasing a passage by id take the document whole (every
version's record, extracted text, original bytes, passages and relations); a space holding
only documents without text is not empty; a key added again starts empty; the same file
added again is read and indexed anew; a process killed with SIGKILL in the middle of an
erase leaves nothing readable, and running the same erase again finishes it.

Files are real: Markdown and text as written here, a scanned PDF made by fpdf2 (pages that
are pictures), read by the product's reader process."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest
from pydantic import SecretStr

from metacortex.access.registry import Registry
from metacortex.config import Settings
from metacortex.documents.isolation import shut_down
from metacortex.domain.documents import DocumentState
from metacortex.domain.records import ALL_STATES
from metacortex.errors import FailedPrecondition, NotFound
from metacortex.operations.space_removal import SpaceRemoval
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import Access, MemoryService
from metacortex.storage.base import MAX_ERASE_BATCH, MemoryFilter, MemoryStore
from metacortex.storage.sqlite import SQLiteStore
from tests.documents.craft import pdf_of_pages
from tests.fakes import HashingEmbedder

ROOT: Final = Path(__file__).resolve().parents[2]
BY: Final = "owner (test)"
EVERY_STATE: Final = MemoryFilter(states=ALL_STATES)
GARDEN: Final = """# Garden plan

## Tomatoes

Plant the tomatoes in May, once the last frost is over. Stake them early.

## Beans

The runner beans climb the north fence; pick them every other day in August.
"""
# A text of more than one erase batch of passages (about 1,000 characters each).
LONG: Final = "\n\n".join(
    f"Paragraph {n} of the ledger: " + " ".join(f"entry{n}x{k}" for k in range(90))
    for n in range(MAX_ERASE_BATCH + 40)
)


@pytest.fixture(scope="module", autouse=True)
def _reader_hosts() -> Iterator[None]:
    yield
    shut_down()


@pytest.fixture
def service(store: MemoryStore) -> MemoryService:
    return MemoryService(store, HashingEmbedder(), merger=SentenceUnionMerger())


def _settings() -> Settings:
    return Settings(  # type: ignore[call-arg]
        _env_file=None, mcp_admin_token=SecretStr("a" * 20 + "B" * 12 + "0123456789")
    )


def _owner(store: MemoryStore) -> Access:
    return Access.admin(directory=Registry(store).directory())


def _add(service: MemoryService, text: str, **kw: Any) -> dict[str, Any]:
    kw.setdefault("media_type", "text/markdown")
    kw.setdefault("space", "work")
    return service.create_document(_owner(service.store), content=text, **kw)


def _scan(service: MemoryService, **kw: Any) -> dict[str, Any]:
    """A scanned PDF: kept with its bytes, no text, no passage."""
    scan = pdf_of_pages([None])
    kw.setdefault("space", "work")
    return service.create_document(
        _owner(service.store),
        content_base64=base64.b64encode(scan).decode(),
        media_type="application/pdf",
        title="Lease",
        **kw,
    )


def _stored(store: MemoryStore, space: str = "work") -> dict[str, Any]:
    """Everything of the space's documents any reader could still reach."""
    return {
        "versions": [d.id for d in store.document_versions(space=space)],
        "count": store.count_documents(space=space),
        "current": [d.id for d in store.list_documents(100, None, space=space)],
        "records": store.count_memories(MemoryFilter(states=EVERY_STATE.states, space=space)),
    }


def _gone(store: MemoryStore, service: MemoryService, ids: list[str], space: str) -> None:
    """Each version's record, text and bytes are gone, for the store and for a reader."""
    owner = _owner(store)
    for document_id in ids:
        assert store.get_document(document_id, space=space) is None
        assert store.document_bytes(document_id, space=space) is None
        assert store.document_text(document_id, 0, 10_000, space=space) == ""
        assert store.document_passages(document_id, space=space) == []
        with pytest.raises(NotFound, match="no document"):
            service.get_document(owner, id=document_id, space=space)
    assert store.relations_of(ids, space=space, include_invalid=True) == []


def test_removing_a_space_with_erase_takes_its_documents_whole_and_the_key_starts_empty(
    store: MemoryStore, service: MemoryService
) -> None:
    Registry(store).add_space("work")
    first = _add(service, GARDEN, source="garden.md")["document"]
    second = _add(service, GARDEN.replace("May", "June"), source="garden.md")["document"]
    lease = _scan(service)["document"]
    owner = _owner(store)
    service.save(owner, content="Standup at nine", space="work")
    passages = [
        p.id for d in (first, second) for p in store.document_passages(d["id"], space="work")
    ]
    removal = SpaceRemoval(store, _settings())
    plan = removal.plan("work")
    assert (plan.memories, plan.documents) == (1 + len(passages), 3)

    removed = removal.remove(
        "work",
        erased_by=BY,
        erase_count=plan.memories,
        erase_documents=plan.documents,
    )

    assert (removed.erased, removed.erased_documents) == (plan.memories, 3)
    ids = [first["id"], second["id"], lease["id"]]
    Registry(store).add_space("work")  # the same key again: it starts empty
    assert _stored(store) == {"versions": [], "count": 0, "current": [], "records": 0}
    _gone(store, service, ids, "work")
    assert store.relations_of(passages, space="work", include_invalid=True) == []
    assert service.list_documents(_owner(store), space="work")["documents"] == []
    again = _add(service, GARDEN, source="garden.md")
    assert again["write_status"] == "created"  # read and indexed anew, not a duplicate
    assert again["passages"]["added"] == 2
    assert _scan(service)["write_status"] == "created"


def test_a_space_holding_only_a_document_without_text_is_not_empty(
    store: MemoryStore, service: MemoryService
) -> None:
    Registry(store).add_space("work")
    lease = _scan(service)["document"]
    removal = SpaceRemoval(store, _settings())
    plan = removal.plan("work")
    assert (plan.memories, plan.documents) == (0, 1)

    with pytest.raises(FailedPrecondition, match="holds 1 document, and only an empty"):
        removal.remove("work", erased_by=BY)
    assert store.get_document(lease["id"], space="work") is not None

    removed = removal.remove("work", erased_by=BY, erase_count=0, erase_documents=1)
    assert (removed.erased, removed.erased_documents) == (0, 1)
    Registry(store).add_space("work")
    _gone(store, service, [lease["id"]], "work")


def test_erasing_a_topic_takes_its_documents_whole_and_the_same_file_is_read_anew(
    store: MemoryStore, service: MemoryService
) -> None:
    Registry(store).add_space("work")
    owner = _owner(store)
    garden = _add(service, GARDEN, source="garden.md", topic="home")["document"]
    lease = _scan(service, topic="home")["document"]
    kept = _add(service, "# Other\n\nA note on the car.\n", topic="car")["document"]
    service.save(owner, content="Water the basil", topic="home", space="work")
    passages = {p.id for p in store.document_passages(garden["id"], space="work")}

    plan = service.plan_erase(owner, topic="home", space="work")
    assert plan["count"] == 3  # two passages and the note
    assert sorted(d["id"] for d in plan["documents"]) == sorted([garden["id"], lease["id"]])
    result = service.erase(
        owner, topic="home", erased_by=BY, expected_count=plan["count"], space="work"
    )

    assert result["erased_count"] == 3
    assert sorted(result["erased_document_ids"]) == sorted([garden["id"], lease["id"]])
    _gone(store, service, [garden["id"], lease["id"]], "work")
    assert [d["id"] for d in service.list_documents(owner, space="work")["documents"]] == [
        kept["id"]
    ]
    found = service.search(owner, query="tomatoes frost", space="work")["matches"]
    assert passages.isdisjoint(hit["id"] for hit in found)
    again = _add(service, GARDEN, source="garden.md", topic="home")
    assert again["write_status"] == "created"
    assert again["passages"]["added"] == 2
    found = service.search(owner, query="tomatoes frost", space="work")["matches"]
    assert found[0]["metadata"]["document"]["id"] == again["document"]["id"]


def test_erasing_one_passage_by_id_takes_its_whole_document_every_version(
    store: MemoryStore, service: MemoryService
) -> None:
    Registry(store).add_space("work")
    owner = _owner(store)
    first = _add(service, GARDEN, source="garden.md")["document"]
    second = _add(service, GARDEN.replace("May", "June"), source="garden.md")["document"]
    every = [p.id for d in (first, second) for p in store.document_passages(d["id"], space="work")]
    [one, *_] = store.document_passages(second["id"], space="work")

    plan = service.plan_erase(owner, ids=[one.id], space="work")
    assert plan["count"] == len(every) == 3  # the kept passage, the new one, the retired one
    result = service.erase(owner, ids=[one.id], erased_by=BY, space="work")

    assert sorted(result["erased_ids"]) == sorted(every)
    assert sorted(result["erased_document_ids"]) == sorted([first["id"], second["id"]])
    _gone(store, service, [first["id"], second["id"]], "work")
    assert set(store.tombstones(every, space="work")) == set(every)


# ------------------------------------------------------------ SIGKILL half-way
# A process erasing is killed with SIGKILL at the moment the erase reports its first
# batch of passages erased (the ``progress`` the command's progress bar is told: a point
# the product reaches on its own): documents marked, 100 passages gone, the rest and every
# version's record, text and bytes still stored.
_CHILD: Final = textwrap.dedent(
    """
    import os, signal, sys
    sys.path.insert(0, {root!r})
    from metacortex.service import Access
    from metacortex.access.registry import Registry
    from tests.contract.test_document_erase import open_store, _settings

    store = open_store({backend!r}, {path!r})

    def killed(erased):
        os.kill(os.getpid(), signal.SIGKILL)

    if {topic!r} is None:
        from metacortex.operations.space_removal import SpaceRemoval
        removal = SpaceRemoval(store, _settings())
        plan = removal.plan("work")
        removal.remove("work", erased_by="owner (killed)", erase_count=plan.memories,
                       erase_documents=plan.documents, progress=killed)
    else:
        from metacortex.usecases.erase import Erasure
        owner = Access.admin(directory=Registry(store).directory())
        Erasure(store).erase(owner, erased_by="owner (killed)", topic={topic!r},
                             space="work", progress=killed)
    raise SystemExit("the erase was not killed")
    """
)


def open_store(backend: str, path: str) -> MemoryStore:
    """The store the test opened, from another process."""
    if backend == "sqlite":
        return SQLiteStore(Path(path))
    from metacortex.storage.firestore import FirestoreStore
    from tests.firestore_support import firestore_settings

    return FirestoreStore.from_settings(firestore_settings())


def _killed_half_way(store: MemoryStore, topic: str | None) -> None:
    backend = "sqlite" if isinstance(store, SQLiteStore) else "firestore"
    path = str(store.path) if isinstance(store, SQLiteStore) else ""
    script = _CHILD.format(root=str(ROOT), backend=backend, path=path, topic=topic)
    child = subprocess.run(  # noqa: S603 - our interpreter, a fixed script
        [sys.executable, "-c", script],
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert child.returncode == -9, child.stderr


def _half_erased(
    store: MemoryStore, service: MemoryService, ledger: str, marked: list[str]
) -> None:
    """After the kill: some passages are gone, the versions are marked and read nowhere."""
    erasing = store.document_versions(space="work", erasing=True)
    assert sorted(d.id for d in erasing) == sorted(marked)
    assert {d.state for d in erasing} == {DocumentState.ERASING}
    left = store.document_passages(ledger, space="work")
    assert len(left) == store.get_document(ledger, space="work").passage_count - MAX_ERASE_BATCH  # type: ignore[union-attr]
    owner = _owner(store)
    listed = service.list_documents(owner, space="work")["documents"]
    assert set(marked).isdisjoint(d["id"] for d in listed)
    for document in erasing:
        with pytest.raises(NotFound, match="no document"):
            service.get_document(owner, id=document.id, space="work")
        assert store.find_document(space="work", sha256=document.sha256) is None


def test_a_space_removal_killed_half_way_is_finished_by_running_it_again(
    store: MemoryStore, service: MemoryService
) -> None:
    Registry(store).add_space("work")
    ledger = _add(service, LONG, media_type="text/plain", source="ledger.txt")["document"]
    lease = _scan(service)["document"]
    assert ledger["passage_count"] > MAX_ERASE_BATCH

    _killed_half_way(store, None)

    _half_erased(store, service, ledger["id"], [ledger["id"], lease["id"]])
    removal = SpaceRemoval(store, _settings())
    plan = removal.plan("work")
    assert plan.documents == 2  # both still marked, the ledger's passages half gone
    removed = removal.remove(
        "work", erased_by=BY, erase_count=plan.memories, erase_documents=plan.documents
    )
    assert removed.erased_documents == 2
    Registry(store).add_space("work")
    assert _stored(store) == {"versions": [], "count": 0, "current": [], "records": 0}
    _gone(store, service, [ledger["id"], lease["id"]], "work")
    again = _add(service, LONG, media_type="text/plain", source="ledger.txt")
    assert again["write_status"] == "created"


def test_a_topic_erase_killed_half_way_is_finished_by_running_it_again(
    store: MemoryStore, service: MemoryService
) -> None:
    Registry(store).add_space("work")
    ledger = _add(service, LONG, media_type="text/plain", topic="books")["document"]
    kept = _add(service, GARDEN, topic="home")["document"]

    _killed_half_way(store, "books")

    _half_erased(store, service, ledger["id"], [ledger["id"]])
    owner = _owner(store)
    plan = service.plan_erase(owner, topic="books", space="work")
    assert [d["unfinished"] for d in plan["documents"]] == [True]
    result = service.erase(
        owner, topic="books", erased_by=BY, expected_count=plan["count"], space="work"
    )
    assert result["erased_document_ids"] == [ledger["id"]]
    _gone(store, service, [ledger["id"]], "work")
    assert store.document_versions(space="work") == [store.get_document(kept["id"], space="work")]
