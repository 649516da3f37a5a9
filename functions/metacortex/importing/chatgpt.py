"""ChatGPT's ``conversations.json`` (Settings > Data controls > Export data): a list of
conversations, each a tree of messages.

Read: ``conversation_id`` (or ``id``), ``title``, ``create_time``/``update_time`` (epoch
seconds), ``mapping`` (node id -> ``{message, parent, children}``) and ``current_node``, the
last message of the branch the conversation shows; that branch is followed through
``parent`` to the root and reversed (other branches, edits and regenerations left aside,
are not read). A message: ``author.role`` (``user``, ``assistant``; ``system`` and ``tool``
are skipped, and so are the assistant's calls to a tool: a ``recipient`` other than
``all``), ``create_time`` (epoch seconds, or null: then the conversation's own time),
``content`` of ``content_type`` ``text`` or ``multimodal_text`` with ``parts`` (strings are
read; other parts, image and file pointers, are skipped and counted); hidden messages
(``metadata.is_visually_hidden_from_conversation``) and other content types (code, browsing
results, reasoning, custom instructions) are skipped and counted.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

from metacortex.importing.conversation import (
    Conversation,
    Export,
    Message,
    Role,
    Skipped,
    message_of,
    read_list,
    title_of,
)
from metacortex.importing.limits import ImportLimits
from metacortex.importing.times import from_epoch

KIND: Final = "chatgpt"
TEXT_TYPES: Final = frozenset({"text", "multimodal_text"})
ROLES: Final = {"user": Role.USER, "assistant": Role.ASSISTANT}


def read_export(data: Any, limits: ImportLimits) -> Export:
    """Every conversation of a parsed ``conversations.json``."""
    return read_list(KIND, data, limits, _conversation)


def _conversation(raw: Any, limits: ImportLimits, skipped: Skipped) -> Conversation | None:
    if not isinstance(raw, dict):
        skipped.add("conversation", "not in the export's format")
        return None
    key = raw.get("conversation_id") or raw.get("id")
    mapping = raw.get("mapping")
    if not isinstance(key, str) or not key or not isinstance(mapping, dict):
        skipped.add("conversation", "no id or no messages (not in the export's format)")
        return None
    fallback = from_epoch(raw.get("create_time")) or from_epoch(raw.get("update_time"))
    branch = _branch(mapping, raw.get("current_node"))
    if branch is None:
        skipped.add("conversation", "its current message is not in it (not in the format)")
        return None
    if len(branch) > limits.max_messages:
        skipped.add("conversation", limits.messages_refusal(len(branch)))
        return None
    found = Skipped()
    messages = [
        message
        for node in branch
        if (message := _message(node.get("message"), fallback, found)) is not None
    ]
    if not messages:
        skipped.add("conversation", "no message with text")
        return None
    skipped.merge(found)
    return Conversation(f"{KIND}:{key}", title_of(raw.get("title")), tuple(messages))


def _branch(mapping: dict[str, Any], current: Any) -> list[dict[str, Any]] | None:
    """The nodes from the root to ``current``, in order (a cycle ends it)."""
    if not isinstance(current, str) or current not in mapping:
        return None
    path: list[dict[str, Any]] = []
    seen: set[str] = set()
    node_id: Any = current
    while isinstance(node_id, str) and node_id in mapping and node_id not in seen:
        seen.add(node_id)
        node = mapping[node_id]
        if not isinstance(node, dict):
            break
        path.append(node)
        node_id = node.get("parent")
    path.reverse()
    return path


def _message(raw: Any, fallback: datetime | None, skipped: Skipped) -> Message | None:
    if not isinstance(raw, dict):
        return None  # the root of the tree holds no message
    metadata = raw.get("metadata")
    if isinstance(metadata, dict) and metadata.get("is_visually_hidden_from_conversation"):
        skipped.add("message", "hidden from the conversation")
        return None
    author = raw.get("author")
    name = author.get("role") if isinstance(author, dict) else None
    role = ROLES.get(name) if isinstance(name, str) else None
    if role is None:
        skipped.add("message", "system or tool message")
        return None
    recipient = raw.get("recipient")
    if recipient not in (None, "all"):  # the assistant calling a tool (browser, memory)
        skipped.add("message", "addressed to a tool")
        return None
    content = raw.get("content")
    kind = content.get("content_type") if isinstance(content, dict) else None
    if kind not in TEXT_TYPES:
        skipped.add("message", f"content of type {str(kind)[:40]!r} (not text)")
        return None
    assert isinstance(content, dict)
    parts = content.get("parts")
    parts = parts if isinstance(parts, list) else []
    texts = [part.strip() for part in parts if isinstance(part, str) and part.strip()]
    skipped.add("part", "image or file (not read)", sum(not isinstance(p, str) for p in parts))
    return message_of(role, texts, from_epoch(raw.get("create_time")) or fallback, skipped)
