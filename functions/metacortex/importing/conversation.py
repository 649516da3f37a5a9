"""A conversation as an export holds it, read: its stable source, title, and messages in
order, each with its author's role and time; and what reading it left out, by reason."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Final

UNTITLED: Final = "Untitled conversation"


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
