"""A conversation as an export holds it, read: its stable source, title, and messages in
order, each with its author's role and time; and what reading it left out, by reason."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Final

from metacortex.domain.limits import without_disallowed
from metacortex.importing.limits import ImportLimits, ImportRefused

UNTITLED: Final = "Untitled conversation"
MAX_TITLE_CHARS: Final = 300
# What each service's conversations hold that the other's do not: whose export it is.
MARKERS: Final = {"chatgpt": ("mapping", "ChatGPT"), "claude": ("chat_messages", "Claude")}


class Role(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"

    @property
    def label(self) -> str:
        return "User" if self is Role.USER else "Assistant"


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    text: str
    at: datetime  # aware, UTC

    @property
    def passage_text(self) -> str:
        """The message as a passage says it: ``User: …`` / ``Assistant: …``."""
        return f"{self.role.label}: {self.text}"


@dataclass(frozen=True, slots=True)
class Conversation:
    source: str  # "chatgpt:<id>", "claude:<uuid>": the same conversation re-imported
    title: str
    messages: tuple[Message, ...]


@dataclass
class Skipped:
    """What was left out, counted by kind and reason (``"message"``, ``"system or tool
    message"``) so the summary says it in one line each."""

    counts: Counter[tuple[str, str]] = field(default_factory=Counter)

    def add(self, kind: str, reason: str, count: int = 1) -> None:
        if count:
            self.counts[(kind, reason)] += count

    def merge(self, other: Skipped) -> None:
        self.counts.update(other.counts)


@dataclass(frozen=True, slots=True)
class Export:
    """An export read whole: its conversations and what was skipped reading them."""

    kind: str  # "chatgpt" / "claude"
    conversations: tuple[Conversation, ...]
    skipped: Skipped


def first_object(data: Any) -> dict[str, Any]:
    """The first conversation of a parsed ``conversations.json`` list (empty when there is
    none): what tells whose export it is."""
    if not isinstance(data, list):
        return {}
    return next((item for item in data if isinstance(item, dict)), {})


def title_of(value: Any) -> str:
    """A conversation's title as the export gives it, or ``UNTITLED``."""
    title = without_disallowed(value).strip() if isinstance(value, str) else ""
    return title[:MAX_TITLE_CHARS] if title else UNTITLED


def message_of(
    role: Role, texts: list[str], at: datetime | None, skipped: Skipped
) -> Message | None:
    """A message of ``texts`` (its parts) at ``at``, without the control characters and
    lone surrogates a stored text may not hold (pasted terminal output, a broken emoji);
    None, counted, when no text or no time is left."""
    text = "\n\n".join(p for p in (without_disallowed(t).strip() for t in texts) if p)
    if not text:
        skipped.add("message", "no text")
        return None
    if at is None:
        skipped.add("message", "no time, nor one for its conversation")
        return None
    return Message(role, text, at)


ReadOne = Callable[[Any, ImportLimits, Skipped], Conversation | None]


def read_list(kind: str, data: Any, limits: ImportLimits, read_one: ReadOne) -> Export:
    """Every conversation of a parsed ``conversations.json`` of ``kind``'s (a list), each
    read by ``read_one`` (None: skipped, counted there); refused whole when it is not a
    list of ``kind``'s conversations, or holds more than the limit."""
    marker, name = MARKERS[kind]
    first = first_object(data)
    if not isinstance(data, list) or (data and marker not in first):
        other = [label for key, label in MARKERS.values() if key in first and key != marker]
        hint = f" (it looks like a {other[0]} export)" if other else ""
        raise ImportRefused(
            f"this is not a {name} export's conversations.json{hint}: nothing was imported"
        )
    limits.check_conversations(len(data))
    skipped = Skipped()
    conversations: list[Conversation] = []
    seen: set[str] = set()
    for raw in data:
        conversation = read_one(raw, limits, skipped)
        if conversation is None:
            continue
        if conversation.source in seen:
            skipped.add("conversation", "listed twice in the export")
            continue
        seen.add(conversation.source)
        conversations.append(conversation)
    return Export(kind, tuple(conversations), skipped)
