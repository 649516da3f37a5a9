"""Reading the exports' ``conversations.json`` as ChatGPT and Claude write them
(``tests/importing/exports.py`` builds them from the documented formats)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from metacortex.importing import chatgpt, claude
from metacortex.importing.conversation import Role
from metacortex.importing.limits import ImportLimits, ImportRefused
from metacortex.importing.run import read_export
from tests.importing.exports import (
    START,
    Chat,
    Turn,
    chatgpt_conversation,
    chatgpt_export,
    claude_conversation,
    claude_export,
    generated_chats,
)

LIMITS = ImportLimits()


def _chat(turns: list[Turn]) -> Chat:
    return Chat("c0ffee00-0000-4000-8000-000000000001", "Planning the orchard", START, turns)


def test_chatgpt_follows_the_shown_branch_in_order_with_each_message_s_time() -> None:
    chat = _chat(
        [
            Turn("user", "Which apple trees suit clay soil?", START + timedelta(minutes=1)),
            Turn("assistant", "Bramley and Discovery do well.", START + timedelta(minutes=2)),
            Turn("user", "And pears?", START + timedelta(minutes=3)),
        ]
    )
    export = chatgpt.read_export([chatgpt_conversation(chat)], LIMITS)

    (conversation,) = export.conversations
    assert conversation.source == f"chatgpt:{chat.id}"
    assert conversation.title == "Planning the orchard"
    assert [(m.role, m.text, m.at) for m in conversation.messages] == [
        (Role.USER, "Which apple trees suit clay soil?", START + timedelta(minutes=1)),
        (Role.ASSISTANT, "Bramley and Discovery do well.", START + timedelta(minutes=2)),
        (Role.USER, "And pears?", START + timedelta(minutes=3)),
    ]
    assert conversation.messages[0].passage_text == "User: Which apple trees suit clay soil?"
    counts = export.skipped.counts
    assert counts[("message", "hidden from the conversation")] == 1  # the system prompt
    assert counts[("part", "image or file (not read)")] == 1
    # the edited-away first question is on another branch: never read, never counted
    assert all("abandoned" not in m.text for m in conversation.messages)


def test_chatgpt_a_message_without_time_takes_its_conversation_s() -> None:
    chat = _chat([Turn("user", "Hello", None), Turn("assistant", "Hi", START + timedelta(1))])
    (conversation,) = chatgpt.read_export([chatgpt_conversation(chat)], LIMITS).conversations
    assert [m.at for m in conversation.messages] == [START, START + timedelta(1)]


def test_chatgpt_tool_messages_and_other_content_types_are_skipped_and_counted() -> None:
    turns = [Turn("user", "Run it", START), Turn("assistant", "Done", START)]
    chat = _chat([*turns, Turn("user", "Thanks", START)])
    raw = chatgpt_conversation(chat)
    tool = raw["mapping"][f"{chat.id}-1"]["message"]
    tool["author"]["role"] = "tool"
    code = raw["mapping"][f"{chat.id}-0"]["message"]
    code["content"] = {"content_type": "code", "language": "python", "text": "print(1)"}
    export = chatgpt.read_export([raw], LIMITS)
    assert [m.text for m in export.conversations[0].messages] == ["Thanks"]
    assert export.skipped.counts == {
        ("message", "system or tool message"): 1,
        ("message", "content of type 'code' (not text)"): 1,
        ("message", "hidden from the conversation"): 1,
        ("part", "image or file (not read)"): 1,  # sent with "Thanks"
    }

    only_tools = _chat(turns)
    raw = chatgpt_conversation(only_tools)
    raw["mapping"][f"{only_tools.id}-1"]["message"]["author"]["role"] = "tool"
    raw["mapping"][f"{only_tools.id}-0"]["message"]["author"]["role"] = "tool"
    export = chatgpt.read_export([raw], LIMITS)
    assert export.conversations == ()
    assert export.skipped.counts == {("conversation", "no message with text"): 1}


def test_chatgpt_a_cycle_in_the_tree_ends_the_branch_instead_of_looping() -> None:
    chat = _chat([Turn("user", "Loop?", START), Turn("assistant", "No.", START)])
    raw = chatgpt_conversation(chat, abandoned_branch=False)
    raw["mapping"][f"{chat.id}-root"]["parent"] = f"{chat.id}-1"  # root points at the leaf
    (conversation,) = chatgpt.read_export([raw], LIMITS).conversations
    assert [m.text for m in conversation.messages] == ["Loop?", "No."]


def test_claude_human_is_the_user_with_attachments_text_and_iso_times() -> None:
    chat = _chat(
        [
            Turn("user", "Summarise the survey", START + timedelta(seconds=1)),
            Turn("assistant", "It found three sites.", START + timedelta(seconds=2)),
            Turn("user", "See my notes", START + timedelta(seconds=3)),
        ]
    )
    export = claude.read_export([claude_conversation(chat)], LIMITS)

    (conversation,) = export.conversations
    assert conversation.source == f"claude:{chat.id}"
    roles = [m.role for m in conversation.messages]
    assert roles == [Role.USER, Role.ASSISTANT, Role.USER]
    assert conversation.messages[1].at == START + timedelta(seconds=2)
    assert conversation.messages[2].text == (
        "See my notes\n\n[notes.txt]\nThe attached notes mention the quarry at Elderwick."
    )
    counts = export.skipped.counts
    assert counts[("content part", "of type 'tool_use' (not text)")] == 1
    assert counts[("file", "its bytes are not in the export")] == 1


def test_claude_a_message_without_content_parts_is_read_from_its_text() -> None:
    raw = claude_conversation(_chat([Turn("user", "Plain old message", START)]))
    raw["chat_messages"][0]["content"] = []
    raw["chat_messages"][0]["created_at"] = "2024-05-06T07:08:09+02:00"
    (conversation,) = claude.read_export([raw], LIMITS).conversations
    (message,) = conversation.messages
    assert (message.text, message.at) == (
        "Plain old message",
        datetime(2024, 5, 6, 5, 8, 9, tzinfo=UTC),
    )


def test_an_export_given_as_the_other_service_s_is_refused_saying_whose_it_looks() -> None:
    chats = generated_chats(2, 4)
    with pytest.raises(ImportRefused, match="looks like a Claude export"):
        chatgpt.read_export([claude_conversation(c) for c in chats], LIMITS)
    with pytest.raises(ImportRefused, match="looks like a ChatGPT export"):
        claude.read_export([chatgpt_conversation(c) for c in chats], LIMITS)


def test_a_conversation_over_the_message_limit_is_skipped_naming_the_setting() -> None:
    long, short = generated_chats(2, 6)
    long.turns += long.turns
    export = chatgpt.read_export(
        [chatgpt_conversation(long), chatgpt_conversation(short)], ImportLimits(max_messages=10)
    )
    assert [c.source for c in export.conversations] == [f"chatgpt:{short.id}"]
    assert (
        export.skipped.counts[
            ("conversation", "more than 10 messages (METACORTEX_IMPORT_MAX_MESSAGES)")
        ]
        == 1
    )


def test_the_zip_and_its_bare_conversations_json_read_the_same(tmp_path: Path) -> None:
    chats = generated_chats(3, 4)
    archive = tmp_path / "export.zip"
    archive.write_bytes(claude_export(chats))
    bare = tmp_path / "conversations.json"
    bare.write_text(json.dumps([claude_conversation(c) for c in chats]))
    assert read_export(archive, "claude", LIMITS) == read_export(bare, "claude", LIMITS)
    (tmp_path / "chatgpt.zip").write_bytes(chatgpt_export(chats))
    assert len(read_export(tmp_path / "chatgpt.zip", "chatgpt", LIMITS).conversations) == 3


def test_control_characters_and_lone_surrogates_are_left_out_not_refused(tmp_path: Path) -> None:
    """Pasted terminal output (ANSI escapes) and a broken emoji (a lone surrogate escaped
    in the JSON) are in real conversations; a stored text may hold neither."""
    chat = _chat(
        [Turn("user", "ls says \x1b[31mred\x1b[0m", START), Turn("assistant", "ok", START)]
    )
    raw = claude_conversation(chat)
    raw["name"] = "Colours \x07"
    text = json.dumps([raw]).replace("ok", "ok \\ud83d")  # a lone high surrogate
    path = tmp_path / "conversations.json"
    path.write_text(text)
    (conversation,) = read_export(path, "claude", LIMITS).conversations
    assert conversation.title == "Colours"
    assert [m.text for m in conversation.messages] == ["ls says [31mred[0m", "ok"]


def test_chatgpt_the_assistant_s_calls_to_a_tool_are_skipped() -> None:
    chat = _chat([Turn("user", "Remember I like tea", START), Turn("assistant", "Noted", START)])
    raw = chatgpt_conversation(chat)
    call = raw["mapping"][f"{chat.id}-1"]["message"]
    call["recipient"] = "bio"  # the memory tool, in a text message
    export = chatgpt.read_export([raw], LIMITS)
    assert [m.text for m in export.conversations[0].messages] == ["Remember I like tea"]
    assert export.skipped.counts[("message", "addressed to a tool")] == 1
