"""A credential changing its own default space (``set_default_space``,
``clients/own_default.py``) on every store: a stored client's record and an OAuth
grant's, as another server process on the same store then serves them; the spaces
it does not hold, and the credentials whose default no call changes."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from pydantic import SecretStr

from metacortex.access import stored_clients
from metacortex.access.client_directory import ClientDirectory
from metacortex.access.grants import grant_profile
from metacortex.access.model import Level, Role
from metacortex.access.profiles import Profile, load_profiles
from metacortex.access.registry import Registry
from metacortex.access.rules import no_space_message
from metacortex.auth.tokens import GRANT, TokenStore
from metacortex.clients import ClientManager
from metacortex.clients.own_default import ADMIN_REFUSAL, set_own_default
from metacortex.config import Settings
from metacortex.errors import FailedPrecondition, NotFound
from metacortex.storage.base import MemoryStore
from tests.contract.conftest import StoreFactory

ENV_TOKEN = "env-" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4"
ANN = "ann@example.com"


def _settings() -> Settings:
    entry = {
        "id": "from-env",
        "token": ENV_TOKEN,
        "allowedTools": ["list_spaces", "set_default_space"],
    }
    return Settings(  # type: ignore[call-arg]
        _env_file=None,
        mcp_client_profiles_json=SecretStr(json.dumps([entry])),
        metacortex_client_refresh_seconds=0,
    )


def _team(store: MemoryStore) -> Registry:
    """``family``, ``work`` and ``vault``; Ann is a writer in the first two."""
    registry = Registry(store)
    for key in ("family", "work", "vault"):
        registry.add_space(key, key.title())
    registry.add_person(
        ANN, "Ann", Role.WRITER, {"family": Level.WRITE, "work": Level.WRITE, "vault": Level.WRITE}
    )
    return registry


def _served(store: MemoryStore, settings: Settings, client_id: str) -> Profile:
    """The client as a fresh server process on the store serves it."""
    profile = ClientDirectory(load_profiles(settings), settings).attach(store).get(client_id)
    assert profile is not None
    return profile


def test_a_stored_client_s_default_moves_in_its_record_and_another_process_serves_it(
    store_factory: StoreFactory,
) -> None:
    store, settings = store_factory(), _settings()
    _team(store)
    ClientManager(store, settings).create(
        "ann-laptop",
        person=ANN,
        spaces={"family": Level.WRITE, "work": Level.READ},
        default_space="family",
    )
    before = stored_clients.read_marker(store)

    previous = set_own_default(store, settings, _served(store, settings, "ann-laptop"), "work")

    assert previous == "family"
    [(_, data)] = store_factory().auth_list(stored_clients.KIND)
    assert data["entry"]["defaultSpace"] == "work"
    assert data["entry"]["spaces"] == {"family": "write", "work": "read"}  # levels unchanged
    assert stored_clients.read_marker(store) != before
    elsewhere = _served(store_factory(), settings, "ann-laptop")
    assert elsewhere.access.default_space == "work"
    assert dict(elsewhere.levels) == {"family": Level.WRITE, "work": Level.READ}


def test_an_oauth_grant_s_default_moves_in_the_grant_record(store_factory: StoreFactory) -> None:
    store, settings = store_factory(), _settings()
    directory = _team(store).directory()
    grant_id = TokenStore(store, timedelta(hours=1), timedelta(days=1)).create_grant(
        {
            "client_name": "Claude",
            "redirect_host": "claude.ai",
            "preset": "read-write",
            "person": directory.by_email(ANN).id,  # type: ignore[union-attr]
            "spaces": {"family": "write", "work": "write"},
            "default_space": "family",
        }
    )
    # As the server holds it: resolved with the same spaces and people.
    endpoint = load_profiles(settings).resolved(directory).admin

    def served() -> Profile:
        grant = store_factory().auth_get(GRANT, grant_id)
        assert grant is not None
        return grant_profile(grant_id, grant, endpoint, 60, directory)

    assert served().source == "grant"
    assert set_own_default(store, settings, served(), "work") == "family"

    assert served().access.default_space == "work"
    assert store_factory().auth_get(GRANT, grant_id)["default_space"] == "work"  # type: ignore[index]


def test_a_space_the_credential_does_not_hold_is_exactly_a_missing_one_and_nothing_changes(
    store_factory: StoreFactory,
) -> None:
    store, settings = store_factory(), _settings()
    _team(store)
    ClientManager(store, settings).create(
        "ann-laptop", person=ANN, spaces={"family": None}, default_space="family"
    )
    profile = _served(store, settings, "ann-laptop")
    before = stored_clients.read_marker(store)

    for key in ("vault", "attic"):  # Ann is in vault, the client is not granted it; no attic
        with pytest.raises(NotFound) as refused:
            set_own_default(store, settings, profile, key)
        assert refused.value.message == no_space_message(key)
    assert set_own_default(store, settings, profile, "family") == "family"  # already: no write

    assert stored_clients.read_marker(store) == before
    assert _served(store_factory(), settings, "ann-laptop").access.default_space == "family"


def test_the_admin_token_and_an_environment_client_are_told_where_the_operator_changes_it(
    store_factory: StoreFactory,
) -> None:
    store, settings = store_factory(), _settings()
    _team(store)
    profiles = ClientDirectory(load_profiles(settings), settings).attach(store)
    environment = profiles.get("from-env")
    assert environment is not None

    with pytest.raises(FailedPrecondition) as admin:
        set_own_default(store, settings, profiles.admin, "work")
    with pytest.raises(FailedPrecondition) as configured:
        set_own_default(store, settings, environment, "default")
    with pytest.raises(FailedPrecondition):  # even to what it is already
        set_own_default(store, settings, profiles.admin, "default")

    assert admin.value.message == ADMIN_REFUSAL
    assert "metacortex client add ID --space KEY --default-space KEY" in ADMIN_REFUSAL
    assert configured.value.message == (
        "client 'from-env' is defined in MCP_CLIENT_PROFILES_JSON: its default space is that "
        "entry's defaultSpace, which the operator changes there (then restarts the server)"
    )
    # Neither is offered the tool: only a credential with a record of its own lists it.
    assert "set_default_space" not in profiles.admin.tools
    assert "set_default_space" not in environment.tools
    assert "set_default_space" in environment.allowed_tools
