"""``chatgptDataTools`` on a static client profile: validated, and it adds search/fetch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metacortex.access.profiles import load_profiles
from metacortex.errors import ConfigurationError
from metacortex.mcp_surface.tools import tool_definitions
from tests.server.conftest import make_settings

TOKEN = "chatgpt-" + "P0o9I8u7Y6t5R4e3W2q1A2s3D4f5G6h7"


def _profiles(tmp_path: Path, **extra: object) -> str:
    entry = {"id": "chatgpt", "token": TOKEN, "allowedTools": ["search_context"], **extra}
    return json.dumps([entry])


def test_the_option_adds_only_the_shapes_whose_regular_tool_is_allowed(tmp_path: Path) -> None:
    settings = make_settings(
        tmp_path, mcp_client_profiles_json=_profiles(tmp_path, chatgptDataTools=True)
    )
    profile = load_profiles(settings).clients["chatgpt"]

    assert [tool.name for tool in tool_definitions(profile)] == ["search_context", "search"]


def test_the_option_must_be_a_boolean(tmp_path: Path) -> None:
    settings = make_settings(
        tmp_path, mcp_client_profiles_json=_profiles(tmp_path, chatgptDataTools="yes")
    )
    with pytest.raises(ConfigurationError, match="chatgptDataTools must be true or false"):
        load_profiles(settings)
