"""A document given already cut, each piece at its own time (a conversation's messages,
``Documents.create_timed_document``), on every store: each passage happened when its
piece did, the same pieces again add nothing, and a continued conversation is a new
version keeping the passages it had; a ChatGPT export imported through it
(``importing.run``) likewise."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from metacortex.documents import DocumentLimits
from metacortex.documents.timed import TimedPiece
from metacortex.domain.records import BranchState
from metacortex.errors import DocumentRefused, InvalidArgument
from metacortex.importing.limits import ImportLimits
from metacortex.importing.run import import_export, read_export
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import Access, MemoryService
from metacortex.storage.base import MemoryFilter, MemoryStore
from metacortex.usecases.options import ServiceOptions
from tests.fakes import HashingEmbedder
from tests.importing.exports import chatgpt_export, generated_chats

START = datetime(2024, 2, 3, 10, 0, 0, 250_000, tzinfo=UTC)
LONG = " ".join(f"Sentence {n} about the lighthouse keeper's logbook." for n in range(60))


def _pieces(count: int) -> list[TimedPiece]:
    said = [
        "User: When was the lighthouse on Skerry Point automated?",
        "Assistant: It was automated in 1987, after the last keeper left.",
        f"Assistant: {LONG}",
    ]
    return [
        TimedPiece(said[n % len(said)] + f" ({n})", START + timedelta(hours=n))
        for n in range(count)
    ]


def _times(service: MemoryService, admin: Access, document_id: str) -> list[tuple[str, str]]:
    _, passages = service.document_passages(admin, id=document_id)
    return [(p.content[:30], p.occurrence.to_wire()) for p in passages]


def test_each_passage_happened_when_its_piece_did_and_the_title_is_in_its_retrieval(
    service: MemoryService, admin: Access
) -> None:
    added = service.create_timed_document(
        admin, pieces=_pieces(3), title="Skerry Point", source="chatgpt:abc"
    )
    assert added["write_status"] == "created"
    document, passages = service.document_passages(admin, id=added["document"]["id"])
    assert document.title == "Skerry Point"
    assert document.source == "chatgpt:abc"
    assert len(passages) > 3  # the long piece is cut in several, never joined to another
    by_piece: dict[str, list[str]] = {}
    for passage in passages:
        assert passage.retrieval_text.startswith("Skerry Point\n\n")
        assert passage.occurrence.source.value == "given"
        by_piece.setdefault(passage.occurrence.to_wire(), []).append(passage.content)
    assert list(by_piece) == [
        "2024-02-03T10:00:00.250Z",
        "2024-02-03T11:00:00.250Z",
        "2024-02-03T12:00:00.250Z",
    ]
    assert by_piece["2024-02-03T10:00:00.250Z"] == [
        "User: When was the lighthouse on Skerry Point automated? (0)"
    ]
    assert len(by_piece["2024-02-03T12:00:00.250Z"]) > 1
    found = service.search(
        admin, query="lighthouse automated", after="2024-02-03T11:00:00Z", before="2024-02-04"
    )["matches"]
    assert found
    assert all(m["metadata"]["occurred_at"] >= "2024-02-03T11" for m in found)


def test_the_same_pieces_again_add_nothing_and_more_pieces_keep_the_earlier_passages(
    service: MemoryService, admin: Access
) -> None:
    first = service.create_timed_document(
        admin, pieces=_pieces(4), title="Skerry Point", source="claude:1"
    )
    again = service.create_timed_document(
        admin, pieces=_pieces(4), title="Skerry Point", source="claude:1"
    )
    assert again["write_status"] == "duplicate"
    assert again["document"]["id"] == first["document"]["id"]
    before = _times(service, admin, first["document"]["id"])

    grown = service.create_timed_document(
        admin, pieces=_pieces(5), title="Skerry Point", source="claude:1"
    )
    assert grown["write_status"] == "replaced"
    assert grown["passages"]["retired"] == 0
    assert grown["passages"]["added"] == 1  # the new message alone is embedded
    assert grown["passages"]["kept"] == first["passages"]["added"]
    times = _times(service, admin, grown["document"]["id"])
    assert times[: len(times) - 1] == before
    assert times[-1][1] == "2024-02-03T14:00:00.250Z"
    active = service.store.list_page(MemoryFilter(states=(BranchState.ACTIVE,)), 100, None)
    assert len(active) == len(times)


def test_a_refused_timed_document_writes_nothing(
    store: MemoryStore, embedder: HashingEmbedder, admin: Access
) -> None:
    service = MemoryService(
        store,
        embedder,
        merger=SentenceUnionMerger(),
        options=ServiceOptions(document_limits=lambda: DocumentLimits(max_passages=2)),
    )
    with pytest.raises(DocumentRefused, match="METACORTEX_DOCUMENT_MAX_PASSAGES"):
        service.create_timed_document(admin, pieces=_pieces(3), title="T", source="chatgpt:x")
    with pytest.raises(InvalidArgument, match=r"pieces\[1\] contains the disallowed character"):
        service.create_timed_document(
            admin,
            pieces=[TimedPiece("fine", START), TimedPiece("a \x00 NUL", START)],
            title="T",
            source="chatgpt:z",
        )
    with pytest.raises(InvalidArgument, match="no piece with text"):
        service.create_timed_document(
            admin, pieces=[TimedPiece("  ", START)], title="T", source="chatgpt:y"
        )
    assert service.list_documents(admin)["documents"] == []
    assert service.store.list_page(MemoryFilter(states=tuple(BranchState)), 10, None) == []


def test_an_export_imports_on_every_store_once_with_each_message_s_time(
    service: MemoryService, admin: Access, tmp_path: Path
) -> None:
    chats = generated_chats(6, 8)
    archive = tmp_path / "chatgpt.zip"
    archive.write_bytes(chatgpt_export(chats))
    export = read_export(archive, "chatgpt", ImportLimits())

    first = import_export(service, admin, export)
    again = import_export(service, admin, export)

    assert (first.imported, first.messages, first.added) == (6, 48, 48)
    assert (again.imported, again.updated, again.unchanged, again.added) == (0, 0, 6, 0)
    document = service.store.find_document(space=admin.space(None), source=f"chatgpt:{chats[3].id}")
    assert document is not None
    _, passages = service.document_passages(admin, id=document.id)
    assert [p.occurrence.at for p in passages] == [turn.at for turn in chats[3].turns]
