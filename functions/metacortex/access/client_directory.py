"""The profiles in effect in one server process: the environment's, then the store's,
computed with the spaces and people in the store (``access.registry``).

Stored clients change while servers run (``clients.manage``), on any instance.
Each process keeps the merged ``Profiles`` and checks the store at most once per
``METACORTEX_CLIENT_REFRESH_SECONDS`` (``refresh``), on the first request after
that time: it reads the change marker (one small record: one document read on
Firestore) and lists the stored clients, spaces and people only when the marker
moved (every change of any of them moves it). Requests in
between cost no store read at all (pinned in ``tests/test_firestore_rpcs.py``).

The bound: a check starts by noting the time, then reads the marker, so a change
committed before a check started is seen by it. A request is served with the
result of a check that started less than ``refresh`` seconds before it arrived;
hence a client paused or removed at time T is refused by every process for every
request that arrives after T + ``refresh``. A credential that matches nothing known
checks again at once (``recheck``): a client added a moment ago (``metacortex client
add``, then its first call) is accepted on its first request. That costs a refused
request one marker read, at a known client id as at an unknown one (an OAuth token
lookup already reads the store for it), so the reads never tell which ids exist.

If the store cannot be read, the last profiles stay in effect and the next
request tries again (the failure is logged): tool calls need the store anyway.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from types import MappingProxyType
from typing import Final

import anyio.to_thread

from metacortex.access import stored_clients
from metacortex.access.model import Directory
from metacortex.access.profiles import Profiles
from metacortex.access.registry import read_directory
from metacortex.config import Settings
from metacortex.errors import MetaCortexError
from metacortex.storage.base import MemoryStore

_log = logging.getLogger("metacortex.clients")
_UNREAD: Final = object()  # no marker read yet (None is "never changed")


class ClientDirectory:
    def __init__(
        self,
        environment: Profiles,
        settings: Settings,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.environment = environment
        self._settings = settings
        self._refresh = settings.metacortex_client_refresh_seconds
        self._clock = clock
        self._profiles = environment
        self._store: MemoryStore | None = None
        self._marker: object = _UNREAD
        self._checked_at = -math.inf
        self._lock = threading.Lock()

    @property
    def profiles(self) -> Profiles:
        """The profiles as last checked (no store read)."""
        return self._profiles

    @property
    def refresh_seconds(self) -> float:
        return self._refresh

    def attach(self, store: MemoryStore) -> Profiles:
        """Start reading stored clients from ``store`` (once it is open); reads them now."""
        self._store = store
        return self.refresh()

    def is_fresh(self) -> bool:
        return self._store is None or self._clock() - self._checked_at < self._refresh

    async def current(self) -> Profiles:
        """The profiles in effect for a request arriving now (see the module's bound)."""
        if self.is_fresh():
            return self._profiles
        return await anyio.to_thread.run_sync(self.refresh)

    async def recheck(self) -> Profiles:
        """The profiles after a check made now, for a credential that matched nothing
        in them (a client added since the last check)."""
        if self._store is None:
            return self._profiles
        self.expire()
        return await anyio.to_thread.run_sync(self.refresh)

    def refresh(self) -> Profiles:
        """Check the store unless another thread just did (thread-safe)."""
        with self._lock:
            store = self._store
            if store is None or self.is_fresh():
                return self._profiles
            started = self._clock()
            try:
                marker = stored_clients.read_marker(store)
                if marker != self._marker:
                    self._profiles = self._merged(
                        stored_clients.read_all(store), read_directory(store)
                    )
                    self._marker = marker
            except MetaCortexError as error:
                _log.warning("stored clients could not be read (%s); keeping the last ones", error)
                return self._profiles
            self._checked_at = started
            return self._profiles

    def expire(self) -> None:
        """Check the store at the next request: this process changed a stored client
        (a credential's own default space), and its next request must see it."""
        with self._lock:
            self._checked_at = -math.inf

    @property
    def directory(self) -> Directory:
        """The spaces and people as last checked (no store read)."""
        return self._profiles.directory

    async def current_directory(self) -> Directory:
        """The spaces and people in effect for a request arriving now (``current``)."""
        return (await self.current()).directory

    def _merged(self, clients: list[stored_clients.StoredClient], directory: Directory) -> Profiles:
        environment = self.environment.clients
        found = stored_clients.valid_profiles(clients, self._settings, frozenset(environment))
        return Profiles(
            admin=self.environment.admin,
            clients=MappingProxyType({**found, **environment}),
        ).resolved(directory)
