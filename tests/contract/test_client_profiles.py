"""Client endpoints kept in the store (issue 21 §2) behave the same on every store:
the two atomic ``auth_*`` steps they use, and ``ClientManager`` / ``ClientDirectory``
over them, as a second server process on the same store sees them."""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta

import anyio
import pytest
from pydantic import SecretStr

from metacortex.access import stored_clients
from metacortex.access.client_directory import ClientDirectory
from metacortex.access.profiles import load_profiles, token_digest
from metacortex.auth.tokens import GRANT, REFRESH, Presenter, TokenStore
from metacortex.clients import ClientManager
from metacortex.clients.grants import list_grants, pause_grant, resume_grant, revoke_grant
from metacortex.config import Settings
from metacortex.domain.records import utc_now
from metacortex.errors import Conflict, FailedPrecondition, InvalidArgument, NotFound
from tests.contract.conftest import StoreFactory

ENV_TOKEN = "env-" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4"
RESOURCE = "https://memory.example/mcp"


def _settings(refresh: float = 10.0) -> Settings:
    entry = {"id": "from-env", "token": ENV_TOKEN, "allowedTools": ["search_context"]}
    return Settings(  # type: ignore[call-arg]
        _env_file=None,
        mcp_client_profiles_json=SecretStr(json.dumps([entry])),
        metacortex_client_refresh_seconds=refresh,
    )


# ------------------------------------------------------------ store steps
def test_auth_create_writes_only_when_no_live_record_has_the_key(
    store_factory: StoreFactory,
) -> None:
    store = store_factory()
    assert store.auth_create("client_profile", "a", {"v": 1}, None) is True
    assert store_factory().auth_create("client_profile", "a", {"v": 2}, None) is False
    assert store.auth_get("client_profile", "a") == {"v": 1}
    store.auth_put("code", "old", {"v": 1}, utc_now() - timedelta(seconds=1))
    assert store.auth_create("code", "old", {"v": 3}, utc_now() + timedelta(minutes=1)) is True
    assert store.auth_get("code", "old") == {"v": 3}


def test_auth_update_merges_into_a_live_record_and_never_brings_a_deleted_one_back(
    store_factory: StoreFactory,
) -> None:
    store = store_factory()
    later = utc_now() + timedelta(minutes=5)
    store.auth_put("grant", "g", {"client_name": "Claude", "paused": False}, later)
    store.auth_consume("grant", "g")

    assert store.auth_update("grant", "g", {"paused": True}) == {
        "client_name": "Claude",
        "paused": True,
    }
    again = store_factory()
    assert again.auth_get("grant", "g") == {"client_name": "Claude", "paused": True}
    assert again.auth_consume("grant", "g") == ({"client_name": "Claude", "paused": True}, False)
    assert again.auth_delete("grant", "g") is True
    assert store.auth_update("grant", "g", {"paused": False}) is None
    assert store.auth_get("grant", "g") is None
    store.auth_put("grant", "gone", {"v": 1}, utc_now() - timedelta(seconds=1))
    assert store.auth_update("grant", "gone", {"v": 2}) is None


def test_auth_extend_moves_only_the_expiry_and_never_creates(
    store_factory: StoreFactory,
) -> None:
    store = store_factory()
    soon, later = utc_now() + timedelta(minutes=1), utc_now() + timedelta(days=30)
    store.auth_put("grant", "g", {"client_name": "Claude"}, soon)
    store.auth_consume("grant", "g")
    store.auth_update("grant", "g", {"paused": True})

    assert store_factory().auth_extend("grant", "g", later) is True
    assert store.auth_get("grant", "g") == {"client_name": "Claude", "paused": True}
    assert store.auth_consume("grant", "g") == ({"client_name": "Claude", "paused": True}, False)
    store.auth_delete("grant", "g")
    assert store.auth_extend("grant", "g", later) is False
    assert store.auth_get("grant", "g") is None
    assert store.auth_list("grant") == []


def test_a_grant_paused_while_its_refresh_token_is_exchanged_stays_paused(
    store_factory: StoreFactory,
) -> None:
    """The token endpoint reads the grant, then spends the refresh token and extends the
    grant's life. Before, the extension rewrote the grant as the endpoint had read it,
    so a pause (or a revocation) landing in between was undone."""
    store = store_factory()
    tokens = TokenStore(store, timedelta(minutes=60), timedelta(days=30))
    grant_id = tokens.create_grant({"client_id": "c", "preset": "read"})
    first = tokens.issue(grant_id, "c", RESOURCE, ("memory:read",), refresh=True)
    assert first.refresh_token is not None
    binding = tokens.refresh_binding(first.refresh_token)
    assert binding is not None
    assert tokens.grant(grant_id) is not None  # the token endpoint's read

    pause_grant(store_factory(), grant_id)
    exchanged = tokens.exchange(
        REFRESH,
        first.refresh_token,
        binding,
        ("memory:read",),
        refresh=True,
        presenter=Presenter("ip:203.0.113.7", "client"),
    )

    assert exchanged.outcome == "issued"
    grant = store_factory().auth_get(GRANT, grant_id)
    assert grant is not None
    assert grant["paused"] is True


# ------------------------------------------------------------- the manager
def test_a_created_client_is_kept_with_its_token_hashed_and_serves_in_another_process(
    store_factory: StoreFactory,
) -> None:
    store = store_factory()
    settings = _settings()
    created = ClientManager(store, settings).create(
        "laptop", tools=["search_context", "fetch_context"], description="my laptop"
    )

    [(key, data)] = store_factory().auth_list(stored_clients.KIND)
    assert key == "laptop"
    assert created.token not in json.dumps(data)
    assert data["entry"]["token_sha256"] == hashlib.sha256(created.token.encode()).hexdigest()
    directory = ClientDirectory(load_profiles(settings), settings)
    directory.attach(store_factory())
    profile = directory.profiles.get("laptop")
    assert profile is not None
    assert profile.token_sha256 == token_digest(created.token)
    assert profile.tools == ("search_context", "fetch_context")
    assert created.client.description == "my laptop"


def test_list_shows_every_client_and_the_environments_as_read_only(
    store_factory: StoreFactory,
) -> None:
    store = store_factory()
    manager = ClientManager(store, _settings())
    first = manager.create("a-first")
    second = manager.create("b-second", url_token=True)

    listed = {c.id: c for c in ClientManager(store_factory(), _settings()).list()}

    assert list(listed) == ["a-first", "b-second", "from-env"]
    assert listed["from-env"].read_only
    assert listed["from-env"].source == "environment"
    assert not listed["a-first"].read_only
    assert listed["b-second"].url_token
    assert first.token != second.token


def test_pause_resume_and_remove_change_the_stored_client_and_the_marker(
    store_factory: StoreFactory,
) -> None:
    store = store_factory()
    manager = ClientManager(store, _settings())
    manager.create("agent")
    versions = [stored_clients.read_marker(store)]

    assert manager.pause("agent").paused is True
    versions.append(stored_clients.read_marker(store_factory()))
    assert manager.get("agent").status == "paused"
    assert manager.resume("agent").paused is False
    versions.append(stored_clients.read_marker(store))
    manager.remove("agent")
    versions.append(stored_clients.read_marker(store))

    assert None not in versions
    assert len(set(versions)) == 4
    with pytest.raises(NotFound):
        manager.get("agent")
    with pytest.raises(NotFound):
        manager.pause("agent")  # a removed client is never brought back
    assert store.auth_get(stored_clients.KIND, "agent") is None


def test_environment_clients_cannot_be_changed_and_ids_cannot_clash(
    store_factory: StoreFactory,
) -> None:
    manager = ClientManager(store_factory(), _settings())
    manager.create("taken")

    with pytest.raises(FailedPrecondition, match="MCP_CLIENT_PROFILES_JSON"):
        manager.pause("from-env")
    with pytest.raises(FailedPrecondition, match="restart"):
        manager.remove("from-env")
    with pytest.raises(Conflict, match="MCP_CLIENT_PROFILES_JSON"):
        manager.create("from-env")
    with pytest.raises(Conflict, match="already exists"):
        ClientManager(store_factory(), _settings()).create("taken")
    with pytest.raises(InvalidArgument, match="OAuth grants"):
        manager.create("oauth-abc")
    with pytest.raises(InvalidArgument, match="URL path"):
        manager.create("no spaces")
    with pytest.raises(InvalidArgument, match="unknown tool 'erase_everything'"):
        manager.create("bad-tools", tools=["erase_everything"])
    assert [c.id for c in manager.list()] == ["from-env", "taken"]


# ------------------------------------------------------------ the directory
def test_a_process_sees_a_change_made_elsewhere_at_its_first_check_after_the_bound(
    store_factory: StoreFactory,
) -> None:
    """The clock is driven by hand: ``refresh`` seconds after a check, the next one
    reads the marker; in between nothing is read."""
    now = [0.0]
    settings = _settings(refresh=5.0)
    directory = ClientDirectory(load_profiles(settings), settings, clock=lambda: now[0])
    directory.attach(store_factory())
    other = ClientManager(store_factory(), settings)
    other.create("late")

    now[0] = 4.9
    assert directory.is_fresh()
    assert directory.refresh().get("late") is None  # within the bound: the old copy
    now[0] = 5.0
    assert not directory.is_fresh()
    assert directory.refresh().get("late") is not None
    other.pause("late")
    now[0] = 9.9
    profile = directory.refresh().get("late")
    assert profile is not None
    assert profile.paused is False
    now[0] = 10.0
    profile = directory.refresh().get("late")
    assert profile is not None
    assert profile.paused is True
    other.remove("late")
    now[0] = 15.0
    assert directory.refresh().get("late") is None
    assert directory.refresh().get("from-env") is not None


def test_a_stored_record_that_is_not_a_valid_profile_is_left_out_and_listed_as_broken(
    store_factory: StoreFactory,
) -> None:
    store = store_factory()
    settings = _settings()
    ClientManager(store, settings).create("good")
    store.auth_put(
        stored_clients.KIND, "edited", {"entry": {"id": "edited", "allowedTools": []}}, None
    )
    stored_clients.mark_changed(store)

    directory = ClientDirectory(load_profiles(settings), settings)
    profiles = directory.attach(store_factory())

    assert sorted(profiles.clients) == ["from-env", "good"]
    broken = ClientManager(store, settings).get("edited")
    assert broken.broken is not None
    assert "token or token_sha256 is required" in broken.broken


# ------------------------------------------------------------ OAuth grants
def test_grants_are_paused_resumed_and_revoked_at_the_grant_level(
    store_factory: StoreFactory,
) -> None:
    store = store_factory()
    expiry = utc_now() + timedelta(days=30)
    store.auth_put(
        "grant",
        "g1",
        {"client_name": "Claude", "redirect_host": "claude.ai", "preset": "read"},
        expiry,
    )

    assert pause_grant(store, "g1").paused is True
    [grant] = list_grants(store_factory())
    assert (grant.paused, grant.label, grant.client_id) == (True, "Claude (claude.ai)", "oauth-g1")
    assert resume_grant(store, "g1").paused is False
    revoke_grant(store, "g1")
    assert list_grants(store) == []
    with pytest.raises(NotFound):
        pause_grant(store, "g1")
    with pytest.raises(NotFound):
        revoke_grant(store, "g1")


def test_a_credential_that_matched_nothing_checks_again_at_once(
    store_factory: StoreFactory,
) -> None:
    """README's first hour: ``client add``, then the client's first call at once. Within
    the refresh bound the old copy would refuse it; a recheck finds it."""
    settings = _settings(refresh=3600.0)
    directory = ClientDirectory(load_profiles(settings), settings, clock=lambda: 0.0)
    directory.attach(store_factory())
    other = ClientManager(store_factory(), settings)

    other.create("first")
    assert directory.refresh().get("first") is None  # within the bound: the old copy
    assert anyio.run(directory.recheck).get("first") is not None
