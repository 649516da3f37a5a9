"""ChatGPT and Claude data exports made the way the services write them, for tests and the
bench.

The shapes follow the formats as the services' exports hold them and as public converters
read them (docs/importing.md names the versions): ChatGPT's ``conversations.json`` is a list
of conversations whose ``mapping`` is a tree of nodes (``message``, ``parent``,
``children``) with a root node without a message, a hidden system message, edited branches
left aside and ``current_node`` at the shown branch's last message; times are epoch
seconds, some null; a ``multimodal_text`` message holds an image asset pointer beside its
text. Claude's is a list of conversations with ``chat_messages`` (``sender``
``human``/``assistant``, ISO times, ``text`` and ``content`` parts, ``attachments`` with
``extracted_content``, ``files``). Both go into a zip with the other files an export has.
"""

from __future__ import annotations

import io
import json
import random
import uuid
import zipfile
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Final

START: Final = datetime(2023, 3, 1, 9, 0, tzinfo=UTC)
WORDS: Final = (
    "garden river budget invoice kernel sourdough violin harbour glacier lantern "
    "compiler orchard ledger meadow piano tractor satellite canyon recipe migration "
    "tomato bicycle theorem vaccine museum pottery saddle volcano archive quartz"
).split()


@dataclass(frozen=True, slots=True)
class Turn:
    role: str  # "user" / "assistant"
    text: str
    at: datetime | None  # None: the export has no time for it


@dataclass
class Chat:
    id: str
    title: str
    created: datetime
    turns: list[Turn] = field(default_factory=list)


def sentence(rng: random.Random, words: int = 12) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def generated_chats(count: int, turns: int, seed: int = 7) -> list[Chat]:
    """``count`` conversations of ``turns`` messages each, a day apart, messages a minute
    apart, alternating user and assistant, in words drawn from ``WORDS``."""
    rng = random.Random(seed)
    chats = []
    for number in range(count):
        created = START + timedelta(days=number)
        chat = Chat(str(uuid.UUID(int=rng.getrandbits(128))), f"Chat {number}", created)
        for index in range(turns):
            role = "user" if index % 2 == 0 else "assistant"
            text = " ".join(sentence(rng) for _ in range(1 if role == "user" else 3))
            chat.turns.append(Turn(role, text, created + timedelta(minutes=index)))
        chats.append(chat)
    return chats


def _epoch(at: datetime | None) -> float | None:
    return None if at is None else at.timestamp()


def _node(
    node_id: str, message: dict[str, Any] | None, parent: str | None, children: list[str]
) -> dict[str, Any]:
    return {"id": node_id, "message": message, "parent": parent, "children": children}


def _chatgpt_message(
    node_id: str, role: str, content: dict[str, Any], at: datetime | None, **metadata: Any
) -> dict[str, Any]:
    return {
        "id": node_id,
        "author": {"role": role, "name": None, "metadata": {}},
        "create_time": _epoch(at),
        "update_time": None,
        "content": content,
        "status": "finished_successfully",
        "end_turn": True if role == "assistant" else None,
        "weight": 0.0 if metadata.get("is_visually_hidden_from_conversation") else 1.0,
        "metadata": metadata,
        "recipient": "all",
    }


def chatgpt_conversation(chat: Chat, *, abandoned_branch: bool = True) -> dict[str, Any]:
    """One conversation as ChatGPT exports it: a root without message, a hidden system
    message, then the turns; the first user turn has an edited-away sibling branch."""
    mapping: dict[str, dict[str, Any]] = {}
    root = f"{chat.id}-root"
    system = f"{chat.id}-system"
    mapping[root] = _node(root, None, None, [system])
    mapping[system] = _node(
        system,
        _chatgpt_message(
            system,
            "system",
            {"content_type": "text", "parts": [""]},
            None,
            is_visually_hidden_from_conversation=True,
        ),
        root,
        [],
    )
    parent = system
    for index, turn in enumerate(chat.turns):
        node_id = f"{chat.id}-{index}"
        content: dict[str, Any] = {"content_type": "text", "parts": [turn.text]}
        if turn.role == "user" and index == 2:  # a picture sent with the text
            content = {
                "content_type": "multimodal_text",
                "parts": [
                    {
                        "content_type": "image_asset_pointer",
                        "asset_pointer": f"file-service://file-{index}",
                        "size_bytes": 1000,
                        "width": 100,
                        "height": 100,
                    },
                    turn.text,
                ],
            }
        mapping[node_id] = _node(
            node_id,
            _chatgpt_message(node_id, turn.role, content, turn.at, model_slug="gpt-4o"),
            parent,
            [],
        )
        mapping[parent]["children"].append(node_id)
        if index == 0 and abandoned_branch:  # the first question, edited: not shown
            other = f"{chat.id}-edited"
            mapping[other] = _node(
                other,
                _chatgpt_message(
                    other,
                    "user",
                    {"content_type": "text", "parts": ["An abandoned draft of the question."]},
                    chat.created,
                ),
                parent,
                [],
            )
            mapping[parent]["children"].append(other)
        parent = node_id
    last = chat.turns[-1].at or chat.created
    return {
        "title": chat.title,
        "create_time": chat.created.timestamp(),
        "update_time": last.timestamp(),
        "mapping": mapping,
        "moderation_results": [],
        "current_node": parent,
        "plugin_ids": None,
        "conversation_id": chat.id,
        "conversation_template_id": None,
        "gizmo_id": None,
        "is_archived": False,
        "safe_urls": [],
        "default_model_slug": "gpt-4o",
        "id": chat.id,
    }


def _iso(at: datetime | None) -> str | None:
    return None if at is None else at.isoformat(timespec="microseconds").replace("+00:00", "Z")


def claude_conversation(chat: Chat) -> dict[str, Any]:
    """One conversation as Claude exports it; the second message carries an attachment
    with its extracted text and a file."""
    messages = []
    for index, turn in enumerate(chat.turns):
        content: list[dict[str, Any]] = [
            {
                "start_timestamp": _iso(turn.at),
                "stop_timestamp": _iso(turn.at),
                "type": "text",
                "text": turn.text,
                "citations": [],
            }
        ]
        attachments: list[dict[str, Any]] = []
        files: list[dict[str, Any]] = []
        if index == 1 and turn.role == "assistant":
            content.insert(0, {"type": "tool_use", "name": "web_search", "input": {"query": "x"}})
        if index == 2:
            attachments.append(
                {
                    "file_name": "notes.txt",
                    "file_size": 40,
                    "file_type": "txt",
                    "extracted_content": "The attached notes mention the quarry at Elderwick.",
                }
            )
            files.append({"file_name": "photo.png"})
        messages.append(
            {
                "uuid": f"{chat.id}-{index}",
                "text": turn.text,
                "content": content,
                "sender": "human" if turn.role == "user" else "assistant",
                "created_at": _iso(turn.at),
                "updated_at": _iso(turn.at),
                "attachments": attachments,
                "files": files,
            }
        )
    return {
        "uuid": chat.id,
        "name": chat.title,
        "created_at": _iso(chat.created),
        "updated_at": _iso(chat.turns[-1].at if chat.turns else chat.created),
        "account": {"uuid": "7d3f1e0a-0000-4000-8000-000000000001"},
        "chat_messages": messages,
    }


def zipped(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def chatgpt_export(chats: list[Chat]) -> bytes:
    conversations = [chatgpt_conversation(chat) for chat in chats]
    return zipped(
        {
            "conversations.json": json.dumps(conversations).encode(),
            "chat.html": b"<html><body>the same conversations</body></html>",
            "user.json": b'{"id": "user-1", "email": "ann@example.com"}',
            "message_feedback.json": b"[]",
            "file-0-photo.png": b"\x89PNG\r\n\x1a\n",
        }
    )


def claude_export(chats: list[Chat]) -> bytes:
    conversations = [claude_conversation(chat) for chat in chats]
    return zipped(
        {
            "conversations.json": json.dumps(conversations).encode(),
            "users.json": b'[{"uuid": "u-1", "full_name": "Ann"}]',
            "projects.json": b"[]",
        }
    )
