"""The OAuth/owner state records (``auth_*``) behave the same on every store."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

from metacortex.domain.records import utc_now
from tests.contract.conftest import StoreFactory


def test_put_get_replace_delete_and_list_by_kind(store_factory: StoreFactory) -> None:
    store = store_factory()
    store.auth_put("client", "b", {"name": "B"}, None)
    store.auth_put("client", "a", {"name": "A", "uris": ["x"]}, None)
    store.auth_put("grant", "g1", {"client": "a"}, utc_now() + timedelta(days=1))

    again = store_factory()  # a second process sees the same records
    assert again.auth_get("client", "a") == {"name": "A", "uris": ["x"]}
    assert again.auth_list("client") == [("a", {"name": "A", "uris": ["x"]}), ("b", {"name": "B"})]
    store.auth_put("client", "a", {"name": "A2"}, None)
    assert again.auth_get("client", "a") == {"name": "A2"}
    assert again.auth_delete("client", "a") is True
    assert again.auth_delete("client", "a") is False
    assert store.auth_get("client", "a") is None
    assert store.auth_get("grant", "a") is None  # kinds are separate namespaces


def test_expired_records_are_never_returned(store_factory: StoreFactory) -> None:
    store = store_factory()
    store.auth_put("code", "old", {"v": 1}, utc_now() - timedelta(seconds=1))
    store.auth_put("code", "new", {"v": 2}, utc_now() + timedelta(minutes=5))

    assert store.auth_get("code", "old") is None
    assert store.auth_consume("code", "old") is None
    assert store.auth_list("code") == [("new", {"v": 2})]


def test_consume_reports_the_first_use_once_and_every_replay_after(
    store_factory: StoreFactory,
) -> None:
    store = store_factory()
    store.auth_put("refresh", "r", {"grant": "g"}, utc_now() + timedelta(minutes=5))

    assert store.auth_consume("refresh", "r") == ({"grant": "g"}, True)
    assert store_factory().auth_consume("refresh", "r") == ({"grant": "g"}, False)
    assert store.auth_consume("refresh", "missing") is None
    store.auth_put("refresh", "r", {"grant": "h"}, None)  # a put resets the mark
    assert store.auth_consume("refresh", "r") == ({"grant": "h"}, True)


def test_the_first_consumption_keeps_its_mark_and_every_replay_sees_it(
    store_factory: StoreFactory,
) -> None:
    store = store_factory()
    store.auth_put("refresh", "r", {"grant": "g"}, utc_now() + timedelta(minutes=5))

    assert store.auth_consume("refresh", "r", {"used_at": 1.0, "answer": "A"}) == (
        {"grant": "g"},
        True,
    )
    replayed = store_factory().auth_consume("refresh", "r", {"used_at": 2.0, "answer": "B"})
    assert replayed == ({"grant": "g", "used_at": 1.0, "answer": "A"}, False)
    assert store.auth_get("refresh", "r") == {"grant": "g", "used_at": 1.0, "answer": "A"}


def test_racing_consumptions_have_one_winner_whose_mark_every_loser_reads(
    store_factory: StoreFactory,
) -> None:
    store_factory().auth_put("code", "c", {"grant": "g"}, utc_now() + timedelta(minutes=5))
    stores = [store_factory() for _ in range(6)]  # six processes presenting one code

    with ThreadPoolExecutor(len(stores)) as pool:
        results = list(
            pool.map(
                lambda pair: pair[1].auth_consume("code", "c", {"answer": pair[0]}),
                enumerate(stores),
            )
        )

    assert all(result is not None for result in results)
    firsts = [i for i, result in enumerate(results) if result is not None and result[1]]
    assert len(firsts) == 1
    for i, result in enumerate(results):
        assert result is not None
        if i != firsts[0]:
            assert result[0] == {"grant": "g", "answer": firsts[0]}
