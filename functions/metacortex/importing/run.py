"""The import run: an export's conversations become documents, each written whole or not
at all (``Documents.create_timed_document``), and a summary of what was imported, what
was already there, and what was skipped or refused and why.

A conversation is a document of ``source`` ``chatgpt:<id>`` / ``claude:<uuid>``, titled as
the conversation; each message is a passage (several for a long one) reading ``User: …``
or ``Assistant: …`` that happened when the message was written. The same export again
adds nothing (its conversations' text is stored already); a conversation continued since
is a new version that keeps the passages of the messages it had."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Final

from metacortex.documents.timed import TimedPiece
from metacortex.errors import DocumentRefused, InvalidArgument
from metacortex.importing import chatgpt, claude
from metacortex.importing.archive import read_conversations, read_conversations_from
from metacortex.importing.conversation import Conversation, Export, Skipped, first_object
from metacortex.importing.limits import ImportLimits, ImportRefused

if TYPE_CHECKING:
    from metacortex.access.rules import Access
    from metacortex.cancellation import Cancellation
    from metacortex.service import MemoryService

KINDS: Final = ("chatgpt", "claude")
_READERS: Final[dict[str, Callable[[Any, ImportLimits], Export]]] = {
    chatgpt.KIND: chatgpt.read_export,
    claude.KIND: claude.read_export,
}


def read_export(path: Path, kind: str, limits: ImportLimits) -> Export:
    """The conversations of the export at ``path`` (``ImportRefused`` for an archive
    refused whole: nothing is written before this returns)."""
    return _READERS[kind](read_conversations(path, limits), limits)


def read_upload(file: IO[bytes], name: str, kind: str | None, limits: ImportLimits) -> Export:
    """The conversations of an export given as a seekable file (the console's upload);
    ``kind`` None: whose export it is, told by its content."""
    data = read_conversations_from(file, name, limits)
    return _READERS[kind or detect(data)](data, limits)


def detect(data: Any) -> str:
    """Whose ``conversations.json`` this is: ChatGPT's conversations hold a ``mapping``,
    Claude's ``chat_messages``."""
    first = first_object(data)
    if "mapping" in first:
        return chatgpt.KIND
    if "chat_messages" in first:
        return claude.KIND
    raise ImportRefused(
        "this is neither a ChatGPT nor a Claude export's conversations.json (or it holds no "
        "conversation): nothing was imported"
    )


@dataclass
class ImportSummary:
    imported: int = 0
    updated: int = 0
    unchanged: int = 0
    messages: int = 0
    added: int = 0  # passages embedded and written
    kept: int = 0  # passages of an earlier version kept
    refused: list[tuple[str, str]] = field(default_factory=list)
    skipped: Skipped = field(default_factory=Skipped)

    def counts(self) -> dict[str, int]:
        return {
            "imported": self.imported,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "refused": len(self.refused),
            "messages": self.messages,
            "passages_added": self.added,
        }

    def lines(self) -> list[str]:
        """One line per kind of outcome, the counts first."""
        lines = [
            f"imported: {self.imported:,} conversations as new documents "
            f"({self.messages:,} messages, {self.added:,} passages added)",
            f"updated: {self.updated:,} conversations continued since they were imported "
            f"(new versions; {self.kept:,} passages kept)",
            f"unchanged: {self.unchanged:,} conversations already imported",
        ]
        for (kind, reason), count in sorted(self.skipped.counts.items()):
            plural = kind if count == 1 else f"{kind}s"
            lines.append(f"skipped: {count:,} {plural}: {reason}")
        lines += [f"refused: {title!r}: {reason}" for title, reason in self.refused]
        return lines


def import_export(
    service: MemoryService,
    access: Access,
    export: Export,
    *,
    space: str | None = None,
    topic: str | None = None,
    advance: Callable[[int], None] | None = None,
    cancellation: Cancellation | None = None,
) -> ImportSummary:
    """Add every conversation of ``export``; ``advance`` is told the messages done."""
    summary = ImportSummary()
    summary.skipped.merge(export.skipped)
    for conversation in export.conversations:
        if cancellation is not None:
            cancellation.check()
        _one(service, access, conversation, space, topic, summary, cancellation)
        if advance is not None:
            advance(len(conversation.messages))
    return summary


def _one(
    service: MemoryService,
    access: Access,
    conversation: Conversation,
    space: str | None,
    topic: str | None,
    summary: ImportSummary,
    cancellation: Cancellation | None,
) -> None:
    try:
        result = service.create_timed_document(
            access,
            pieces=[TimedPiece(m.passage_text, m.at) for m in conversation.messages],
            title=conversation.title,
            source=conversation.source,
            topic=topic,
            space=space,
            cancellation=cancellation,
        )
    except DocumentRefused as refused:
        summary.refused.append((conversation.title, f"{refused.reason}: {refused.message}"))
        return
    except InvalidArgument as invalid:
        summary.refused.append((conversation.title, invalid.message))
        return
    status = result["write_status"]
    passages = result["passages"]
    if status == "duplicate":
        summary.unchanged += 1
        return
    if status == "replaced":
        summary.updated += 1
    else:
        summary.imported += 1
        summary.messages += len(conversation.messages)
    summary.added += passages["added"]
    summary.kept += passages["kept"]
