"""Editing JSON with comments through json-five's round-trip model: what ``init`` relies
on beyond setting one member (golden files in ``test_init.py``)."""

from __future__ import annotations

import pytest

from metacortex.appconfig.errors import Malformed
from metacortex.appconfig.jsonfile import load, upsert_item

TOKEN_INPUT = {"type": "promptString", "id": "metacortex_token", "password": True}


def test_an_array_item_is_appended_once_then_replaced_in_place_keeping_comments() -> None:
    text = (
        '{\n  // mine\n  "inputs": [\n'
        '    {"type": "promptString", "id": "other"}, // keep\n  ],\n}\n'
    )

    once = upsert_item(text, ["inputs"], "id", TOKEN_INPUT, where="mcp.json")
    twice = upsert_item(once, ["inputs"], "id", {**TOKEN_INPUT, "password": False}, where="x")

    assert "// mine" in once
    assert "// keep" in once
    assert [item["id"] for item in load(once, comments=True, where="x")["inputs"]] == [
        "other",
        "metacortex_token",
    ]
    assert load(twice, comments=True, where="x")["inputs"][1]["password"] is False
    assert len(load(twice, comments=True, where="x")["inputs"]) == 2


def test_a_missing_array_is_created_and_a_non_array_is_refused() -> None:
    created = upsert_item('{"servers": {}}', ["inputs"], "id", TOKEN_INPUT, where="x")
    assert load(created, comments=True, where="x")["inputs"] == [TOKEN_INPUT]
    with pytest.raises(Malformed, match="inputs is not an array"):
        upsert_item('{"inputs": {}}', ["inputs"], "id", TOKEN_INPUT, where="x")
