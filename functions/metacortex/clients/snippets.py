"""Ready-to-paste connections to one MetaCortex endpoint, one per application.

One renderer for the start-up banner (``cli.banner``), each client's console page
and ``metacortex init``. A snippet never holds a token: the bearer token comes from
an environment variable (or, in VS Code, a password prompt), so a pasted
configuration can be shared or committed.

Each application's format, as its vendor documents it (checked 2026-12):

- ChatGPT: Settings → Apps & Connectors → Advanced → Developer mode, then Create,
  with the MCP server URL and OAuth; it cannot send a custom header or API key
  (https://developers.openai.com/apps-sdk/deploy/connect-chatgpt).
- Claude (claude.ai, Desktop, mobile): Settings → Connectors → Add custom
  connector, the remote MCP server URL; authless or OAuth only
  (https://support.claude.com/en/articles/11175166).
- Claude Code: ``claude mcp add --transport http <name> <url> --header "K: V"``;
  ``--header`` takes several values, so it comes after the name and URL; an
  OAuth server is signed in with ``/mcp`` (https://code.claude.com/docs/en/mcp).
- Codex: ``~/.codex/config.toml``, ``[mcp_servers.<name>]`` with ``url`` and
  ``bearer_token_env_var`` (an inline token is refused); OAuth with
  ``codex mcp login <name>`` (https://developers.openai.com/codex/mcp).
- Cursor: ``~/.cursor/mcp.json`` (or ``.cursor/mcp.json``), ``mcpServers`` with
  ``url`` and ``headers``; ``${env:NAME}`` is read from the environment
  (https://cursor.com/docs/context/mcp).
- VS Code: ``.vscode/mcp.json``, ``servers`` (``type: "http"``, ``url``,
  ``headers``) and ``inputs`` (a ``promptString`` with ``password: true``, used as
  ``${input:<id>}``; an id is letters, digits and ``_``)
  (https://code.visualstudio.com/docs/copilot/reference/mcp-configuration).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Final

# Names of environment variables, not secrets: the admin endpoint's token is the one the
# server and ``metacortex smoke`` read; each client's has its own (``token_variable_for``).
ADMIN_TOKEN_VARIABLE: Final = "MCP_ADMIN_TOKEN"  # noqa: S105
CLIENT_TOKEN_PREFIX: Final = "METACORTEX_TOKEN"  # noqa: S105
SERVER_NAME: Final = "metacortex"
APPS: Final = ("chatgpt", "claude", "claude-code", "codex", "cursor", "vscode")


@dataclass(frozen=True, slots=True)
class Endpoint:
    """What an application needs to reach one MCP endpoint."""

    url: str  # the endpoint, e.g. https://memory.example.com/clients/laptop/mcp
    # The environment variable holding the bearer token; None: no static token (OAuth).
    token_variable: str | None = ADMIN_TOKEN_VARIABLE
    # The server is its own OAuth server (METACORTEX_OAUTH): web connectors can sign in.
    oauth: bool = False
    # The endpoint also accepts the token as ?auth_token= (for connectors without headers).
    url_token: bool = False
    name: str = SERVER_NAME  # the server's name in the application's configuration


@dataclass(frozen=True, slots=True)
class Snippet:
    key: str  # one of APPS
    app: str  # "Claude Code"
    where: str  # where it goes: "a terminal", "~/.codex/config.toml", ...
    text: str  # what to paste; empty when this application cannot connect this way
    note: str  # what happens next, or why it cannot connect and what to change


def token_variable_for(client_id: str) -> str:
    """An environment variable name per client, so two clients' tokens can live side
    by side in one shell: ``laptop-codex`` → ``METACORTEX_TOKEN_LAPTOP_CODEX``."""
    return f"{CLIENT_TOKEN_PREFIX}_{re.sub(r'[^A-Z0-9]', '_', client_id.upper())}"


def client_endpoint(
    base_url: str, client_id: str, *, oauth: bool = False, url_token: bool = False
) -> Endpoint:
    """A client endpoint ``<base_url>/clients/<id>/mcp`` whose token lives in the
    client's own variable (``token_variable_for``)."""
    return Endpoint(
        f"{base_url.rstrip('/')}/clients/{client_id}/mcp",
        token_variable=token_variable_for(client_id),
        oauth=oauth,
        url_token=url_token,
    )


def snippet(endpoint: Endpoint, key: str) -> Snippet:
    """One application's snippet (``key``: one of ``APPS``)."""
    for found in render(endpoint):
        if found.key == key:
            return found
    raise ValueError(f"no snippet for {key!r}; known: {', '.join(APPS)}")


def render(endpoint: Endpoint) -> list[Snippet]:
    """The six applications' snippets, in ``APPS`` order."""
    return [
        _web("chatgpt", "ChatGPT", "Settings → Apps & Connectors → Create", endpoint),
        _web("claude", "Claude", "Settings → Connectors → Add custom connector", endpoint),
        _claude_code(endpoint),
        _codex(endpoint),
        _cursor(endpoint),
        _vscode(endpoint),
    ]


def _web(key: str, app: str, where: str, endpoint: Endpoint) -> Snippet:
    public = endpoint.url.startswith("https://")
    reach = "" if public else f" {app} connects from its own servers: it needs a public https URL."
    if endpoint.oauth:
        return Snippet(
            key,
            app,
            where,
            endpoint.url,
            f"Paste the URL, choose OAuth, then approve {app} on MetaCortex's consent page "
            f"(the owner's passphrase).{reach}",
        )
    if endpoint.url_token:
        return Snippet(
            key,
            app,
            where,
            f"{endpoint.url}?auth_token=<token>",
            f"{app} cannot send a bearer header: this endpoint takes the token in the URL "
            f"instead (replace <token>; choose no authentication). Anyone who sees the URL "
            f"has the token.{reach}",
        )
    return Snippet(
        key,
        app,
        where,
        "",
        f"{app} signs in with OAuth only (it cannot send a bearer token): run the server "
        "with METACORTEX_OAUTH=true, or create a client that takes its token in the URL.",
    )


def _claude_code(endpoint: Endpoint) -> Snippet:
    command = f"claude mcp add --transport http {endpoint.name} {endpoint.url}"
    if endpoint.token_variable is None:
        return Snippet(
            "claude-code",
            "Claude Code",
            "a terminal",
            command,
            "Then run /mcp in Claude Code and choose Authenticate to sign in with OAuth.",
        )
    return Snippet(
        "claude-code",
        "Claude Code",
        "a terminal",
        f'{command} --header "Authorization: Bearer ${endpoint.token_variable}"',
        f"Run it where {endpoint.token_variable} holds the token: Claude Code keeps the "
        "header in its own configuration.",
    )


def _codex(endpoint: Endpoint) -> Snippet:
    lines = [f"[mcp_servers.{endpoint.name}]", f"url = {json.dumps(endpoint.url)}"]
    if endpoint.token_variable is None:
        note = f"Then run: codex mcp login {endpoint.name} (OAuth)."
    else:
        lines.append(f"bearer_token_env_var = {json.dumps(endpoint.token_variable)}")
        note = f"Codex reads the token from {endpoint.token_variable} when it starts."
    return Snippet("codex", "Codex", "~/.codex/config.toml", "\n".join(lines), note)


def _cursor(endpoint: Endpoint) -> Snippet:
    server: dict[str, object] = {"url": endpoint.url}
    if endpoint.token_variable is None:
        note = "Cursor signs in with OAuth when it first connects."
    else:
        server["headers"] = {"Authorization": f"Bearer ${{env:{endpoint.token_variable}}}"}
        note = f"Start Cursor where {endpoint.token_variable} holds the token."
    text = json.dumps({"mcpServers": {endpoint.name: server}}, indent=2)
    return Snippet("cursor", "Cursor", "~/.cursor/mcp.json", text, note)


def _vscode(endpoint: Endpoint) -> Snippet:
    server: dict[str, object] = {"type": "http", "url": endpoint.url}
    config: dict[str, object] = {}
    if endpoint.token_variable is None:
        note = "VS Code signs in with OAuth when it first starts the server."
    else:
        input_id = re.sub(r"[^A-Za-z0-9_]", "_", f"{endpoint.name}_token")
        config["inputs"] = [
            {
                "type": "promptString",
                "id": input_id,
                "description": f"MetaCortex token for {endpoint.url}",
                "password": True,
            }
        ]
        server["headers"] = {"Authorization": f"Bearer ${{input:{input_id}}}"}
        note = "VS Code asks for the token once and keeps it in its secret storage."
    config["servers"] = {endpoint.name: server}
    return Snippet("vscode", "VS Code", ".vscode/mcp.json", json.dumps(config, indent=2), note)
