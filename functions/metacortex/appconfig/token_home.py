"""Where ``metacortex init --url --store-token`` keeps a new client's token: where the
application itself reads it, when that place is safe.

Decided per application from what it reads (``appconfig/targets.py`` has the sources):

- Codex reads ``bearer_token_env_var`` from its environment, and at every start
  loads ``$CODEX_HOME/.env`` into it (dotenv lines; names starting ``CODEX_`` are
  ignored, ours start ``METACORTEX_``). The token goes there as one line, in a
  file of mode 0600; the entry is unchanged. An inline token in ``config.toml`` is
  refused by Codex.
- Claude Code, Cursor and Windsurf send an entry's ``headers`` as written; a
  literal ``Authorization`` header is what ``claude mcp add --header`` itself
  stores. Only in the user's own file (``~/.claude.json``, ``~/.cursor/mcp.json``,
  Windsurf's ``mcp_config.json``), whose mode becomes 0600; never in a project's
  file, which others read and commit (the ``export`` line stays the way there).
- VS Code keeps secrets itself: an ``inputs`` entry of type ``promptString`` with
  ``password: true``, used as ``${input:<id>}``, is asked for once and kept in its
  secret storage. We cannot write that storage, so the entry asks, and the token
  is printed once to paste; safe in a project's file too (it holds no secret).
  Its user ``mcp.json`` is synchronised by Settings Sync, one more reason not to
  write the token into it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from metacortex.appconfig import files
from metacortex.appconfig.edit import NEW_FILE_MODE, PRIVATE_BITS, Item
from metacortex.appconfig.place import Place
from metacortex.appconfig.targets import Target
from metacortex.appconfig.textfile import Text, decode
from metacortex.config import ApplicationDirs

Kind = Literal["dotenv", "header", "prompt"]
PLACEHOLDER: Final = "<token>"  # stands for the token in a preview
_DOTENV_LINE: Final = r"^[ \t]*(?:export[ \t]+)?{name}[ \t]*=.*$"


@dataclass(frozen=True, slots=True)
class TokenHome:
    kind: Kind | None  # None: not kept; ``reason`` says why
    where: str  # in words: "in /home/u/.codex/.env (mode 0600)"
    reason: str = ""
    env_file: Path | None = None  # for ``dotenv``


def token_home(target: Target, place: Place, dirs: ApplicationDirs) -> TokenHome:
    """Where ``target`` reads a token that ``place`` can keep, or why nowhere."""
    if target.bearer_home == "dotenv":
        env_file = (dirs.codex_home or dirs.home / ".codex") / ".env"
        where = f"in {env_file} (mode 0600), which {target.app} loads when it starts"
        return TokenHome("dotenv", where, env_file=env_file)
    if target.bearer_home == "prompt":
        where = f"in {target.app}'s secret storage: it asks for the token once"
        return TokenHome("prompt", where)
    if target.bearer_home == "header" and place.private:
        where = f"in the entry's Authorization header in {place.path} (mode 0600)"
        return TokenHome("header", where)
    if target.bearer_home == "header" and place.scope == "project":
        return TokenHome(
            None,
            "",
            reason=f"{place.path} is a project's file, which others read and often commit: "
            "the token was not written into it",
        )
    if target.bearer_home == "header":
        return TokenHome(
            None,
            "",
            reason=f"{place.path} was named with --config but not said to be yours: the token "
            "was not written into it (add --scope user if the file is yours alone)",
        )
    return TokenHome(None, "", reason=f"{target.app} reads the token only from its environment")


def entry_with_token(
    home: TokenHome, entry: dict[str, Any], name: str, client_id: str, token: str
) -> tuple[dict[str, Any], list[Item]]:
    """The entry (and array items) that keep ``token`` as ``home`` says."""
    if home.kind == "header":
        return _authorized(entry, f"Bearer {token}"), []
    if home.kind == "prompt":
        input_id = re.sub(r"[^A-Za-z0-9_]", "_", f"{name}_token")
        prompt = {
            "type": "promptString",
            "id": input_id,
            "description": f"MetaCortex token of client {client_id} ({entry.get('url')})",
            "password": True,
        }
        return _authorized(entry, f"Bearer ${{input:{input_id}}}"), [(("inputs",), "id", prompt)]
    return entry, []


def holds_its_token(existing: Any, entry: dict[str, Any]) -> bool:
    """``existing`` is ``entry`` with the token kept another way (a literal header, a
    prompt): a re-run keeps it as it is."""
    if not isinstance(existing, dict) or "headers" not in entry:
        return False
    headers = existing.get("headers")
    if not isinstance(headers, dict):
        return False
    value = headers.get("Authorization")
    if not isinstance(value, str) or not value.startswith("Bearer "):
        return False
    return _authorized(existing, "") == _authorized(entry, "")


def check_env_file(home: TokenHome) -> None:
    """Refused now, before a client is made, when the env file could not be written."""
    if home.env_file is not None:
        files.read(home.env_file)


def write_env_file(home: TokenHome, variable: str, token: str) -> None:
    """Set ``variable`` in the env file: its line replaced or one added; everything else,
    the byte-order mark and line endings kept; mode 0600 (never through a link)."""
    assert home.env_file is not None
    found = files.read(home.env_file)
    text = decode(found.raw, str(home.env_file)) if found else Text("", bom=False)
    line = f"{variable}='{token}'"
    pattern = re.compile(_DOTENV_LINE.format(name=re.escape(variable)), re.MULTILINE)
    plain = text.plain
    if pattern.search(plain):
        edited = pattern.sub(lambda _: line, plain)
    else:
        edited = plain + ("" if not plain or plain.endswith("\n") else "\n") + line + "\n"
    mode = found.mode & ~PRIVATE_BITS if found else NEW_FILE_MODE
    files.replace(home.env_file, text.encode(text.render(edited)), mode)


def _authorized(entry: dict[str, Any], value: str) -> dict[str, Any]:
    headers = entry.get("headers")
    others = dict(headers) if isinstance(headers, dict) else {}
    others["Authorization"] = value
    return {**entry, "headers": others}
