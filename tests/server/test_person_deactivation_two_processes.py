"""A person deactivated with ``metacortex person deactivate`` is refused by a running
``metacortex serve`` within the bound, and let in again after ``person reactivate``
(issue 30 §1: "as pausing a client does now").

Two kinds of real process on one SQLite data directory: the server, started with
``METACORTEX_CLIENT_REFRESH_SECONDS=1``, and each command, a fresh process as the
operator runs it. The person's client is asked with the real MCP JSON-RPC over
loopback HTTP, again and again (no sleep), until a request that started at least one
bound after the command returned has been answered; that request must see the change.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from metacortex.kernel.events import MEMORY_EVENTS
from tests.oauth_support import tools_list
from tests.owner_commands import Operator
from tests.processes import WatchedProcess
from tests.server.test_client_refusal_two_processes import _seen_after, _serve

pytestmark = pytest.mark.slow


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Operator, WatchedProcess, str]]:
    """The operator's commands, and a server on the same data directory with its URL."""
    pytest.importorskip(
        "metacortex.providers.local", reason="LOCAL EMBEDDER NOT AVAILABLE: serve cannot start"
    )
    operator = Operator(tmp_path)
    operator.data_dir.mkdir(mode=0o700)
    server, url = _serve(operator.data_dir)
    try:
        yield operator, server, url
    finally:
        server.stop()


def test_person_deactivate_refuses_their_client_on_a_running_server_and_reactivate_lets_it_in(
    served: tuple[Operator, WatchedProcess, str],
) -> None:
    operator, server, url = served
    operator.json(
        "person", "add", "cy@example.com", "--name", "Cy", "--role", "writer",
        "--space", "default",
    )  # fmt: skip
    created = operator.json("client", "add", "cy-phone", "--person", "cy@example.com")
    endpoint = f"{url}{created['client']['path']}"
    token = created["token"]
    accepted, _ = _seen_after(endpoint, token, time.monotonic())

    assert operator.run("person", "deactivate", "cy@example.com").returncode == 0
    refused, while_deactivating = _seen_after(endpoint, token, time.monotonic())
    refusal = tools_list(endpoint, token)

    assert operator.run("person", "reactivate", "cy@example.com").returncode == 0
    readmitted, _ = _seen_after(endpoint, token, time.monotonic())
    server.stop()  # writes the events it queued
    with operator.store() as store:
        reasons = {e.get("reason") for e in store.read_events(MEMORY_EVENTS)}

    assert accepted == 200
    assert refused == refusal.status_code == 403
    assert refusal.json()["error"]["message"].startswith(
        "the person this credential belongs to was deactivated by the server's owner"
    )
    assert "person_inactive" in reasons
    # Until its next check the server may still serve it; once it refused, never again.
    assert while_deactivating == sorted(while_deactivating, key=lambda status: status == 403)
    assert set(while_deactivating) <= {200, 403}
    assert readmitted == 200
