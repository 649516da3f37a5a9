"""The grace window of ``auth.tokens`` holds on every store: racing or repeated uses of one
refresh token, from several server instances over one store, get one pair; a use after
the window revokes the family (issue 19 item 4)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

from metacortex.auth.tokens import REFRESH, Exchanged, Presenter, TokenStore
from tests.contract.conftest import StoreFactory

SCOPES = ("memory:read", "memory:write")
CLIENT = Presenter("ip:203.0.113.7", "claude-user")


def _instance(store_factory: StoreFactory, grace_seconds: int = 60) -> TokenStore:
    return TokenStore(
        store_factory(), timedelta(minutes=60), timedelta(days=30), timedelta(seconds=grace_seconds)
    )


def _family(tokens: TokenStore) -> tuple[str, str]:
    grant = tokens.create_grant({"client_id": "c", "preset": "read"})
    issued = tokens.issue(grant, "c", "https://memory.example/mcp", SCOPES, refresh=True)
    assert issued.refresh_token is not None
    return grant, issued.refresh_token


def _use(tokens: TokenStore, refresh_token: str, presenter: Presenter = CLIENT) -> Exchanged:
    binding = tokens.refresh_binding(refresh_token)
    assert binding is not None
    return tokens.exchange(
        REFRESH, refresh_token, binding, SCOPES, refresh=True, presenter=presenter
    )


def test_racing_instances_all_get_the_winners_pair_and_nothing_else_stays(
    store_factory: StoreFactory,
) -> None:
    instances = [_instance(store_factory) for _ in range(4)]
    grant, token = _family(instances[0])

    with ThreadPoolExecutor(len(instances)) as pool:
        results = list(pool.map(lambda tokens: _use(tokens, token), instances))

    assert sorted(result.outcome for result in results) == [
        "issued",
        "repeated",
        "repeated",
        "repeated",
    ]
    pairs = {(r.pair.access_token, r.pair.refresh_token) for r in results if r.pair is not None}
    assert len(pairs) == 1
    [(access, _)] = pairs
    assert instances[3].access(access) is not None
    # The losers' own pairs were deleted unused: one live access token beyond the first.
    assert len(instances[0].store.auth_list("access_token")) == 2
    assert instances[0].grant(grant) is not None


def test_a_use_after_the_window_revokes_the_family(store_factory: StoreFactory) -> None:
    tokens = _instance(store_factory, grace_seconds=0)
    grant, token = _family(tokens)
    first = _use(tokens, token)
    assert first.outcome == "issued"

    assert _use(_instance(store_factory, grace_seconds=0), token).outcome == "reused"
    assert tokens.grant(grant) is None
    assert first.pair is not None
    assert tokens.access(first.pair.access_token) is None


def test_a_repeat_inside_the_window_from_another_presenter_revokes_the_family(
    store_factory: StoreFactory,
) -> None:
    """The grace belongs to the first use: another address (or user agent) presenting the
    spent token, at another instance, gets no pair, and the family is revoked."""
    tokens = _instance(store_factory)
    grant, token = _family(tokens)
    first = _use(tokens, token)
    assert first.pair is not None

    elsewhere = Presenter("ip:198.51.100.9", CLIENT.user_agent)
    replay = _use(_instance(store_factory), token, elsewhere)

    assert (replay.outcome, replay.pair, replay.differs) == ("reused", None, ("address",))
    assert tokens.grant(grant) is None
    assert tokens.access(first.pair.access_token) is None
