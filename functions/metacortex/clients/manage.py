"""Create, list, pause, resume and remove the scoped client endpoints (``/clients/<id>/mcp``).

The owner's API behind the console's clients page, ``metacortex client ...`` and
``metacortex init``::

    clients = ClientManager(store, settings)
    created = clients.create("laptop-codex", tools=("search_context", "fetch_context"))
    created.token          # shown once; the store keeps only its sha256
    clients.pause("laptop-codex"); clients.resume("laptop-codex"); clients.remove(...)

Clients defined in ``MCP_CLIENT_PROFILES_JSON`` are listed too, as read-only: they
change only where they are defined. A change reaches every server process within
``METACORTEX_CLIENT_REFRESH_SECONDS`` (``clients.directory``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from metacortex.clients import stored
from metacortex.clients.stored import Source, StoredClient
from metacortex.config import Settings
from metacortex.domain.records import to_wire_time, utc_now
from metacortex.errors import (
    ConfigurationError,
    Conflict,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
)
from metacortex.server.profiles import (
    CLIENT_ID_PATTERN,
    Profile,
    load_profiles,
    new_token,
    token_digest,
)
from metacortex.storage.base import MemoryStore

DEFAULT_TOOLS: Final = (
    "save_context",
    "search_context",
    "fetch_context",
    "related_context",
    "list_spaces",
    "who_am_i",
)
# OAuth grants are named ``oauth-<grant id>`` in events and on the clients page
# (``auth.presets.grant_profile``): a stored client may not take such a name.
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
        return "paused" if self.paused else "active"


@dataclass(frozen=True, slots=True)
class CreatedClient:
    client: ClientView
    token: str  # shown once, never stored


def _view(profile: Profile, source: Source, **extra: Any) -> ClientView:
    return ClientView(
        id=profile.id,
        source=source,
        tools=profile.tools,
        states=tuple(sorted(state.value for state in profile.readable_states)),
        origins=tuple(sorted(profile.allowed_origins)),
        url_token=profile.allow_url_token,
        paused=profile.paused,
        **extra,
    )


class ClientManager:
    """The client endpoints of one store and one configuration."""

    def __init__(self, store: MemoryStore, settings: Settings) -> None:
        self._store = store
        self._settings = settings
        # The environment's profiles, validated as at start-up (a broken value raises).
        self._environment = load_profiles(settings).clients

    # ---------------------------------------------------------------- read
    def list(self) -> list[ClientView]:
        """Every client endpoint, the environment's and the stored ones, by id."""
        views = [_view(profile, "environment") for profile in self._environment.values()]
        views += [self._stored_view(client) for client in stored.read_all(self._store)]
        return sorted(views, key=lambda view: (view.id, view.source))

    def get(self, client_id: str) -> ClientView:
        """The client serving at ``/clients/<id>/mcp`` (the environment's first)."""
        environment = self._environment.get(client_id)
        if environment is not None:
            return _view(environment, "environment")
        return self._stored_view(self._stored(client_id))

    def _stored(self, client_id: str) -> StoredClient:
        data = self._store.auth_get(stored.KIND, client_id)
        if data is None:
            raise NotFound(f"no client {client_id!r}")
        return stored.decode(client_id, data)

    def _stored_view(self, client: StoredClient) -> ClientView:
        description = client.entry.get("description")
        extra: dict[str, Any] = {
            "description": description if isinstance(description, str) else None,
            "created_at": client.created_at,
            "shadowed": client.id in self._environment,
        }
        try:
            return _view(client.profile(self._settings), "store", **extra)
        except ConfigurationError as error:
            return ClientView(
                client.id, "store", (), (), (), False, client.paused, broken=str(error), **extra
            )

    # --------------------------------------------------------------- write
    def create(
        self,
        client_id: str,
        *,
        tools: Sequence[str] = DEFAULT_TOOLS,
        states: Sequence[str] | None = None,
        origins: Sequence[str] = (),
        url_token: bool = False,
        may_write_lifecycle: bool = False,
        rate_limit_per_minute: int | None = None,
        chatgpt_data_tools: bool = False,
        description: str | None = None,
        created_by: str = "owner",
    ) -> CreatedClient:
        """A new client endpoint with a new token (256 random bits). InvalidArgument
        names what is wrong with the options; Conflict when the id is taken."""
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
        token = new_token()
        entry: dict[str, Any] = {
            "id": client_id,
            "token_sha256": token_digest(token).hex(),
            "allowedTools": list(tools),
        }
        if states is not None:
            entry["allowedFilterStates"] = list(states)
        if origins:
            entry["allowedOrigins"] = list(origins)
        if url_token:
            entry["allowUrlToken"] = True
        if may_write_lifecycle:
            entry["mayWriteLifecycle"] = True
        if rate_limit_per_minute is not None:
            entry["rateLimitPerMinute"] = rate_limit_per_minute
        if chatgpt_data_tools:
            entry["chatgptDataTools"] = True
        if description:
            entry["description"] = description.strip()
        data = stored.record(entry, created_by=created_by)
        client = stored.decode(client_id, data)
        try:
            client.profile(self._settings)
        except ConfigurationError as error:
            raise InvalidArgument(str(error)) from None
        if not self._store.auth_create(stored.KIND, client_id, data, None):
            raise Conflict(f"client {client_id!r} already exists; choose another id")
        stored.mark_changed(self._store)
        return CreatedClient(self._stored_view(client), token)

    def pause(self, client_id: str) -> ClientView:
        """Refuse every request of the client (403) until it is resumed."""
        return self._set_paused(client_id, paused=True)

    def resume(self, client_id: str) -> ClientView:
        return self._set_paused(client_id, paused=False)

    def remove(self, client_id: str) -> None:
        """Delete the client: its token never works again (a new client gets a new one)."""
        self.require_stored(client_id, "removed")
        if not self._store.auth_delete(stored.KIND, client_id):
            raise NotFound(f"no client {client_id!r}")
        stored.mark_changed(self._store)

    def _set_paused(self, client_id: str, *, paused: bool) -> ClientView:
        self.require_stored(client_id, "paused" if paused else "resumed")
        changed = self._store.auth_update(
            stored.KIND,
            client_id,
            {"paused": paused, "changed_at": to_wire_time(utc_now())},
        )
        if changed is None:
            raise NotFound(f"no client {client_id!r}")
        stored.mark_changed(self._store)
        return self._stored_view(stored.decode(client_id, changed))

    def require_stored(self, client_id: str, done: str) -> None:
        """FailedPrecondition when the client is the environment's (``done``: "removed")."""
        if client_id in self._environment:
            raise FailedPrecondition(
                f"client {client_id!r} is defined in {ENVIRONMENT}, so it cannot be {done} "
                "here: change that variable and restart the server"
            )
