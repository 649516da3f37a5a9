"""Endpoint profiles: who may call which tools, read which states, from which origins,
as whom, in which spaces.

The admin profile (``default``, served at ``/mcp``) comes from ``MCP_ADMIN_TOKEN``
and the ``MCP_ALLOWED_*`` settings; scoped client profiles (served at
``/clients/{id}/mcp``) come from ``MCP_CLIENT_PROFILES_JSON`` and from the store
(``metacortex.clients``: created, paused and removed without a restart), both in
the same entry format, checked by ``client_profile``. The environment's are
validated once at start-up: a bad entry raises ``ConfigurationError`` naming the
entry (index and id) and the field, so the operator can fix it before any
client connects. Profiles keep only the sha256 digest of a token, never the token.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Final, Literal

from metacortex import tool_catalogue
from metacortex.access.model import (
    DEFAULT_SPACE,
    FRESH,
    OWNER_ID,
    Directory,
    Grants,
    Level,
    check_space_key,
    effective_levels,
)
from metacortex.access.rules import Access
from metacortex.config import Settings
from metacortex.domain.records import ALL_STATES, BranchState
from metacortex.errors import ConfigurationError, MetaCortexError
from metacortex.tool_catalogue import Group

ADMIN_PROFILE_ID: Final = "default"
# Where a profile is kept, hence where its grants (its default space) change: the admin
# token's settings, an MCP_CLIENT_PROFILES_JSON entry, a stored client, an OAuth grant.
Source = Literal["admin", "environment", "store", "grant"]
CLIENT_ID_PATTERN: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
MIN_TOKEN_CHARS: Final = 32
MIN_TOKEN_DISTINCT_CHARS: Final = 10
MAX_RATE_LIMIT_PER_MINUTE: Final = 1_000_000
_HEX64: Final = re.compile(r"^[0-9a-fA-F]{64}$")
_TOKEN_CHARS: Final = re.compile(r"^[\x21-\x7e]+$")  # visible ASCII: safe in a header and a URL
_ORIGIN: Final = re.compile(r"^(https?)://([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(:[0-9]{1,5})?$")
_PROFILE_KEYS: Final = frozenset(
    {
        "id",
        "description",
        "token",
        "token_sha256",
        "allowedTools",
        "allowedFilterStates",
        "defaultFilterState",
        "allowedOrigins",
        "allowUrlToken",
        "mayWriteLifecycle",
        "rateLimitPerMinute",
        "chatgptDataTools",
        "person",
        "spaces",
        "defaultSpace",
    }
)
# What an entry without ``allowedTools`` is allowed: the TypeScript original's browser
# connector tools, so its profiles start here unchanged. An empty list stays an error.
BROWSER_TOOLS: Final = ("save_context", "search_context", "fetch_context")
_HOW_TO_GENERATE: Final = (
    "generate one with `metacortex client add <id>` or "
    "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`"
)


@dataclass(frozen=True, slots=True)
class Profile:
    id: str
    # sha256 of the bearer token; None means the endpoint accepts no credential at all.
    token_sha256: bytes | None
    allowed_tools: frozenset[str]
    readable_states: frozenset[BranchState]
    default_state: BranchState
    may_write_lifecycle: bool
    allowed_origins: frozenset[str]
    allow_url_token: bool
    rate_limit_per_minute: int
    # Also offer ChatGPT's data-only shapes ``search``/``fetch`` (mcp_surface.chatgpt_tools).
    chatgpt_data_tools: bool = False
    # Paused by the owner (a stored client, or an OAuth grant): every request is refused.
    paused: bool = False
    # Whose credential this is (a person id, or an email until the directory resolves
    # it) and what it was granted; ``levels`` and ``person_active`` are what
    # ``with_directory`` computed from them with the people and spaces in effect.
    person: str = OWNER_ID
    grants: Grants = field(default_factory=Grants.legacy)
    levels: Mapping[str, Level] = field(
        default_factory=lambda: MappingProxyType({DEFAULT_SPACE: Level.WRITE})
    )
    person_active: bool = True
    names: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    directory: Directory = FRESH
    source: Source = "environment"
    # Its entry named no ``allowedTools``: it was given ``BROWSER_TOOLS`` (the banner says so).
    tools_by_default: bool = False

    @property
    def keeps_own_grants(self) -> bool:
        """Whether the credential has a record of its own that a call may change (its
        default space): a stored client's, an OAuth grant's."""
        return self.source in ("store", "grant")

    @property
    def is_admin(self) -> bool:
        return self.id == ADMIN_PROFILE_ID

    @property
    def access(self) -> Access:
        return Access(
            self.readable_states,
            self.default_state,
            self.may_write_lifecycle,
            principal=self.id,
            may_erase="erase_context" in self.allowed_tools,
            levels=self.levels,
            default_space=self.grants.default,
            person=self.person,
            names=self.names,
            directory=self.directory,
        )

    @property
    def refused_because(self) -> str | None:
        """Why every request of this credential is refused (403), or None."""
        if self.paused:
            return "paused"
        if not self.person_active:
            return "person_inactive"
        return None

    @property
    def tools(self) -> tuple[str, ...]:
        """Allowed tools in catalogue order (what tools/list shows), but none its model
        could only be refused: a credential tool only where the credential keeps its own
        grants, a tool that changes memory only where it may write in some space."""
        writes = Level.WRITE in self.levels.values()
        return tuple(
            tool.name
            for tool in tool_catalogue.CATALOGUE.values()
            if tool.name in self.allowed_tools
            and tool.group is not Group.CHATGPT
            and (tool.group is not Group.CREDENTIAL or self.keeps_own_grants)
            and (writes or not tool.changes_memory)
        )

    @property
    def chatgpt_tools(self) -> tuple[str, ...]:
        """The ChatGPT-shaped tools offered: each needs its regular counterpart allowed."""
        if not self.chatgpt_data_tools:
            return ()
        return tuple(
            tool.name
            for tool in tool_catalogue.CATALOGUE.values()
            if tool.group is Group.CHATGPT and tool.stands_for in self.allowed_tools
        )

    @property
    def path(self) -> str:
        return "/mcp" if self.is_admin else f"/clients/{self.id}/mcp"


@dataclass(frozen=True, slots=True)
class Profiles:
    admin: Profile
    clients: Mapping[str, Profile]
    # The spaces and people the profiles were computed with (OAuth grants' profiles,
    # built per request, are computed with it too).
    directory: Directory = FRESH

    def resolved(self, directory: Directory) -> Profiles:
        """Every profile computed anew with ``directory`` (``with_directory``)."""
        names = MappingProxyType(directory.names())
        return Profiles(
            admin=with_directory(self.admin, directory, names),
            clients=MappingProxyType(
                {key: with_directory(p, directory, names) for key, p in self.clients.items()}
            ),
            directory=directory,
        )

    def get(self, client_id: str | None) -> Profile | None:
        """The admin profile for None, a client profile by id, or None when unknown."""
        if client_id is None:
            return self.admin
        return self.clients.get(client_id)

    def all(self) -> tuple[Profile, ...]:
        return (self.admin, *self.clients.values())


def token_digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


def new_token() -> str:
    """A strong token: 256 random bits, URL-safe (43 characters)."""
    return secrets.token_urlsafe(32)


def token_weakness(token: str) -> str | None:
    """Why a token is too weak to accept, or None when it is acceptable."""
    if not _TOKEN_CHARS.fullmatch(token):
        return "contains spaces or characters outside visible ASCII"
    if len(token) < MIN_TOKEN_CHARS:
        return f"is {len(token)} characters; at least {MIN_TOKEN_CHARS} are required"
    if len(set(token)) < MIN_TOKEN_DISTINCT_CHARS:
        return (
            f"uses only {len(set(token))} distinct characters; "
            "it looks hand-made rather than random"
        )
    return None


def load_profiles(settings: Settings) -> Profiles:
    """Validate and build every profile, or raise ConfigurationError naming the problem."""
    admin = _admin_profile(settings)
    clients: dict[str, Profile] = {}
    raw = settings.mcp_client_profiles_json
    if raw is not None and raw.get_secret_value().strip():
        digests: dict[bytes, str] = {}
        if admin.token_sha256 is not None:
            digests[admin.token_sha256] = "the admin endpoint (MCP_ADMIN_TOKEN)"
        for index, entry in enumerate(_entries(raw.get_secret_value())):
            profile = client_profile(entry, settings, _where(index, _id_of(entry)))
            where = _where(index, profile.id)
            if profile.id in clients:
                raise ConfigurationError(
                    f"{where}: id is used by an earlier entry; ids must be unique"
                )
            assert profile.token_sha256 is not None
            if profile.token_sha256 in digests:
                raise ConfigurationError(
                    f"{where}: token is already used by {digests[profile.token_sha256]}; "
                    "give every endpoint its own token"
                )
            digests[profile.token_sha256] = where
            clients[profile.id] = profile
    # Computed with the spaces and people of a new store until the store's are read.
    return Profiles(admin=admin, clients=MappingProxyType(clients)).resolved(FRESH)


# ----------------------------------------------------------------- admin
def _admin_profile(settings: Settings) -> Profile:
    digest: bytes | None = None
    if settings.mcp_admin_token is not None:
        token = settings.mcp_admin_token.get_secret_value()
        weakness = token_weakness(token)
        if weakness is not None:
            raise ConfigurationError(f"MCP_ADMIN_TOKEN {weakness}; {_HOW_TO_GENERATE}")
        digest = token_digest(token)
    tools = (
        frozenset(_known_tools(settings.mcp_allowed_tools, "MCP_ALLOWED_TOOLS"))
        if settings.mcp_allowed_tools
        else frozenset(tool_catalogue.model_tools())
    )
    if settings.metacortex_admin_erase_tool:
        tools |= frozenset(tool_catalogue.in_group(Group.OWNER))
    states = (
        frozenset(_known_states(settings.mcp_allowed_filter_states, "MCP_ALLOWED_FILTER_STATES"))
        if settings.mcp_allowed_filter_states
        else frozenset(ALL_STATES)
    )
    origins = frozenset(
        _origin(value, f"MCP_ALLOWED_ORIGINS entry {value!r}")
        for value in settings.mcp_allowed_origins
    )
    return Profile(
        id=ADMIN_PROFILE_ID,
        token_sha256=digest,
        allowed_tools=tools,
        readable_states=states,
        default_state=_default_state(None, states, settings, "MCP_ALLOWED_FILTER_STATES"),
        may_write_lifecycle=True,
        allowed_origins=origins,
        allow_url_token=False,
        rate_limit_per_minute=settings.metacortex_admin_rate_limit_per_minute,
        grants=Grants.everything(),
        source="admin",
    )


# --------------------------------------------------------------- clients
def _entries(text: str) -> list[Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigurationError(
            f"MCP_CLIENT_PROFILES_JSON is not valid JSON: {exc.msg} "
            f"(line {exc.lineno}, column {exc.colno})"
        ) from None
    if not isinstance(value, list):
        raise ConfigurationError(
            "MCP_CLIENT_PROFILES_JSON must be a JSON array of profile objects, "
            f"got a JSON {type(value).__name__}"
        )
    return value


def _where(index: int, client_id: object) -> str:
    if isinstance(client_id, str) and client_id:
        return f"MCP_CLIENT_PROFILES_JSON[{index}] (id {client_id!r})"
    return f"MCP_CLIENT_PROFILES_JSON[{index}]"


def _id_of(entry: Any) -> object:
    return entry.get("id") if isinstance(entry, dict) else None


def client_profile(entry: Any, settings: Settings, where: str) -> Profile:
    """A client profile from one entry in the ``MCP_CLIENT_PROFILES_JSON`` format, or
    ConfigurationError starting with ``where`` and naming the field."""
    if not isinstance(entry, dict):
        raise ConfigurationError(f"{where}: must be a JSON object")
    unknown = sorted(set(entry) - _PROFILE_KEYS)
    if unknown:
        raise ConfigurationError(
            f"{where}: unknown field {unknown[0]!r}; accepted fields are "
            + ", ".join(sorted(_PROFILE_KEYS))
        )
    client_id = entry.get("id")
    if not isinstance(client_id, str) or not client_id:
        raise ConfigurationError(f"{where}: id is required (a URL-safe string)")
    if client_id == ADMIN_PROFILE_ID:
        raise ConfigurationError(
            f"{where}: id {ADMIN_PROFILE_ID!r} is reserved for the admin endpoint /mcp"
        )
    if not CLIENT_ID_PATTERN.fullmatch(client_id):
        raise ConfigurationError(
            f"{where}: id must be 1-64 letters, digits, '-' or '_' and start with a letter "
            "or digit (it becomes the URL path /clients/<id>/mcp)"
        )
    digest = _client_token(entry, where)
    tools_by_default = entry.get("allowedTools") is None
    tools_value = list(BROWSER_TOOLS) if tools_by_default else entry["allowedTools"]
    if not isinstance(tools_value, list) or not all(isinstance(t, str) for t in tools_value):
        raise ConfigurationError(
            f"{where}: allowedTools must be a list of tool names, e.g. "
            '["search_context", "fetch_context"] (left out: ' + ", ".join(BROWSER_TOOLS) + ")"
        )
    if not tools_value:
        raise ConfigurationError(
            f"{where}: allowedTools must not be empty (an empty list never means 'all'); "
            "list the tools this client may call from: " + ", ".join(tool_catalogue.model_tools())
        )
    tools = frozenset(_known_tools(tools_value, f"{where}: allowedTools"))
    states_value = entry.get("allowedFilterStates")
    if states_value is None:
        states = frozenset({settings.default_filter_state})
    else:
        if not isinstance(states_value, list) or not all(isinstance(s, str) for s in states_value):
            raise ConfigurationError(f"{where}: allowedFilterStates must be a list of states")
        if not states_value:
            raise ConfigurationError(
                f"{where}: allowedFilterStates must not be empty; omit it to allow only "
                f"{settings.default_filter_state.value!r}"
            )
        states = frozenset(_known_states(states_value, f"{where}: allowedFilterStates"))
    default_value = entry.get("defaultFilterState")
    if default_value is not None and not isinstance(default_value, str):
        raise ConfigurationError(f"{where}: defaultFilterState must be a state name")
    origins_value = entry.get("allowedOrigins", [])
    if not isinstance(origins_value, list) or not all(isinstance(o, str) for o in origins_value):
        raise ConfigurationError(
            f'{where}: allowedOrigins must be a list of origins such as ["https://chatgpt.com"]'
        )
    return Profile(
        id=client_id,
        token_sha256=digest,
        allowed_tools=tools,
        readable_states=states,
        default_state=_default_state(default_value, states, settings, f"{where}: "),
        may_write_lifecycle=_bool(entry, "mayWriteLifecycle", where),
        allowed_origins=frozenset(
            _origin(o, f"{where}: allowedOrigins entry {o!r}") for o in origins_value
        ),
        allow_url_token=_bool(entry, "allowUrlToken", where),
        rate_limit_per_minute=_rate_limit(entry, where, settings),
        chatgpt_data_tools=_bool(entry, "chatgptDataTools", where),
        person=_person(entry, where),
        grants=entry_grants(entry, where),
        tools_by_default=tools_by_default,
    )


def _person(entry: Mapping[str, Any], where: str) -> str:
    value = entry.get("person", OWNER_ID)
    if not isinstance(value, str) or not value.strip():
        raise ConfigurationError(f"{where}: person must be a person's email (or 'owner')")
    return value.strip().lower() if "@" in value else value.strip()


def entry_grants(entry: Mapping[str, Any], where: str) -> Grants:
    """``spaces`` ({"key": "read"|"write"}) and ``defaultSpace`` of an entry; an entry
    without them (every one made before spaces) holds the default space at write."""
    raw = entry.get("spaces")
    if raw is None:
        if entry.get("defaultSpace") not in (None, DEFAULT_SPACE):
            raise ConfigurationError(f"{where}: defaultSpace needs spaces that include it")
        return Grants.legacy()
    if not isinstance(raw, dict) or not raw:
        raise ConfigurationError(
            f'{where}: spaces must be an object of space keys and levels, e.g. {{"work": "write"}}'
        )
    levels: dict[str, Level] = {}
    for key, level in raw.items():
        try:
            check_space_key(key)
            levels[key] = Level.parse(level) if isinstance(level, str) else Level.parse(repr(level))
        except MetaCortexError as error:
            raise ConfigurationError(f"{where}: spaces: {error.message}") from None
    default = entry.get("defaultSpace")
    if default is None:
        default = next(iter(levels)) if len(levels) == 1 else None
        if default is None:
            raise ConfigurationError(
                f"{where}: defaultSpace is required when spaces names more than one space"
            )
    if not isinstance(default, str) or default not in levels:
        raise ConfigurationError(f"{where}: defaultSpace must be one of the keys of spaces")
    return Grants(MappingProxyType(levels), default)


def with_directory(
    profile: Profile, directory: Directory, names: Mapping[str, str] | None = None
) -> Profile:
    """The profile with what its grants mean now: the effective level in each space
    (the lowest of the person's role, membership and the grant, only spaces that
    exist), whether its person is active, and the names of authors. A person who
    does not exist (removed, or an unknown email) holds nothing and is refused."""
    names = MappingProxyType(directory.names()) if names is None else names
    person = (
        directory.by_email(profile.person)
        if "@" in profile.person
        else directory.person(profile.person)
    )
    if person is None:
        return replace(
            profile,
            levels=MappingProxyType({}),
            person_active=False,
            names=names,
            directory=directory,
        )
    return replace(
        profile,
        person=person.id,
        levels=MappingProxyType(effective_levels(person, profile.grants, directory.spaces)),
        person_active=person.active,
        names=names,
        directory=directory,
    )


def _client_token(entry: Mapping[str, Any], where: str) -> bytes:
    token = entry.get("token")
    hashed = entry.get("token_sha256")
    if token is not None and hashed is not None:
        raise ConfigurationError(f"{where}: give token or token_sha256, not both")
    if hashed is not None:
        if not isinstance(hashed, str) or not _HEX64.fullmatch(hashed):
            raise ConfigurationError(
                f"{where}: token_sha256 must be 64 hexadecimal characters (the sha256 of the token)"
            )
        return bytes.fromhex(hashed)
    if token is None:
        raise ConfigurationError(f"{where}: token or token_sha256 is required; {_HOW_TO_GENERATE}")
    if not isinstance(token, str):
        raise ConfigurationError(f"{where}: token must be a string")
    weakness = token_weakness(token)
    if weakness is not None:
        raise ConfigurationError(f"{where}: token {weakness}; {_HOW_TO_GENERATE}")
    return token_digest(token)


def _bool(entry: Mapping[str, Any], key: str, where: str) -> bool:
    value = entry.get(key, False)
    if not isinstance(value, bool):
        raise ConfigurationError(f"{where}: {key} must be true or false")
    return value


def _rate_limit(entry: Mapping[str, Any], where: str, settings: Settings) -> int:
    value = entry.get("rateLimitPerMinute")
    if value is None:
        return settings.metacortex_rate_limit_per_minute
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigurationError(f"{where}: rateLimitPerMinute must be a whole number")
    if not 1 <= value <= MAX_RATE_LIMIT_PER_MINUTE:
        raise ConfigurationError(
            f"{where}: rateLimitPerMinute must be between 1 and {MAX_RATE_LIMIT_PER_MINUTE}, "
            f"got {value}"
        )
    return value


# ------------------------------------------------------------- shared checks
def _known_tools(values: Iterable[str], where: str) -> list[str]:
    tools = [value.strip() for value in values]
    known = tool_catalogue.model_tools()
    for name in tools:
        if name in tool_catalogue.in_group(Group.OWNER):
            raise ConfigurationError(
                f"{where}: {name} is the owner's tool: it is offered only on the admin "
                "endpoint, with METACORTEX_ADMIN_ERASE_TOOL=true"
            )
        if name not in known:
            raise ConfigurationError(
                f"{where}: unknown tool {name!r}; known tools are {', '.join(known)}"
            )
    return tools


def _known_states(values: Iterable[str], where: str) -> list[BranchState]:
    states: list[BranchState] = []
    for value in values:
        try:
            states.append(BranchState(value.strip()))
        except ValueError:
            known = ", ".join(state.value for state in ALL_STATES)
            raise ConfigurationError(
                f"{where}: unknown state {value!r}; known states are {known}"
            ) from None
    return states


def _default_state(
    explicit: str | None, readable: frozenset[BranchState], settings: Settings, where: str
) -> BranchState:
    if explicit is not None:
        [state] = _known_states([explicit], f"{where}defaultFilterState")
        if state not in readable:
            raise ConfigurationError(
                f"{where}defaultFilterState {state.value!r} is not one of allowedFilterStates"
            )
        return state
    if settings.default_filter_state in readable:
        return settings.default_filter_state
    return next(state for state in ALL_STATES if state in readable)


def _origin(value: str, where: str) -> str:
    origin = value.strip()
    if not _ORIGIN.fullmatch(origin):
        raise ConfigurationError(
            f"{where} is not an origin: write scheme://host[:port] exactly as a browser sends "
            "it, without a path, trailing slash or wildcard (e.g. https://claude.ai)"
        )
    return origin
