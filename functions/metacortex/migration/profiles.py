"""Client profiles of the TypeScript MetaCortex, rewritten for this server.

The original accepted things this server refuses (docs/MIGRATING.md):

* ``?auth_token=`` on every profile → URL tokens are opt-in per profile
  (``allowUrlToken``), kept only when the operator asks (``--keep-url-tokens``);
* any token → weak ones (short, hand-made) are replaced by a new random token,
  shown once; every token is stored as ``token_sha256`` so the secret leaves the
  configuration;
* an empty ``allowedTools`` meant *every* tool → every tool is listed explicitly,
  and the report says so; a missing one gave the original's three browser tools
  (``save_context``, ``search_context``, ``fetch_context``), which this server gives
  an entry without it too: they are listed explicitly, so the migrated profile says
  what it allows;
* origins written with a trailing slash or a path → the bare origin;
* unknown fields, tools and states → dropped, each one named.

``migrate_profiles`` never guesses silently: every change is a ``Note`` on the
entry it concerns, and the result is checked by the same loader the server uses.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Final
from urllib.parse import urlsplit

from metacortex import tool_catalogue
from metacortex.access.profiles import (
    ADMIN_PROFILE_ID,
    BROWSER_TOOLS,
    CLIENT_ID_PATTERN,
    load_profiles,
    new_token,
    token_digest,
    token_weakness,
)
from metacortex.config import Settings
from metacortex.domain.records import ALL_STATES
from metacortex.errors import ConfigurationError

# Fields the original's profiles had that mean the same here.
_CARRIED: Final = ("allowedFilterStates", "defaultFilterState", "rateLimitPerMinute")
_STATES: Final = frozenset(state.value for state in ALL_STATES)
_UNSAFE_ID_CHARS: Final = re.compile(r"[^A-Za-z0-9_-]+")
# MCP_CLIENT_PROFILES_JSON is an environment variable: a few KiB in practice.
MAX_PROFILES_BYTES: Final = 1024 * 1024


@dataclass(frozen=True, slots=True)
class NewToken:
    client_id: str
    token: str  # shown to the operator once; only its sha256 is in the profiles


@dataclass(slots=True)
class ProfileMigration:
    profiles: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    new_tokens: list[NewToken] = field(default_factory=list)

    def as_json(self) -> str:
        """The value for MCP_CLIENT_PROFILES_JSON."""
        return json.dumps(self.profiles, indent=2)


def read_profiles_text(stream: BinaryIO, name: str) -> str:
    """At most ``MAX_PROFILES_BYTES`` of UTF-8 text from ``stream`` (``/dev/zero`` ends)."""
    data = stream.read(MAX_PROFILES_BYTES + 1)
    if len(data) > MAX_PROFILES_BYTES:
        raise ConfigurationError(
            f"{name} holds more than {MAX_PROFILES_BYTES // 1024} KiB: not a profiles file "
            "(MCP_CLIENT_PROFILES_JSON is a short JSON array)"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ConfigurationError(
            f"{name} is not UTF-8 text (byte {error.start} cannot be decoded): give the "
            "profiles JSON file"
        ) from None


def read_profiles_file(path: Path) -> str:
    """The profiles file's text, with one clear error for a folder, a missing or unreadable
    file, binary data or a file too large to be profiles."""
    if path.is_dir():
        raise ConfigurationError(f"{path} is a directory: give the profiles JSON file")
    try:
        with path.open("rb") as stream:
            return read_profiles_text(stream, str(path))
    except OSError as error:
        raise ConfigurationError(f"cannot read {path}: {error.strerror or error}") from None


def migrate_profiles(text: str, *, keep_url_tokens: bool = False) -> ProfileMigration:
    """Rewrite the original's MCP_CLIENT_PROFILES_JSON; raises ConfigurationError if unusable."""
    try:
        entries = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigurationError(
            f"the profiles are not valid JSON: {error.msg} (line {error.lineno}, "
            f"column {error.colno})"
        ) from None
    except RecursionError:
        raise ConfigurationError(
            "the profiles are nested too deeply to be read: they are not a profiles array"
        ) from None
    if not isinstance(entries, list):
        raise ConfigurationError("the profiles must be a JSON array of objects")
    result = ProfileMigration()
    taken: set[str] = set()
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            result.notes.append(f"[{index}] skipped: not a JSON object")
            continue
        migrated = _entry(index, entry, taken, keep_url_tokens, result)
        if migrated is not None:
            result.profiles.append(migrated)
    _check_loads(result)
    return result


def _entry(
    index: int,
    entry: dict[str, Any],
    taken: set[str],
    keep_url_tokens: bool,
    result: ProfileMigration,
) -> dict[str, Any] | None:
    client_id = _client_id(index, entry.get("id"), taken, result)
    if client_id is None:
        return None
    note = result.notes.append
    where = f"{client_id}:"
    profile: dict[str, Any] = {"id": client_id}
    if isinstance(entry.get("description"), str):
        profile["description"] = entry["description"]

    token = entry.get("token")
    if isinstance(entry.get("token_sha256"), str) and token is None:
        profile["token_sha256"] = entry["token_sha256"]
    elif isinstance(token, str) and token_weakness(token) is None:
        profile["token_sha256"] = token_digest(token).hex()
        note(f"{where} token kept (the client changes nothing); stored as token_sha256")
    else:
        fresh = new_token()
        profile["token_sha256"] = token_digest(fresh).hex()
        result.new_tokens.append(NewToken(client_id, fresh))
        why = "missing" if not isinstance(token, str) else token_weakness(token)
        note(f"{where} token {why}: a new random token replaces it (give it to the client)")

    profile["allowedTools"] = _tools(entry.get("allowedTools"), where, note)
    for key in _CARRIED:
        if key in entry:
            profile[key] = entry[key]
    if "allowedFilterStates" in profile:
        profile["allowedFilterStates"] = _states(profile["allowedFilterStates"], where, note)
        if not profile["allowedFilterStates"]:
            del profile["allowedFilterStates"]
    if profile.get("defaultFilterState") not in profile.get("allowedFilterStates", ()):
        profile.pop("defaultFilterState", None)

    origins = _origins(entry.get("allowedOrigins", []), where, note)
    if origins:
        profile["allowedOrigins"] = origins
    if keep_url_tokens or entry.get("allowUrlToken") is True:
        profile["allowUrlToken"] = True
        note(f"{where} ?auth_token= stays accepted (allowUrlToken); prefer OAuth for web clients")
    else:
        note(
            f"{where} ?auth_token= is no longer accepted: the client must send "
            "'Authorization: Bearer', connect with OAuth, or get allowUrlToken: true"
        )
    dropped = sorted(
        set(entry)
        - {"id", "description", "token", "token_sha256", "allowedTools", "allowedOrigins"}
        - {"allowUrlToken", *_CARRIED}
    )
    if dropped:
        note(f"{where} dropped unknown field(s) {', '.join(dropped)}")
    return profile


def _client_id(index: int, value: Any, taken: set[str], result: ProfileMigration) -> str | None:
    if not isinstance(value, str) or not value.strip():
        result.notes.append(f"[{index}] skipped: no id")
        return None
    client_id = value.strip()
    if not CLIENT_ID_PATTERN.fullmatch(client_id) or client_id == ADMIN_PROFILE_ID:
        fixed = _UNSAFE_ID_CHARS.sub("-", client_id).strip("-_")[:64] or f"client-{index}"
        if fixed == ADMIN_PROFILE_ID:
            fixed = f"{fixed}-client"
        result.notes.append(
            f"{client_id!r}: id renamed to {fixed!r} (ids must be URL-safe and not "
            f"{ADMIN_PROFILE_ID!r}); its endpoint becomes /clients/{fixed}/mcp"
        )
        client_id = fixed
    if client_id in taken:
        result.notes.append(f"{client_id}: skipped: the id is used by an earlier entry")
        return None
    taken.add(client_id)
    return client_id


def _tools(value: Any, where: str, note: Any) -> list[str]:
    known_tools = tool_catalogue.model_tools()
    if value is None:
        note(
            f"{where} allowedTools was missing, which gave the original's browser tools: "
            f"{', '.join(BROWSER_TOOLS)} are now listed explicitly (as this server gives them)"
        )
        return list(BROWSER_TOOLS)
    if not isinstance(value, list) or not value:
        note(
            f"{where} allowedTools was empty, which granted every tool in the "
            "original: every tool is now listed explicitly; narrow them if you can"
        )
        return list(known_tools)
    known = [t.strip() for t in value if isinstance(t, str) and t.strip() in known_tools]
    unknown = [t for t in value if not (isinstance(t, str) and t.strip() in known_tools)]
    if unknown:
        note(f"{where} dropped unknown tool(s) {', '.join(map(str, unknown))}")
    if not known:
        note(f"{where} no known tool left: only search_context and fetch_context are granted")
        return ["search_context", "fetch_context"]
    return list(dict.fromkeys(known))


def _states(value: Any, where: str, note: Any) -> list[str]:
    if not isinstance(value, list):
        note(f"{where} allowedFilterStates was not a list: dropped (only 'active' is readable)")
        return []
    kept = [s.strip() for s in value if isinstance(s, str) and s.strip() in _STATES]
    if len(kept) != len(value):
        note(f"{where} dropped unknown state(s) in allowedFilterStates")
    return list(dict.fromkeys(kept))


def _origins(value: Any, where: str, note: Any) -> list[str]:
    if not isinstance(value, list):
        note(f"{where} allowedOrigins was not a list: dropped")
        return []
    origins: list[str] = []
    for raw in value:
        origin = _bare_origin(raw)
        if origin is None:
            note(f"{where} dropped {raw!r} from allowedOrigins: not an http(s) origin")
            continue
        if origin != raw:
            note(f"{where} origin {raw!r} becomes {origin!r} (browsers send no slash or path)")
        origins.append(origin)
    return list(dict.fromkeys(origins))


def _bare_origin(raw: Any) -> str | None:
    if not isinstance(raw, str):
        return None
    try:
        parts = urlsplit(raw.strip())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname or "*" in raw:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host}" + (f":{port}" if port is not None else "")


def _check_loads(result: ProfileMigration) -> None:
    """The server's own loader must accept the result; anything else is a bug here."""
    settings = Settings(
        mcp_client_profiles_json=result.as_json(),  # type: ignore[arg-type]
        mcp_admin_token=None,
    )
    load_profiles(settings)
