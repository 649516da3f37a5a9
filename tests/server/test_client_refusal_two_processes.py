"""A client paused, resumed or removed in one server process is refused (or let in) by
another process on the same store within the bound (issue 21 §2).

Two real ``metacortex serve`` processes share one SQLite data directory, each with
``METACORTEX_CLIENT_REFRESH_SECONDS=1``. The owner changes the client through process
A's console (signed in, CSRF forms); process B is asked with the real MCP JSON-RPC
over loopback HTTP, again and again (no sleep), until a request that started at least
one bound after the change has been answered. That request, and every later one, must
see the change. Requests are timed by when they start, never by how long they take,
so a slow machine cannot make the test pass or fail.
"""

from __future__ import annotations

import html
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import httpx2
import pytest

from metacortex.owner import set_passphrase
from metacortex.storage.sqlite import SQLiteStore
from tests.oauth_support import PASSPHRASE, hidden, tools_list
from tests.processes import WatchedProcess, serve

pytestmark = pytest.mark.slow

BOUND_S: Final = 1.0
# However slow the machine, a change must be seen well before this (a failure, not a wait).
DEADLINE_S: Final = 120.0


def _serve(data_dir: Path) -> tuple[WatchedProcess, str]:
    return serve(
        data_dir,
        METACORTEX_CLIENT_REFRESH_SECONDS=str(BOUND_S),
        METACORTEX_RATE_LIMIT_PER_MINUTE="1000000",  # B is asked many times a second
    )


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[tuple[str, str]]:
    pytest.importorskip(
        "metacortex.providers.local", reason="LOCAL EMBEDDER NOT AVAILABLE: serve cannot start"
    )
    data_dir = tmp_path / "data"
    data_dir.mkdir(mode=0o700)
    store = SQLiteStore(data_dir / "metacortex.sqlite3")
    set_passphrase(store, PASSPHRASE)
    store.close()
    first, url_a = _serve(data_dir)  # A generates the admin token; B then reads it
    try:
        second, url_b = _serve(data_dir)
        try:
            yield url_a, url_b
        finally:
            second.stop()
    finally:
        first.stop()


class Console:
    """The owner in process A's console."""

    def __init__(self, url: str) -> None:
        self.http = httpx2.Client(base_url=url, timeout=60, follow_redirects=False)
        page = self.http.get("/console")
        signed = self.http.post(
            "/owner/sign-in",
            data={
                "csrf": hidden(page.text, "csrf"),
                "next": hidden(page.text, "next"),
                "passphrase": PASSPHRASE,
            },
        )
        assert signed.status_code == 303, signed.text

    def post(self, path: str, **form: object) -> httpx2.Response:
        csrf = hidden(self.http.get("/console/clients").text, "csrf")
        return self.http.post(path, data={"csrf": csrf, **form})


def _seen_after(url: str, token: str, changed_at: float) -> tuple[int, list[int]]:
    """Ask B until a request that started one bound after ``changed_at`` is answered:
    (that request's status, the statuses of every request asked before it)."""
    before: list[int] = []
    while True:
        started = time.monotonic()
        status = tools_list(url, token).status_code
        if started >= changed_at + BOUND_S:
            return status, before
        before.append(status)
        assert time.monotonic() < changed_at + DEADLINE_S, "process B never answered"


def test_a_client_changed_in_one_process_is_refused_by_the_other_within_the_bound(
    servers: tuple[str, str],
) -> None:
    url_a, url_b = servers
    owner = Console(url_a)
    endpoint_b = f"{url_b}/clients/roaming/mcp"

    created = owner.post("/console/clients", id="roaming", tools="search_context")
    assert created.status_code == 201, created.text
    token_match = re.search(r'<div class="token-once".*?<code>([^<]+)</code>', created.text, re.S)
    assert token_match is not None
    token = html.unescape(token_match.group(1))
    accepted, _ = _seen_after(endpoint_b, token, time.monotonic())

    paused_at_a = owner.post("/console/clients/roaming/pause")
    paused_at = time.monotonic()
    refused, while_pausing = _seen_after(endpoint_b, token, paused_at)
    after_refusal = tools_list(endpoint_b, token).status_code

    resumed_at_a = owner.post("/console/clients/roaming/resume")
    resumed, _ = _seen_after(endpoint_b, token, time.monotonic())

    removed_at_a = owner.post("/console/clients/roaming/remove")
    removed, _ = _seen_after(endpoint_b, token, time.monotonic())
    owner.http.close()

    assert accepted == 200
    assert paused_at_a.status_code == 303
    assert refused == after_refusal == 403
    # Until its next check B may still serve it; once it refused, it never serves again.
    assert while_pausing == sorted(while_pausing, key=lambda status: status == 403)
    assert set(while_pausing) <= {200, 403}
    assert resumed_at_a.status_code == 303
    assert resumed == 200
    assert removed_at_a.status_code == 303
    assert removed == 401
