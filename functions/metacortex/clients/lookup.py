"""The client profiles a command finds before it serves: the environment's and the store's.

``metacortex stdio --client ID`` and ``metacortex init --client ID`` name a profile
that may be defined in ``MCP_CLIENT_PROFILES_JSON`` or kept in the store
(``clients.manage``: the console's clients page, ``metacortex client add``). The
store is the one the settings point at: the data directory's SQLite file, or
Firestore when configured. A data directory whose store does not exist yet holds
no stored client, and is not created by looking.
"""

from __future__ import annotations

from metacortex.access.client_directory import ClientDirectory
from metacortex.access.profiles import Profiles, load_profiles
from metacortex.composition import build_store
from metacortex.config import Settings


def profiles_with_stored(settings: Settings, environment: Profiles | None = None) -> Profiles:
    """The environment's profiles (``environment``, else read from ``settings``) merged
    with the clients kept in the store, as a server on that store serves them."""
    environment = load_profiles(settings) if environment is None else environment
    if settings.store_kind == "sqlite" and not settings.sqlite_path.exists():
        return environment
    store = build_store(settings)
    try:
        return ClientDirectory(environment, settings).attach(store)
    finally:
        store.close()
