"""Deactivating a person, or making a writer a reader, reaches every server process on
the store within ``METACORTEX_CLIENT_REFRESH_SECONDS`` (issue 30 §1 and §6).

Two real ``metacortex serve`` processes share one SQLite data directory, each with a
refresh bound of one second. The owner changes Ann through ``access.registry.Registry``
on the same file, from this test process (what ``metacortex person`` and the console
call); both processes are asked with the real MCP JSON-RPC over loopback HTTP, again
and again (no sleep), until a request that started at least one bound after the
change has been answered. That request, and every later one, must see the change.
Requests are timed by when they start, never by how long they take, so a slow
machine cannot make the test pass or fail.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any, Final

import pytest

from metacortex.access.model import Level, Role
from metacortex.access.profiles import new_token
from metacortex.access.registry import Registry
from metacortex.storage.sqlite import SQLiteStore
from tests.oauth_support import tool_call
from tests.processes import serve
from tests.spaces.team import client_entry, store_client

pytestmark = pytest.mark.slow

BOUND_S: Final = 1.0
# However slow the machine, a change must be seen well before this (a failure, not a wait).
DEADLINE_S: Final = 120.0
EMAIL: Final = "ann@example.com"
DEACTIVATED: Final = {
    "error": {
        "code": "forbidden",
        "message": "the person this credential belongs to was deactivated by the server's "
        "owner; it is refused until the owner reactivates them",
    }
}
READ_ONLY: Final = (
    "this credential may only read the space 'lab', not write to it; ask the owner for write access"
)


class Team:
    """Ann (a writer, member of ``family`` and ``lab`` at write) and her client endpoint,
    granted both at write; the owner's registry on the shared file."""

    def __init__(self, data_dir: Path) -> None:
        self.store = SQLiteStore(data_dir / "metacortex.sqlite3")
        self.registry = Registry(self.store)
        for key in ("family", "lab"):
            self.registry.add_space(key)
        self.ann = self.registry.add_person(
            EMAIL, "Ann", Role.WRITER, {"family": Level.WRITE, "lab": Level.WRITE}
        )
        self.token = new_token()
        entry = client_entry(
            "ann-laptop", self.token, EMAIL, {"family": "write", "lab": "write"}, "family"
        )
        store_client(self.store, entry)


@pytest.fixture
def team(tmp_path: Path) -> Iterator[Team]:
    data_dir = tmp_path / "data"
    data_dir.mkdir(mode=0o700)
    made = Team(data_dir)
    try:
        yield made
    finally:
        made.store.close()


@pytest.fixture
def endpoints(team: Team, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """Ann's endpoint on process A and on process B."""
    pytest.importorskip(
        "metacortex.providers.local", reason="LOCAL EMBEDDER NOT AVAILABLE: serve cannot start"
    )
    settings = {
        "METACORTEX_CLIENT_REFRESH_SECONDS": str(BOUND_S),
        "METACORTEX_RATE_LIMIT_PER_MINUTE": "1000000",  # each is asked many times a second
    }
    first, url_a = serve(tmp_path / "data", **settings)
    try:
        second, url_b = serve(tmp_path / "data", **settings)
        try:
            yield f"{url_a}/clients/ann-laptop/mcp", f"{url_b}/clients/ann-laptop/mcp"
        finally:
            second.stop()
    finally:
        first.stop()


Outcome = str


def save_into_lab(url: str, token: str) -> Outcome:
    """``saved``, ``read only`` (the tool error saying so), or ``refused <status>``."""
    answer = tool_call(url, token, "save_context", {"content": "Lab note", "space": "lab"})
    if answer.status_code != 200:
        return f"refused {answer.status_code}"
    result: dict[str, Any] = answer.json()["result"]
    if not result.get("isError"):
        return "saved"
    error = json.loads(result["content"][0]["text"])
    assert error == {"error": {"code": "forbidden", "message": READ_ONLY}}, error
    return "read only"


def deactivated(url: str, token: str) -> Outcome:
    answer = tool_call(url, token, "who_am_i", {})
    if answer.status_code == 403:
        assert answer.json() == DEACTIVATED, answer.text
        return "refused 403"
    assert answer.status_code == 200, answer.text
    return "served"


def seen_after(ask: Callable[[], Outcome], changed_at: float) -> tuple[Outcome, list[Outcome]]:
    """Ask until a request that started one bound after ``changed_at`` is answered:
    (that answer, the answers before it)."""
    before: list[Outcome] = []
    while True:
        started = time.monotonic()
        outcome = ask()
        if started >= changed_at + BOUND_S:
            return outcome, before
        before.append(outcome)
        assert time.monotonic() < changed_at + DEADLINE_S, "the process never answered"


def settles(before: list[Outcome], old: Outcome, new: Outcome) -> bool:
    """Until its next check a process may answer as before; once it answered the new
    way, it never answers the old way again."""
    return set(before) <= {old, new} and before == sorted(before, key=lambda o: o == new)


def test_deactivating_a_person_refuses_their_client_on_both_processes_within_the_bound(
    team: Team, endpoints: tuple[str, str]
) -> None:
    assert [deactivated(url, team.token) for url in endpoints] == ["served", "served"]

    team.registry.change_person(team.ann.id, active=False)
    changed_at = time.monotonic()
    seen = [seen_after(partial(deactivated, url, team.token), changed_at) for url in endpoints]
    later = [deactivated(url, team.token) for url in endpoints]

    team.registry.change_person(team.ann.id, active=True)
    back_at = time.monotonic()
    back = [seen_after(partial(deactivated, url, team.token), back_at)[0] for url in endpoints]

    assert [outcome for outcome, _ in seen] == ["refused 403", "refused 403"]
    assert later == ["refused 403", "refused 403"]
    for _, before in seen:
        assert settles(before, "served", "refused 403"), before
    assert back == ["served", "served"]


def test_a_writer_made_reader_may_only_read_on_both_processes_within_the_bound(
    team: Team, endpoints: tuple[str, str]
) -> None:
    assert [save_into_lab(url, team.token) for url in endpoints] == ["saved", "saved"]

    team.registry.change_person(team.ann.id, role=Role.READER)
    changed_at = time.monotonic()
    seen = [seen_after(partial(save_into_lab, url, team.token), changed_at) for url in endpoints]
    later = [save_into_lab(url, team.token) for url in endpoints]

    assert [outcome for outcome, _ in seen] == ["read only", "read only"]
    assert later == ["read only", "read only"]
    for _, before in seen:
        assert settles(before, "saved", "read only"), before
