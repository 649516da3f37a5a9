"""Claude's ``conversations.json`` (Settings > Privacy > Export data): a list of
conversations, each with its messages in order.

Read: ``uuid``, ``name`` (the title), ``created_at``/``updated_at`` (ISO 8601) and
``chat_messages``; a message's ``sender`` (``human``, read as the user, or ``assistant``),
``created_at`` (ISO 8601; without it, the conversation's), its text (the ``text`` parts
of ``content``, else its ``text``) and the text the service extracted from its
``attachments`` (``extracted_content``, after the attachment's ``file_name``). Other
content parts (tool use and results, thinking) and ``files`` (whose bytes are not in the
export) are skipped and counted.
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
from metacortex.importing.times import from_iso

KIND: Final = "claude"
SENDERS: Final = {"human": Role.USER, "user": Role.USER, "assistant": Role.ASSISTANT}


def read_export(data: Any, limits: ImportLimits) -> Export:
    """Every conversation of a parsed ``conversations.json``."""
    return read_list(KIND, data, limits, _conversation)


def _conversation(raw: Any, limits: ImportLimits, skipped: Skipped) -> Conversation | None:
    if not isinstance(raw, dict):
        skipped.add("conversation", "not in the export's format")
        return None
    key = raw.get("uuid")
    chat = raw.get("chat_messages")
    if not isinstance(key, str) or not key or not isinstance(chat, list):
        skipped.add("conversation", "no id or no messages (not in the export's format)")
        return None
    if len(chat) > limits.max_messages:
        skipped.add("conversation", limits.messages_refusal(len(chat)))
        return None
    fallback = from_iso(raw.get("created_at")) or from_iso(raw.get("updated_at"))
    found = Skipped()
    messages = [
        message for item in chat if (message := _message(item, fallback, found)) is not None
    ]
    if not messages:
        skipped.add("conversation", "no message with text")
        return None
    skipped.merge(found)
    return Conversation(f"{KIND}:{key}", title_of(raw.get("name")), tuple(messages))


def _message(raw: Any, fallback: datetime | None, skipped: Skipped) -> Message | None:
    if not isinstance(raw, dict):
        skipped.add("message", "not in the export's format")
        return None
    sender = raw.get("sender")
    role = SENDERS.get(sender) if isinstance(sender, str) else None
    if role is None:
        skipped.add("message", "neither the user's nor the assistant's")
        return None
    texts = _content_texts(raw.get("content"), skipped)
    if not texts and isinstance(raw.get("text"), str) and raw["text"].strip():
        texts = [raw["text"].strip()]
    texts += _attachments(raw.get("attachments"), skipped)
    files = raw.get("files")
    skipped.add(
        "file", "its bytes are not in the export", len(files) if isinstance(files, list) else 0
    )
    return message_of(role, texts, from_iso(raw.get("created_at")) or fallback, skipped)


def _content_texts(content: Any, skipped: Skipped) -> list[str]:
    if not isinstance(content, list):
        return []
    texts: list[str] = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            text = part.get("text")
            if isinstance(text, str) and text.strip():
                texts.append(text.strip())
        else:
            skipped.add("content part", f"of type {str(kind)[:40]!r} (not text)")
    return texts


def _attachments(attachments: Any, skipped: Skipped) -> list[str]:
    if not isinstance(attachments, list):
        return []
    texts: list[str] = []
    for attachment in attachments:
        if not isinstance(attachment, dict):
            continue
        content = attachment.get("extracted_content")
        if not isinstance(content, str) or not content.strip():
            skipped.add("attachment", "no extracted text")
            continue
        name = attachment.get("file_name")
        label = name.strip()[:200] if isinstance(name, str) and name.strip() else "attachment"
        texts.append(f"[{label}]\n{content.strip()}")
    return texts
