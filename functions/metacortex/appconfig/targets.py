"""The applications ``metacortex init`` configures: where each keeps its MCP servers, in
which format, and what a MetaCortex entry looks like there.

Each format as its vendor documents it (checked 2026-12; the ``source`` of each target):

- Claude Desktop: ``claude_desktop_config.json`` (macOS ``~/Library/Application
  Support/Claude/``, Windows ``%APPDATA%\\Claude\\``; Linux builds use
  ``~/.config/Claude/``), ``mcpServers`` of ``command``/``args``. Strict JSON. Local
  (stdio) servers only: remote servers are added as connectors in its settings.
- Claude Code: project ``.mcp.json`` or user ``~/.claude.json``, ``mcpServers`` with
  ``type: "stdio"``, ``command``, ``args``. Strict JSON.
- Codex: ``$CODEX_HOME/config.toml`` (default ``~/.codex/config.toml``; a trusted
  project's ``.codex/config.toml``), ``[mcp_servers.<name>]`` with ``command`` and
  ``args``. TOML, edited with tomlkit so comments and layout stay.
- Cursor: ``~/.cursor/mcp.json`` (or a project's ``.cursor/mcp.json``), ``mcpServers``
  of ``command``/``args``. Strict JSON.
- VS Code: a workspace's ``.vscode/mcp.json`` or the user profile's ``mcp.json``
  (Linux ``~/.config/Code/User/``, macOS ``~/Library/Application Support/Code/User/``,
  Windows ``%APPDATA%\\Code\\User\\``), ``servers`` with ``type: "stdio"``,
  ``command``, ``args``. JSON with comments (VS Code's settings format): comments and
  trailing commas are allowed and kept.
- Windsurf: ``~/.codeium/windsurf/mcp_config.json``, ``mcpServers`` of
  ``command``/``args``. Strict JSON.
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
        ),
    )
}
