"""Importing a ChatGPT and a Claude export of realistic size (a hundred conversations,
three thousand messages; made by ``tests/importing/exports.py`` from the documented
formats) into a real SQLite store: every message a passage at its own time, the same
export again adds nothing, a continued conversation is a new version, and search finds a
message by its words and by when it was written."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Final

import pytest

from metacortex.domain.records import BranchState
from metacortex.importing.limits import ImportLimits
from metacortex.importing.run import ImportSummary, import_export, read_export
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import Access, MemoryService
from metacortex.storage.base import MemoryFilter
from metacortex.storage.sqlite import SQLiteStore
from tests.fakes import HashingEmbedder
from tests.importing.exports import Chat, Turn, chatgpt_export, claude_export, generated_chats

ADMIN: Final = Access.admin()
CHATS: Final = 100
TURNS: Final = 30
NEEDLE: Final = "Marguerite rehearsed the harpsichord recital in Quimperlé"
MAKERS: Final[dict[str, Callable[[list[Chat]], bytes]]] = {
    "chatgpt": chatgpt_export,
    "claude": claude_export,
}


@pytest.fixture
def service(tmp_path: Path) -> Iterator[MemoryService]:
    store = SQLiteStore(tmp_path / "memories.sqlite3")
    yield MemoryService(store, HashingEmbedder(), merger=SentenceUnionMerger())
    store.close()


def _chats() -> list[Chat]:
    chats = generated_chats(CHATS, TURNS)
    chosen = chats[40]
    turn = chosen.turns[7]
    chosen.turns[7] = Turn(turn.role, f"{turn.text} {NEEDLE}.", turn.at)
    return chats


def _import(service: MemoryService, tmp_path: Path, kind: str, chats: list[Chat]) -> ImportSummary:
    path = tmp_path / f"{kind}.zip"
    path.write_bytes(MAKERS[kind](chats))
    export = read_export(path, kind, ImportLimits())
    done: list[int] = []
    summary = import_export(service, ADMIN, export, topic="history", advance=done.append)
    assert sum(done) == sum(len(c.messages) for c in export.conversations)
    return summary


def _active(service: MemoryService) -> int:
    return len(service.store.list_page(MemoryFilter(states=(BranchState.ACTIVE,)), 10_000, None))


@pytest.mark.parametrize("kind", ["chatgpt", "claude"])
def test_an_export_of_thousands_of_messages_imports_each_at_its_own_time_and_once(
    service: MemoryService, tmp_path: Path, kind: str
) -> None:
    chats = _chats()
    summary = _import(service, tmp_path, kind, chats)

    assert summary.lines()[:3] == [
        f"imported: {CHATS} conversations as new documents ({CHATS * TURNS:,} messages, "
        f"{summary.added:,} passages added)",
        "updated: 0 conversations continued since they were imported (new versions; "
        "0 passages kept)",
        "unchanged: 0 conversations already imported",
    ]
    assert summary.added >= CHATS * TURNS
    passages = _active(service)
    assert passages == summary.added

    chosen = chats[40]
    page = service.list_documents(ADMIN, limit=CHATS)
    listed = page["documents"]
    assert (len(listed), page["next_cursor"]) == (CHATS, None)
    document = next(d for d in listed if d["source"] == f"{kind}:{chosen.id}")
    assert document["title"] == chosen.title
    _, records = service.document_passages(ADMIN, id=document["id"])
    needle = next(r for r in records if NEEDLE in r.content)
    assert needle.content.startswith("Assistant: ")
    assert needle.occurrence.at == chosen.turns[7].at
    assert needle.topic == "history"
    assert records[0].content.startswith("User: ")
    assert records[0].retrieval_text.startswith(f"{chosen.title}\n\n")

    found = service.search(ADMIN, query="harpsichord recital Quimperlé", limit=3)["matches"]
    assert found[0]["id"] == needle.id
    day = chosen.turns[7].at.date()
    on_the_day = service.search(
        ADMIN,
        query="harpsichord recital",
        after=day.isoformat(),
        before=(day + timedelta(days=1)).isoformat(),
    )["matches"]
    assert on_the_day[0]["id"] == needle.id
    day_after = service.search(
        ADMIN, query="harpsichord recital", after=(day + timedelta(days=1)).isoformat()
    )["matches"]
    assert needle.id not in [m["id"] for m in day_after]

    again = _import(service, tmp_path, kind, chats)
    assert (again.imported, again.updated, again.unchanged, again.added) == (0, 0, CHATS, 0)
    assert _active(service) == passages


@pytest.mark.parametrize("kind", ["chatgpt", "claude"])
def test_a_conversation_continued_since_is_a_new_version_keeping_its_messages(
    service: MemoryService, tmp_path: Path, kind: str
) -> None:
    chats = generated_chats(5, 6)
    first = _import(service, tmp_path, kind, chats)
    grown = chats[2]
    last = grown.turns[-1].at
    assert last is not None
    grown.turns += [
        Turn("user", "One more question about the glacier.", last + timedelta(days=30)),
        Turn("assistant", "The glacier retreats each summer.", last + timedelta(30, 9)),
    ]

    summary = _import(service, tmp_path, kind, chats)

    assert (summary.imported, summary.updated, summary.unchanged) == (0, 1, 4)
    assert summary.added == 2
    assert summary.kept == first.added // 5
    document = service.list_documents(ADMIN)["documents"]
    current = next(d for d in document if d["source"] == f"{kind}:{grown.id}")
    assert current["version"] == 2
    _, records = service.document_passages(ADMIN, id=current["id"])
    assert records[-1].content == "Assistant: The glacier retreats each summer."
    assert records[-1].occurrence.at == last + timedelta(30, 9)
