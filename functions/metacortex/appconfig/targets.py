"""The applications ``metacortex init`` configures: where each keeps its MCP servers, in
which format, and what a MetaCortex entry looks like there.

Each format as its vendor documents it (checked 2026-12; the ``source`` of each target).
A local server is a stdio entry (``metacortex stdio``); a remote one (``--url``) an
HTTP entry whose bearer token is read from an environment variable, never written
into the file:

- Claude Desktop: ``claude_desktop_config.json`` (macOS ``~/Library/Application
  Support/Claude/``, Windows ``%APPDATA%\\Claude\\``; Linux builds use
  ``~/.config/Claude/``), ``mcpServers`` of ``command``/``args``. Strict JSON. Local
  (stdio) servers only: remote servers are added as connectors in its settings
  (Settings → Connectors, OAuth only; https://support.claude.com/en/articles/11175166).
- Claude Code: project ``.mcp.json`` or user ``~/.claude.json``, ``mcpServers`` with
  ``type: "stdio"``, ``command``, ``args``; remote: ``type: "http"``, ``url``,
  ``headers``, where ``${VAR}`` is expanded from the environment (its section
  "Environment variable expansion in .mcp.json": in ``command``, ``args``, ``env``,
  ``url`` and ``headers``; some versions were reported sending a header
  unexpanded, anthropics/claude-code#51581: ``metacortex client add`` prints the
  ``claude mcp add --header`` form, expanded by the shell). Strict JSON.
- Codex: ``$CODEX_HOME/config.toml`` (default ``~/.codex/config.toml``; a trusted
  project's ``.codex/config.toml``), ``[mcp_servers.<name>]`` with ``command`` and
  ``args``; remote: ``url`` and ``bearer_token_env_var`` (the variable's name; Codex
  sends ``Authorization: Bearer <its value>``). TOML, edited with tomlkit so
  comments and layout stay.
- Cursor: ``~/.cursor/mcp.json`` (or a project's ``.cursor/mcp.json``), ``mcpServers``
  of ``command``/``args``; remote: ``url`` and ``headers``, where ``${env:NAME}`` is
  read from the environment (its "Config interpolation"). Strict JSON.
- VS Code: a workspace's ``.vscode/mcp.json`` or the user profile's ``mcp.json``
  (Linux ``~/.config/Code/User/``, macOS ``~/Library/Application Support/Code/User/``,
  Windows ``%APPDATA%\\Code\\User\\``), ``servers`` with ``type: "stdio"``,
  ``command``, ``args``; remote: ``type: "http"``, ``url``, ``headers``. The server
  configuration takes VS Code's predefined variables, among them ``${env:NAME}``
  (https://code.visualstudio.com/docs/reference/variables-reference); its other
  way, an ``inputs`` ``promptString`` kept in its secret storage, is what
  ``metacortex client add`` prints. JSON with comments (VS Code's settings format):
  comments and trailing commas are allowed and kept.
- Windsurf: ``~/.codeium/windsurf/mcp_config.json``, ``mcpServers`` of
  ``command``/``args``; remote: ``serverUrl`` and ``headers``; its "Config
  interpolation" reads ``${env:NAME}`` in ``command``, ``args``, ``env``,
  ``serverUrl``, ``url`` and ``headers``. Strict JSON.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from metacortex.config import ApplicationDirs

Format = Literal["json", "jsonc", "toml"]
Scope = Literal["user", "project"]
Locate = Callable[[ApplicationDirs, Path], Path]  # (dirs, current directory) -> file


@dataclass(frozen=True, slots=True)
class Target:
    key: str  # what --target takes
    app: str
    source: str  # where the format is documented
    format: Format
    container: tuple[str, ...]  # the object holding servers by name
    scopes: Mapping[Scope, Locate]
    default_scope: Scope
    stdio_entry: Callable[[str, Sequence[str]], dict[str, Any]]  # (command, args) -> entry
    after: str  # what to do once written
    # (url, token variable) -> an HTTP entry; None: no remote servers in this file.
    remote_entry: Callable[[str, str], dict[str, Any]] | None = None
    url_key: str = "url"  # where a remote entry keeps its URL
    # Where ``--store-token`` keeps a new client's token (``appconfig/token_home.py``):
    # an env file the application loads, a literal header, or its own secret prompt.
    bearer_home: Literal["dotenv", "header", "prompt"] | None = None

    def path(self, scope: Scope, dirs: ApplicationDirs, cwd: Path) -> Path:
        return self.scopes[scope](dirs, cwd)


def _platform() -> str:
    return sys.platform


def _claude_desktop(dirs: ApplicationDirs, cwd: Path) -> Path:
    if _platform() == "darwin":
        base = dirs.home / "Library" / "Application Support"
    elif _platform() == "win32":
        base = dirs.appdata or dirs.home / "AppData" / "Roaming"
    else:
        base = dirs.xdg_config_home or dirs.home / ".config"
    return base / "Claude" / "claude_desktop_config.json"


def _vscode_user(dirs: ApplicationDirs, cwd: Path) -> Path:
    if _platform() == "darwin":
        base = dirs.home / "Library" / "Application Support"
    elif _platform() == "win32":
        base = dirs.appdata or dirs.home / "AppData" / "Roaming"
    else:
        base = dirs.xdg_config_home or dirs.home / ".config"
    return base / "Code" / "User" / "mcp.json"


def _codex_user(dirs: ApplicationDirs, cwd: Path) -> Path:
    return (dirs.codex_home or dirs.home / ".codex") / "config.toml"


def _command(command: str, args: Sequence[str]) -> dict[str, Any]:
    return {"command": command, "args": list(args)}


def _typed_stdio(command: str, args: Sequence[str]) -> dict[str, Any]:
    return {"type": "stdio", "command": command, "args": list(args)}


def _bearer(reference: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {reference}"}


def _claude_code_http(url: str, variable: str) -> dict[str, Any]:
    return {"type": "http", "url": url, "headers": _bearer(f"${{{variable}}}")}


def _codex_http(url: str, variable: str) -> dict[str, Any]:
    return {"url": url, "bearer_token_env_var": variable}


def _cursor_http(url: str, variable: str) -> dict[str, Any]:
    return {"url": url, "headers": _bearer(f"${{env:{variable}}}")}


def _vscode_http(url: str, variable: str) -> dict[str, Any]:
    return {"type": "http", "url": url, "headers": _bearer(f"${{env:{variable}}}")}


def _windsurf_http(url: str, variable: str) -> dict[str, Any]:
    return {"serverUrl": url, "headers": _bearer(f"${{env:{variable}}}")}


TARGETS: Final[Mapping[str, Target]] = {
    target.key: target
    for target in (
        Target(
            key="claude-desktop",
            app="Claude Desktop",
            source="https://modelcontextprotocol.io/docs/develop/connect-local-servers",
            format="json",
            container=("mcpServers",),
            scopes={"user": _claude_desktop},
            default_scope="user",
            stdio_entry=_command,
            after="Quit and reopen Claude Desktop to load it.",
        ),
        Target(
            key="claude-code",
            app="Claude Code",
            source="https://code.claude.com/docs/en/mcp",
            format="json",
            container=("mcpServers",),
            scopes={
                "project": lambda dirs, cwd: cwd / ".mcp.json",
                "user": lambda dirs, cwd: dirs.home / ".claude.json",
            },
            default_scope="project",
            stdio_entry=_typed_stdio,
            after="Start Claude Code in this directory and approve the server (/mcp lists it).",
            remote_entry=_claude_code_http,
            bearer_home="header",
        ),
        Target(
            key="codex",
            app="Codex",
            source="https://developers.openai.com/codex/mcp",
            format="toml",
            container=("mcp_servers",),
            scopes={
                "user": _codex_user,
                "project": lambda dirs, cwd: cwd / ".codex" / "config.toml",
            },
            default_scope="user",
            stdio_entry=_command,
            after="Start Codex again; /mcp lists the server.",
            remote_entry=_codex_http,
            bearer_home="dotenv",
        ),
        Target(
            key="cursor",
            app="Cursor",
            source="https://cursor.com/docs/context/mcp",
            format="json",
            container=("mcpServers",),
            scopes={
                "user": lambda dirs, cwd: dirs.home / ".cursor" / "mcp.json",
                "project": lambda dirs, cwd: cwd / ".cursor" / "mcp.json",
            },
            default_scope="user",
            stdio_entry=_command,
            after="Cursor picks it up in Settings → MCP (reload the window if it does not).",
            remote_entry=_cursor_http,
            bearer_home="header",
        ),
        Target(
            key="vscode",
            app="VS Code",
            source="https://code.visualstudio.com/docs/copilot/reference/mcp-configuration",
            format="jsonc",
            container=("servers",),
            scopes={
                "project": lambda dirs, cwd: cwd / ".vscode" / "mcp.json",
                "user": _vscode_user,
            },
            default_scope="project",
            stdio_entry=_typed_stdio,
            after="VS Code shows a Start action above the server in mcp.json.",
            remote_entry=_vscode_http,
            bearer_home="prompt",
        ),
        Target(
            key="windsurf",
            app="Windsurf",
            source="https://docs.windsurf.com/windsurf/cascade/mcp",
            format="json",
            container=("mcpServers",),
            scopes={
                "user": lambda dirs, cwd: dirs.home / ".codeium" / "windsurf" / "mcp_config.json"
            },
            default_scope="user",
            stdio_entry=_command,
            after="Refresh the MCP servers in Windsurf's Cascade panel.",
            remote_entry=_windsurf_http,
            url_key="serverUrl",
            bearer_home="header",
        ),
    )
}
