"""Create, list, pause, resume and remove the scoped client endpoints (``/clients/<id>/mcp``),
and change the spaces they are granted.

The owner's API behind the console's clients page, ``metacortex client ...`` and
``metacortex init``::

    clients = ClientManager(store, settings)
    created = clients.create("laptop-codex", tools=("search_context", "fetch_context"))
    created.token          # shown once; the store keeps only its sha256
    clients.pause("laptop-codex"); clients.resume("laptop-codex"); clients.remove(...)
    clients.create("ann-laptop", person="ann@example.com", spaces={"family": None})
    clients.grant("ann-laptop", "work", Level.READ); clients.ungrant("ann-laptop", "work")

Every client belongs to one person (``owner`` unless said) and is granted spaces of
that person's, each at a level, one of them its default. A space given without a
level gets the person's own level there; a client given no space gets its default
space (``default`` unless said) at the person's level. A space the person is not a
member of is refused, naming the ``metacortex person grant`` that makes them one.
What a client may do now in each space (``ClientView.levels``) is computed by
``access.profiles.with_directory`` with the store's spaces and people, never here.

Clients defined in ``MCP_CLIENT_PROFILES_JSON`` are listed too, as read-only: they
change only where they are defined. A change reaches every server process within
``METACORTEX_CLIENT_REFRESH_SECONDS`` (``access.client_directory``).
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from metacortex import tool_catalogue
from metacortex.access import stored_clients
from metacortex.access.model import DEFAULT_SPACE, OWNER_ID, Directory, Grants, Level, Person
from metacortex.access.profiles import (
    CLIENT_ID_PATTERN,
    Profile,
    load_profiles,
    new_token,
    token_digest,
    with_directory,
)
from metacortex.access.registry import read_directory
from metacortex.access.stored_clients import Source, StoredClient
from metacortex.config import Settings
from metacortex.domain.records import to_wire_time, utc_now
from metacortex.errors import (
    ConfigurationError,
    Conflict,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
)
from metacortex.storage.base import MemoryStore

# OAuth grants are named ``oauth-<grant id>`` in events and on the clients page
# (``access.grants.grant_profile``): a stored client may not take such a name.
RESERVED_PREFIX: Final = "oauth-"
ENVIRONMENT: Final = "MCP_CLIENT_PROFILES_JSON"


@dataclass(frozen=True, slots=True)
class ClientView:
    """One client endpoint as the owner sees it (never its token)."""

    id: str
    source: Source
    tools: tuple[str, ...]
    states: tuple[str, ...]
    origins: tuple[str, ...]
    url_token: bool
    paused: bool
    description: str | None = None
    created_at: str | None = None
    # A stored client whose id the environment also defines: the environment's serves.
    shadowed: bool = False
    # A stored record that is not a valid profile (edited by hand): it does not serve.
    broken: str | None = None
    # Whose credential it is, as its entry names it (an email, or ``owner``); the person
    # that is now, their name and whether they are active (None and inactive: nobody
    # has that email; None and active: the people were not read).
    person: str = OWNER_ID
    person_id: str | None = OWNER_ID
    person_name: str | None = None
    person_active: bool = True
    # What it was granted (space key -> "read" | "write") and its default space.
    grants: dict[str, str] = field(default_factory=lambda: {DEFAULT_SPACE: Level.WRITE.word})
    default_space: str = DEFAULT_SPACE
    # The level it gets in each space now: ``access.profiles.with_directory`` with the
    # store's spaces and people. None when they were not read (pause and resume
    # answer without reading them).
    levels: dict[str, str] | None = None

    @property
    def path(self) -> str:
        return f"/clients/{self.id}/mcp"

    @property
    def read_only(self) -> bool:
        return self.source == "environment"

    @property
    def status(self) -> str:
        if self.broken is not None:
            return "not serving: invalid record"
        if self.shadowed:
            return f"not in effect: {ENVIRONMENT} defines the same id"
        if self.paused:
            return "paused"
        if self.levels is not None and self.person_id is None:
            return f"refused: no person {self.person!r}"
        return "active" if self.person_active else "refused: its person is deactivated"


@dataclass(frozen=True, slots=True)
class CreatedClient:
    client: ClientView
    token: str  # shown once, never stored


def _view(
    profile: Profile, source: Source, directory: Directory | None, **extra: Any
) -> ClientView:
    """The view of a profile as its entry says; with ``directory``, also what it means now."""
    person: Person | None = None
    levels: dict[str, str] | None = None
    if directory is not None:
        resolved = with_directory(profile, directory)
        person = directory.person(resolved.person)
        levels = {key: level.word for key, level in sorted(resolved.levels.items())}
    return ClientView(
        id=profile.id,
        source=source,
        tools=profile.tools,
        states=tuple(sorted(state.value for state in profile.readable_states)),
        origins=tuple(sorted(profile.allowed_origins)),
        url_token=profile.allow_url_token,
        paused=profile.paused,
        person=profile.person,
        person_id=person.id if person is not None else None,
        person_name=person.name if person is not None else None,
        person_active=person.active if person is not None else directory is None,
        grants=_words(profile.grants),
        default_space=profile.grants.default,
        levels=levels,
        **extra,
    )


def _words(grants: Grants) -> dict[str, str]:
    return {key: level.word for key, level in sorted(grants.levels.items())}


class ClientManager:
    """The client endpoints of one store and one configuration."""

    def __init__(self, store: MemoryStore, settings: Settings) -> None:
        self._store = store
        self._settings = settings
        # The environment's profiles, validated as at start-up (a broken value raises).
        self._environment = load_profiles(settings).clients
        self._known: Directory | None = None

    def directory(self) -> Directory:
        """The store's spaces and people, read once per manager (a manager lives for one
        request or one command; changing clients never changes them)."""
        if self._known is None:
            self._known = read_directory(self._store)
        return self._known

    # ---------------------------------------------------------------- read
    def list(self) -> list[ClientView]:
        """Every client endpoint, the environment's and the stored ones, by id, with the
        levels each gets now."""
        directory = self.directory()
        views = [_view(profile, "environment", directory) for profile in self._environment.values()]
        views += [
            self._stored_view(client, directory) for client in stored_clients.read_all(self._store)
        ]
        return sorted(views, key=lambda view: (view.id, view.source))

    def get(self, client_id: str) -> ClientView:
        """The client serving at ``/clients/<id>/mcp`` (the environment's first)."""
        environment = self._environment.get(client_id)
        if environment is not None:
            return _view(environment, "environment", self.directory())
        return self._stored_view(self._stored(client_id), self.directory())

    def _stored(self, client_id: str) -> StoredClient:
        data = self._store.auth_get(stored_clients.KIND, client_id)
        if data is None:
            raise NotFound(f"no client {client_id!r}")
        return stored_clients.decode(client_id, data)

    def _stored_view(self, client: StoredClient, directory: Directory | None) -> ClientView:
        description = client.entry.get("description")
        extra: dict[str, Any] = {
            "description": description if isinstance(description, str) else None,
            "created_at": client.created_at,
            "shadowed": client.id in self._environment,
        }
        try:
            return _view(client.profile(self._settings), "store", directory, **extra)
        except ConfigurationError as error:
            return ClientView(
                client.id, "store", (), (), (), False, client.paused, broken=str(error), **extra
            )

    # --------------------------------------------------------------- write
    def create(
        self,
        client_id: str,
        *,
        tools: Sequence[str] | None = None,
        states: Sequence[str] | None = None,
        origins: Sequence[str] = (),
        url_token: bool = False,
        may_write_lifecycle: bool = False,
        rate_limit_per_minute: int | None = None,
        chatgpt_data_tools: bool = False,
        description: str | None = None,
        created_by: str = "owner",
        person: str = OWNER_ID,
        spaces: Mapping[str, Level | None] | None = None,
        default_space: str | None = None,
    ) -> CreatedClient:
        """A new client endpoint with a new token (256 random bits), ``person``'s (an
        email, or ``owner``), allowed ``tools`` (None: the catalogue's default tools),
        granted ``spaces`` (key -> level, None: the person's own
        level there) with ``default_space`` among them (see the module's note for what
        is granted when they are left out). InvalidArgument names what is wrong with the
        options; NotFound an unknown person or space; FailedPrecondition a space the
        person is not a member of; Conflict when the id is taken."""
        client_id = self._new_id(client_id)
        owner = self._person(person)
        levels, default = self._client_spaces(owner, spaces, default_space)
        token = new_token()
        entry: dict[str, Any] = {
            "id": client_id,
            "token_sha256": token_digest(token).hex(),
            "allowedTools": list(tool_catalogue.default_tools() if tools is None else tools),
            **_grant_fields(levels, default),
            **({} if owner.is_owner else {"person": owner.email}),
            **_options(
                states=states,
                origins=origins,
                url_token=url_token,
                may_write_lifecycle=may_write_lifecycle,
                rate_limit_per_minute=rate_limit_per_minute,
                chatgpt_data_tools=chatgpt_data_tools,
                description=description,
            ),
        }
        data = stored_clients.record(entry, created_by=created_by)
        client = stored_clients.decode(client_id, data)
        try:
            client.profile(self._settings)
        except ConfigurationError as error:
            raise InvalidArgument(str(error)) from None
        if not self._store.auth_create(stored_clients.KIND, client_id, data, None):
            raise Conflict(f"client {client_id!r} already exists; choose another id")
        stored_clients.mark_changed(self._store)
        return CreatedClient(self._stored_view(client, self.directory()), token)

    def _new_id(self, client_id: str) -> str:
        """``client_id`` as a new client's id, or what is wrong with it."""
        client_id = client_id.strip()
        if not CLIENT_ID_PATTERN.fullmatch(client_id):
            raise InvalidArgument(
                "a client id is 1-64 letters, digits, '-' or '_', starting with a letter or "
                f"digit (it becomes the URL path /clients/<id>/mcp); got {client_id[:70]!r}"
            )
        if client_id.startswith(RESERVED_PREFIX):
            raise InvalidArgument(
                f"client ids starting with {RESERVED_PREFIX!r} name OAuth grants; choose another"
            )
        if client_id in self._environment:
            raise Conflict(f"client {client_id!r} is already defined in {ENVIRONMENT}")
        return client_id

    def _client_spaces(
        self, owner: Person, spaces: Mapping[str, Level | None] | None, default_space: str | None
    ) -> tuple[dict[str, Level], str]:
        """The levels a new client of ``owner`` gets in each space and its default space
        (see the module's note for what is granted when they are left out)."""
        if not spaces and owner.level_in(default_space or DEFAULT_SPACE) is None:
            theirs = " ".join(
                f"{key}:{level.word}"
                for key in sorted(self.directory().spaces)
                if (level := owner.level_in(key)) is not None
            )
            raise InvalidArgument(
                f"{owner.name} is not a member of the space "
                f"{default_space or DEFAULT_SPACE!r}, which a client gets when given no "
                f"space: name its spaces (--space KEY); {owner.name}'s are: "
                f"{theirs or 'none yet'}"
            )
        wanted = dict(spaces or {(default_space or DEFAULT_SPACE): None})
        levels = {key: self._grantable(owner, key, level) for key, level in wanted.items()}
        default = default_space or (next(iter(levels)) if len(levels) == 1 else None)
        if default is None:
            raise InvalidArgument(
                f"the client gets {len(levels)} spaces ({', '.join(levels)}): name the one "
                "calls without a space act in (--default-space KEY)"
            )
        if default not in levels:
            raise InvalidArgument(
                f"its default space {default!r} must be one of the spaces it gets "
                f"({', '.join(levels)})"
            )
        return levels, default

    def pause(self, client_id: str) -> ClientView:
        """Refuse every request of the client (403) until it is resumed."""
        return self._set_paused(client_id, paused=True)

    def resume(self, client_id: str) -> ClientView:
        return self._set_paused(client_id, paused=False)

    def remove(self, client_id: str) -> None:
        """Delete the client: its token never works again (a new client gets a new one)."""
        self.require_stored(client_id, "removed")
        if not self._store.auth_delete(stored_clients.KIND, client_id):
            raise NotFound(f"no client {client_id!r}")
        stored_clients.mark_changed(self._store)

    def _set_paused(self, client_id: str, *, paused: bool) -> ClientView:
        self.require_stored(client_id, "paused" if paused else "resumed")
        changed = self._store.auth_update(
            stored_clients.KIND,
            client_id,
            {"paused": paused, "changed_at": to_wire_time(utc_now())},
        )
        if changed is None:
            raise NotFound(f"no client {client_id!r}")
        stored_clients.mark_changed(self._store)
        return self._stored_view(stored_clients.decode(client_id, changed), None)

    # ------------------------------------------------------------- spaces
    def grant(
        self, client_id: str, key: str, level: Level | None = None, *, make_default: bool = False
    ) -> ClientView:
        """Grant a stored client a space of its person's (``level`` None: the person's own
        level there), or change its level; ``make_default``: calls without a space act
        there from now on."""
        self.require_stored(client_id, "changed")
        client = self._stored(client_id)
        profile = self._profile(client)
        grants = profile.grants
        level = self._grantable(self._person(profile.person), key, level)
        return self._set_grants(
            client,
            {**grants.levels, key: level},
            key if make_default else grants.default,
        )

    def set_default(self, client_id: str, key: str) -> ClientView:
        """Make ``key``, a space the stored client is granted, its default: calls without a
        space act there from now on (levels unchanged)."""
        self.require_stored(client_id, "changed")
        client = self._stored(client_id)
        grants = self._profile(client).grants
        if key not in grants.levels:
            raise NotFound(f"client {client_id!r} is not granted the space {key!r}")
        return self._set_grants(client, grants.levels, key)

    def ungrant(self, client_id: str, key: str) -> ClientView:
        """Take a space from a stored client; neither its only space nor its default."""
        self.require_stored(client_id, "changed")
        client = self._stored(client_id)
        grants = self._profile(client).grants
        if key not in grants.levels:
            raise NotFound(f"client {client_id!r} is not granted the space {key!r}")
        others = sorted(set(grants.levels) - {key})
        if not others:
            raise FailedPrecondition(
                f"{key!r} is the only space client {client_id!r} holds: grant it another "
                f"first (`metacortex client grant {client_id} KEY --default`), or remove "
                f"the client (`metacortex client remove {client_id}`)"
            )
        if key == grants.default:
            raise FailedPrecondition(
                f"the space {key!r} is the default of client {client_id!r}: make another space "
                f"its default first (`metacortex client grant {client_id} {others[0]} --default`)"
            )
        return self._set_grants(
            client, {k: v for k, v in grants.levels.items() if k != key}, grants.default
        )

    def holding(self, key: str) -> builtins.list[ClientView]:
        """Every client endpoint granted the space, the environment's too (by id)."""
        return [view for view in self.list() if key in view.grants]

    def drop_space(self, key: str) -> builtins.list[ClientView]:
        """Take a space that is being removed from every stored client granted it (a
        client whose default it was gets its first other space as default): the clients
        changed. Refused, changing nothing (FailedPrecondition), while a client holds
        only that space: it would hold nothing."""
        changes: builtins.list[tuple[StoredClient, dict[str, Level], str]] = []
        for client in stored_clients.read_all(self._store):
            try:
                grants = self._profile(client).grants
            except InvalidArgument:
                continue  # a broken record serves nothing; it is removed as it is
            if key not in grants.levels:
                continue
            rest = {k: v for k, v in grants.levels.items() if k != key}
            if not rest:
                raise FailedPrecondition(
                    f"client {client.id!r} holds only the space {key!r}: grant it another "
                    f"(`metacortex client grant {client.id} KEY --default`) or remove it "
                    f"(`metacortex client remove {client.id}`) first"
                )
            default = grants.default if grants.default != key else fallback_space(rest)
            changes.append((client, rest, default))
        changed = [self._set_grants(c, rest, default, mark=False) for c, rest, default in changes]
        if changed:
            stored_clients.mark_changed(self._store)
        return changed

    def _profile(self, client: StoredClient) -> Profile:
        try:
            return client.profile(self._settings)
        except ConfigurationError as error:
            raise InvalidArgument(
                f"{error}; remove it (`metacortex client remove {client.id}`) and add it again"
            ) from None

    def _person(self, who: str) -> Person:
        """The person a client is for, by email or id: they must exist and be active."""
        directory = self.directory()
        person = directory.by_email(who) if "@" in who else directory.person(who)
        if person is None:
            raise NotFound(
                f"no person {who!r}; add them first "
                f"(`metacortex person add {who} --name NAME --role writer`)"
            )
        if not person.active:
            raise FailedPrecondition(
                f"{person.name} ({who}) is deactivated; reactivate them first "
                f"(`metacortex person reactivate {who}`)"
            )
        return person

    def _grantable(self, person: Person, key: str, level: Level | None) -> Level:
        """The level a client of ``person`` is granted in ``key``: ``level``, else the
        person's own; refused for a space that does not exist or they are not in."""
        if key not in self.directory().spaces:
            raise NotFound(f"no space {key!r}; create it first (`metacortex space add {key}`)")
        own = person.level_in(key)
        if own is None:
            raise FailedPrecondition(
                f"{person.name} is not a member of the space {key!r}; make them one first "
                f"(`metacortex person grant {person.email} {key}`)"
            )
        return own if level is None else level

    def _set_grants(
        self,
        client: StoredClient,
        levels: Mapping[str, Level],
        default: str,
        *,
        mark: bool = True,
    ) -> ClientView:
        entry = {**client.entry, **_grant_fields(levels, default)}
        changed = self._store.auth_update(
            stored_clients.KIND, client.id, {"entry": entry, "changed_at": to_wire_time(utc_now())}
        )
        if changed is None:
            raise NotFound(f"no client {client.id!r}")
        if mark:
            stored_clients.mark_changed(self._store)
        return self._stored_view(stored_clients.decode(client.id, changed), self.directory())

    def require_stored(self, client_id: str, done: str) -> None:
        """FailedPrecondition when the client is the environment's (``done``: "removed")."""
        if client_id in self._environment:
            raise FailedPrecondition(
                f"client {client_id!r} is defined in {ENVIRONMENT}, so it cannot be {done} "
                "here: change that variable and restart the server"
            )


def _options(
    *,
    states: Sequence[str] | None,
    origins: Sequence[str],
    url_token: bool,
    may_write_lifecycle: bool,
    rate_limit_per_minute: int | None,
    chatgpt_data_tools: bool,
    description: str | None,
) -> dict[str, Any]:
    """The optional fields of a new client's profile entry, only those given."""
    fields: dict[str, Any] = {
        "allowedFilterStates": None if states is None else list(states),
        "allowedOrigins": list(origins) if origins else None,
        "allowUrlToken": True if url_token else None,
        "mayWriteLifecycle": True if may_write_lifecycle else None,
        "rateLimitPerMinute": rate_limit_per_minute,
        "chatgptDataTools": True if chatgpt_data_tools else None,
        "description": description.strip() if description else None,
    }
    return {key: value for key, value in fields.items() if value is not None}


def _grant_fields(levels: Mapping[str, Level], default: str) -> dict[str, Any]:
    """A profile entry's ``spaces`` and ``defaultSpace`` (``access.profiles.entry_grants``)."""
    return {
        "spaces": {key: level.word for key, level in sorted(levels.items())},
        "defaultSpace": default,
    }


def fallback_space(keys: Iterable[str]) -> str:
    """The default a credential falls back to when its default space is removed:
    ``default`` when it holds it, else the first of the others."""
    return min(keys, key=lambda key: (key != DEFAULT_SPACE, key))
