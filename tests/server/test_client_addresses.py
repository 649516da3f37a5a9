"""Whose address a request has (issue 19 item 12): ``guard/addresses.py``.

The counterpart is an attacker who writes ``X-Forwarded-For`` himself: against
``metacortex serve`` (uvicorn as the CLI configures it) and against the cloud
deployment behind Google's front end, emulated as it behaves: it appends the
address it received the request from to whatever the client sent (our reading of
Google's documentation for its HTTP(S) front ends; Cloud Run passes the header to
the container with the client's address as the last entry).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from metacortex.guard.addresses import AddressResolver, ClientAddress
from metacortex.kernel.logs import SERVER_LOGGER, JsonFormatter
from tests.abuse_support import SIGN_IN_BUDGET, live_server, sign_in


def _request_lines(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    """The access log lines, as JSON objects exactly as they are written."""
    formatter = JsonFormatter()
    lines = [json.loads(formatter.format(r)) for r in caplog.records if r.name == SERVER_LOGGER]
    return [line for line in lines if "httpRequest" in line]


def test_serve_ignores_x_forwarded_for_so_a_new_header_each_time_does_not_escape_the_sign_in_limit(
    tmp_path: Path,
) -> None:
    with live_server(tmp_path, **SIGN_IN_BUDGET) as live, live.client() as http:
        statuses = [
            sign_in(http, "wrong guess", {"x-forwarded-for": f"198.51.100.{n}"}).status_code
            for n in range(3)
        ]

    assert statuses == [401, 401, 429]


def test_serve_logs_the_socket_peer_not_the_address_a_client_claims(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="metacortex")
    with live_server(tmp_path) as live, live.client() as http:
        http.get("/no-such-page", headers={"x-forwarded-for": "203.0.113.66"})

    [line] = [entry for entry in _request_lines(caplog) if "/no-such-page" in str(entry)]
    assert line["httpRequest"]["remoteIp"] == "127.0.0.1"


def test_behind_googles_front_end_the_entry_it_appends_is_the_client(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="metacortex")
    with live_server(tmp_path, like="cloud", **SIGN_IN_BUDGET) as live, live.client() as http:
        # The attacker rotates what he writes; the front end appends his real address.
        attacker = [
            sign_in(http, "wrong guess", {"x-forwarded-for": f"10.0.0.{n}, 198.51.100.7"})
            for n in range(3)
        ]
        other = sign_in(http, "wrong guess", {"x-forwarded-for": "198.51.100.8"})

    assert [answer.status_code for answer in attacker] == [401, 401, 429]
    assert other.status_code == 401  # another client has a bucket of its own
    addresses = {line["httpRequest"]["remoteIp"] for line in _request_lines(caplog)}
    assert addresses == {"198.51.100.7", "198.51.100.8"}


def test_a_forwarded_entry_that_is_no_address_resolves_to_unknown(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="metacortex")
    with live_server(tmp_path, like="cloud") as live, live.client() as http:
        http.get("/no-such-page", headers={"x-forwarded-for": "x" * 30_000})

    [line] = _request_lines(caplog)
    assert line["httpRequest"]["remoteIp"] == "unknown"


def _scope(peer: str, *forwarded: str) -> dict[str, object]:
    headers = [(b"x-forwarded-for", value.encode()) for value in forwarded]
    return {"type": "http", "client": (peer, 5000), "headers": headers}


def test_n_trusted_hops_take_the_nth_entry_from_the_right_over_every_header_line() -> None:
    scope = _scope("10.1.1.1", "6.6.6.6, 203.0.113.1", "198.51.100.2")

    assert AddressResolver(0).resolve(scope).ip == "10.1.1.1"
    assert AddressResolver(1).resolve(scope).ip == "198.51.100.2"
    assert AddressResolver(2).resolve(scope).ip == "203.0.113.1"
    assert AddressResolver(5).resolve(scope).ip == "6.6.6.6"  # fewer entries: the left-most
    assert AddressResolver(1).resolve(_scope("10.1.1.1")).ip == "10.1.1.1"  # none: the peer


def test_addresses_are_normalised_and_ipv6_clients_share_their_64_bit_prefix() -> None:
    resolver = AddressResolver(1)

    assert resolver.resolve(_scope("::1", "[2001:db8:0:1::7]:443")).ip == "2001:db8:0:1::7"
    assert resolver.resolve(_scope("::1", "203.0.113.9:5123")).ip == "203.0.113.9"
    assert resolver.resolve(_scope("::1", "::ffff:203.0.113.9")).ip == "203.0.113.9"
    assert resolver.resolve(_scope("::1", "_hidden")).ip == "unknown"
    assert ClientAddress("2001:db8:0:1::7").bucket == ClientAddress("2001:db8:0:1:ff::1").bucket
    assert ClientAddress("2001:db8:0:1::7").bucket != ClientAddress("2001:db8:0:2::7").bucket
    assert ClientAddress("203.0.113.9").bucket == "ip:203.0.113.9"
