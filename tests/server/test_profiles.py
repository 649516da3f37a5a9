"""Profile validation: every start-up error names the entry (index and id) and the field."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from metacortex.access.profiles import load_profiles, new_token, token_digest
from metacortex.config import Settings
from metacortex.domain.records import BranchState
from metacortex.errors import ConfigurationError
from metacortex.tool_catalogue import model_tools
from tests.server.surface_snapshot import tool_names

ADMIN_TOKEN = "admin-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6"
CLIENT_TOKEN = "client-" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4"


def settings(profiles: list[Any] | str | None = None, **overrides: Any) -> Settings:
    raw = profiles if isinstance(profiles, str) or profiles is None else json.dumps(profiles)
    values: dict[str, Any] = {"mcp_admin_token": ADMIN_TOKEN, "mcp_client_profiles_json": raw}
    values.update(overrides)
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


def entry(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"id": "web", "token": CLIENT_TOKEN, "allowedTools": ["search_context"]}
    base.update(fields)
    return {k: v for k, v in base.items() if v is not None}


def error_for(profiles: list[Any] | str, **overrides: Any) -> str:
    with pytest.raises(ConfigurationError) as caught:
        load_profiles(settings(profiles, **overrides))
    return str(caught.value)


def test_admin_profile_defaults_to_every_tool_and_state_and_no_browser_origin() -> None:
    profiles = load_profiles(settings())
    admin = profiles.admin
    assert admin.id == "default"
    # Every tool, but the credential's own: the admin token keeps no record a call changes.
    assert admin.allowed_tools == frozenset(model_tools())
    assert list(admin.tools) == tool_names("default")
    assert "set_default_space" in admin.allowed_tools
    assert "set_default_space" not in admin.tools
    assert admin.readable_states == frozenset(BranchState)
    assert admin.default_state is BranchState.ACTIVE
    assert admin.may_write_lifecycle
    assert admin.allowed_origins == frozenset()
    assert not admin.allow_url_token
    assert admin.token_sha256 == hashlib.sha256(ADMIN_TOKEN.encode()).digest()
    assert profiles.clients == {}


def test_admin_settings_narrow_tools_states_and_origins() -> None:
    admin = load_profiles(
        settings(
            mcp_allowed_tools="search_context,fetch_context",
            mcp_allowed_filter_states="wip,deprecated",
            mcp_allowed_origins="https://claude.ai",
        )
    ).admin
    assert admin.tools == ("search_context", "fetch_context")
    assert admin.readable_states == {BranchState.WIP, BranchState.DEPRECATED}
    assert admin.default_state is BranchState.WIP  # active is not readable: first readable state
    assert admin.allowed_origins == {"https://claude.ai"}


def test_no_admin_token_leaves_the_admin_endpoint_without_any_valid_credential() -> None:
    assert load_profiles(settings(mcp_admin_token=None)).admin.token_sha256 is None


def test_a_weak_admin_token_is_refused_naming_the_setting() -> None:
    with pytest.raises(ConfigurationError, match=r"^MCP_ADMIN_TOKEN is 5 characters"):
        load_profiles(settings(mcp_admin_token="short"))


def test_unknown_admin_tool_and_state_are_refused_naming_the_setting() -> None:
    with pytest.raises(ConfigurationError, match="MCP_ALLOWED_TOOLS: unknown tool 'delete_all'"):
        load_profiles(settings(mcp_allowed_tools="search_context,delete_all"))
    with pytest.raises(ConfigurationError, match="MCP_ALLOWED_FILTER_STATES: unknown state 'x'"):
        load_profiles(settings(mcp_allowed_filter_states="active,x"))


def test_an_admin_origin_with_a_path_is_refused() -> None:
    with pytest.raises(ConfigurationError, match=r"MCP_ALLOWED_ORIGINS entry 'https://a\.b/'"):
        load_profiles(settings(mcp_allowed_origins="https://a.b/"))


def test_a_client_profile_is_built_from_its_json_entry() -> None:
    digest = hashlib.sha256(b"some other token").hexdigest()
    profiles = load_profiles(
        settings(
            [
                entry(
                    allowedTools=["search_context", "fetch_context", "save_context"],
                    allowedFilterStates=["active", "wip"],
                    defaultFilterState="wip",
                    allowedOrigins=["https://chatgpt.com"],
                    allowUrlToken=True,
                    rateLimitPerMinute=60,
                ),
                entry(id="agent_2", token=None, token_sha256=digest, mayWriteLifecycle=True),
            ]
        )
    )
    web = profiles.get("web")
    assert web is not None
    assert web.tools == ("save_context", "search_context", "fetch_context")
    assert web.readable_states == {BranchState.ACTIVE, BranchState.WIP}
    assert web.default_state is BranchState.WIP
    assert web.allowed_origins == {"https://chatgpt.com"}
    assert web.allow_url_token
    assert web.rate_limit_per_minute == 60
    assert not web.may_write_lifecycle
    assert web.token_sha256 == token_digest(CLIENT_TOKEN)
    agent = profiles.get("agent_2")
    assert agent is not None
    assert agent.token_sha256 == bytes.fromhex(digest)
    assert agent.may_write_lifecycle
    assert agent.readable_states == {BranchState.ACTIVE}  # omitted: only the default state
    assert agent.rate_limit_per_minute == settings().metacortex_rate_limit_per_minute
    assert profiles.get("nobody") is None
    assert profiles.get(None) is profiles.admin


@pytest.mark.parametrize(
    ("profiles", "expected"),
    [
        ("[", "MCP_CLIENT_PROFILES_JSON is not valid JSON"),
        ('{"id": "web"}', "must be a JSON array of profile objects"),
        (["web"], r"MCP_CLIENT_PROFILES_JSON\[0\]: must be a JSON object"),
        ([entry(id=None)], r"MCP_CLIENT_PROFILES_JSON\[0\]: id is required"),
        ([entry(id="default")], r"\[0\] \(id 'default'\): id 'default' is reserved"),
        ([entry(id="a/b")], r"\[0\] \(id 'a/b'\): id must be 1-64 letters"),
        ([entry(), entry(token=new_token())], r"\[1\] \(id 'web'\): id is used by an earlier"),
        ([entry(allowedTools=[])], r"\[0\] \(id 'web'\): allowedTools must not be empty"),
        ([entry(allowedTools="save_context")], r"\(id 'web'\): allowedTools must be a list"),
        ([entry(allowedTools=["rm"])], r"\[0\] \(id 'web'\): allowedTools: unknown tool 'rm'"),
        ([entry(allowedFilterStates=["gone"])], r"allowedFilterStates: unknown state 'gone'"),
        ([entry(allowedFilterStates=[])], r"\(id 'web'\): allowedFilterStates must not be empty"),
        ([entry(defaultFilterState="wip")], r"defaultFilterState 'wip' is not one of allowed"),
        ([entry(token=None)], r"\[0\] \(id 'web'\): token or token_sha256 is required"),
        ([entry(token="short")], r"\[0\] \(id 'web'\): token is 5 characters"),
        ([entry(token="ab" * 20)], r"\(id 'web'\): token uses only 2 distinct characters"),
        ([entry(token=CLIENT_TOKEN + " x")], r"token contains spaces"),
        (
            [entry(token=None, token_sha256="abc")],
            r"\(id 'web'\): token_sha256 must be 64 hexadecimal",
        ),
        ([entry(token_sha256="a" * 64)], r"\(id 'web'\): give token or token_sha256, not both"),
        ([entry(token=ADMIN_TOKEN)], r"\(id 'web'\): token is already used by the admin"),
        ([entry(), entry(id="b")], r"\[1\] \(id 'b'\): token is already used by .*\[0\]"),
        ([entry(allowedOrigins=["*"])], r"\(id 'web'\): allowedOrigins entry '\*' is not an"),
        ([entry(allowUrlToken="yes")], r"\(id 'web'\): allowUrlToken must be true or false"),
        ([entry(mayWriteLifecycle=1)], r"\(id 'web'\): mayWriteLifecycle must be true or"),
        ([entry(rateLimitPerMinute=0)], r"\(id 'web'\): rateLimitPerMinute must be between"),
        ([entry(rateLimitPerMinute="9")], r"\(id 'web'\): rateLimitPerMinute must be a whole"),
        ([entry(allowedTool=["x"])], r"\(id 'web'\): unknown field 'allowedTool'"),
    ],
)
def test_invalid_client_profiles_are_refused_naming_entry_and_field(
    profiles: list[Any] | str, expected: str
) -> None:
    with pytest.raises(ConfigurationError, match=expected):
        load_profiles(settings(profiles))


def test_generated_tokens_are_strong_and_distinct() -> None:
    tokens = {new_token() for _ in range(20)}
    assert len(tokens) == 20
    profiles = [entry(id=f"c{i}", token=token) for i, token in enumerate(tokens)]
    assert len(load_profiles(settings(profiles)).clients) == 20
