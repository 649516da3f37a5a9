"""The ready-to-paste connections (``metacortex.clients.snippets``): one renderer for
``metacortex client snippets`` and ``client add``, the console and ``metacortex init``.

Formats as each vendor documents them (sources in the module). Codex's and Claude
Code's own command-line programs read them in ``tests/server/test_snippets_real_clients.py``;
Cursor's and VS Code's are checked here against our reading of their documentation.
"""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from pathlib import Path

import pytest

from metacortex.access.profiles import load_profiles
from metacortex.cli.banner import banner
from metacortex.clients import Endpoint, client_endpoint, render, snippet, token_variable_for
from metacortex.clients.snippets import APPS
from metacortex.config import Settings

URL = "https://memory.example.com/clients/laptop-codex/mcp"
VARIABLE = "METACORTEX_TOKEN_LAPTOP_CODEX"


def _by_key(endpoint: Endpoint) -> dict[str, str]:
    return {snippet.key: snippet.text for snippet in render(endpoint)}


def test_every_application_gets_a_snippet_in_a_fixed_order() -> None:
    snippets = render(Endpoint(URL, token_variable=VARIABLE))

    assert [s.key for s in snippets] == list(APPS)
    assert [s.app for s in snippets] == [
        "ChatGPT",
        "Claude",
        "Claude Code",
        "Codex",
        "Cursor",
        "VS Code",
    ]
    assert all(s.note for s in snippets)


def test_a_token_variable_is_named_after_the_client() -> None:
    assert token_variable_for("laptop-codex") == VARIABLE
    assert token_variable_for("a.b_c") == "METACORTEX_TOKEN_A_B_C"


def test_bearer_token_clients_read_the_token_from_the_environment_or_a_password_prompt() -> None:
    texts = _by_key(Endpoint(URL, token_variable=VARIABLE))

    assert shlex.split(texts["claude-code"]) == [
        "claude",
        "mcp",
        "add",
        "--transport",
        "http",
        "metacortex",
        URL,
        "--header",  # variadic: after the name and URL, or it would swallow them
        f"Authorization: Bearer ${VARIABLE}",
    ]
    assert tomllib.loads(texts["codex"]) == {
        "mcp_servers": {"metacortex": {"url": URL, "bearer_token_env_var": VARIABLE}}
    }
    assert json.loads(texts["cursor"]) == {
        "mcpServers": {
            "metacortex": {"url": URL, "headers": {"Authorization": f"Bearer ${{env:{VARIABLE}}}"}}
        }
    }
    vscode = json.loads(texts["vscode"])
    [prompt] = vscode["inputs"]
    assert prompt["type"] == "promptString"
    assert prompt["password"] is True
    assert re.fullmatch(r"[A-Za-z0-9_]+", prompt["id"])  # VS Code's schema for an input id
    assert vscode["servers"] == {
        "metacortex": {
            "type": "http",
            "url": URL,
            "headers": {"Authorization": "Bearer ${input:" + prompt["id"] + "}"},
        }
    }


def test_oauth_only_endpoints_get_the_url_and_how_to_sign_in() -> None:
    snippets = {s.key: s for s in render(Endpoint(URL, token_variable=None, oauth=True))}

    assert snippets["chatgpt"].text == snippets["claude"].text == URL
    assert "OAuth" in snippets["chatgpt"].note
    assert shlex.split(snippets["claude-code"].text)[-1] == URL
    assert "/mcp" in snippets["claude-code"].note
    assert tomllib.loads(snippets["codex"].text) == {"mcp_servers": {"metacortex": {"url": URL}}}
    assert "codex mcp login metacortex" in snippets["codex"].note
    assert json.loads(snippets["cursor"].text) == {"mcpServers": {"metacortex": {"url": URL}}}
    assert "inputs" not in json.loads(snippets["vscode"].text)


def test_web_connectors_without_oauth_use_a_url_token_or_say_what_to_change() -> None:
    url_token = {s.key: s for s in render(Endpoint(URL, url_token=True))}
    neither = {s.key: s for s in render(Endpoint("http://127.0.0.1:8765/mcp"))}

    assert url_token["chatgpt"].text == URL + "?auth_token=<token>"
    assert "Anyone who sees the URL has the token" in url_token["claude"].note
    assert neither["chatgpt"].text == neither["claude"].text == ""
    assert "METACORTEX_OAUTH=true" in neither["chatgpt"].note


def test_loopback_urls_warn_that_web_connectors_need_a_public_https_url() -> None:
    local = {s.key: s for s in render(Endpoint("http://127.0.0.1:8765/mcp", oauth=True))}
    public = {s.key: s for s in render(Endpoint(URL, oauth=True))}

    assert "public https URL" in local["chatgpt"].note
    assert "public https URL" not in public["chatgpt"].note


def test_the_banner_lists_client_ids_and_leaves_the_snippets_to_their_command(
    tmp_path: Path,
) -> None:
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    text = banner(
        url="http://127.0.0.1:8765",
        data_dir=tmp_path,
        profiles=load_profiles(settings),
        token_path=tmp_path / "admin-token",
        new_token=None,
        passphrase_set=True,
        command=lambda words: f"mc {words}",
        stored_clients=["laptop"],
    )

    for shown in render(Endpoint("http://127.0.0.1:8765/mcp")):
        for line in shown.text.splitlines():
            assert line not in text
    assert "(ids: laptop)" in text
    assert text.splitlines()[-1].endswith(": mc client snippets")


def test_a_client_endpoint_names_its_own_variable_and_one_snippet_can_be_asked_for() -> None:
    endpoint = client_endpoint("https://memory.example.com/", "laptop-codex", url_token=True)

    assert endpoint == Endpoint(URL, token_variable=VARIABLE, url_token=True)
    assert snippet(endpoint, "codex").text == _by_key(endpoint)["codex"]
    with pytest.raises(ValueError, match="known: chatgpt, claude"):
        snippet(endpoint, "emacs")
