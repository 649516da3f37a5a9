"""What a request writes to the log is bounded (issue 19 item 15, request logs).

The counterpart is an attacker's requests over real loopback HTTP against uvicorn as
``metacortex serve`` runs it: unauthenticated 404s with a 60 KB ``User-Agent`` and
a 20 KB path, and ``/oauth/authorize`` with a 20 KB ``state`` and
``code_challenge``. The log lines are measured as ``JsonFormatter`` writes them.
"""

from __future__ import annotations

import logging
from pathlib import Path

import httpx2
import pytest

from metacortex.kernel.logs import SERVER_LOGGER, JsonFormatter
from tests.abuse_support import live_server

BOUND = 1_500  # bytes of one access log line, whatever the request carried


def _written(caplog: pytest.LogCaptureFixture) -> list[str]:
    formatter = JsonFormatter()
    return [formatter.format(r) for r in caplog.records if r.name == SERVER_LOGGER]


def test_a_refused_request_with_a_60_kb_user_agent_and_path_writes_a_bounded_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="metacortex")
    with live_server(tmp_path) as live, live.client() as http:
        answer = http.get("/" + "p" * 20_000, headers={"user-agent": "u" * 60_000})
    assert answer.status_code == 404

    [line] = _written(caplog)
    assert len(line.encode()) < BOUND
    assert '"path_chars": 20001' in line


def test_authorize_does_not_log_its_query(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="metacortex")
    state, challenge = "s" * 20_000, "c" * 20_000
    with live_server(tmp_path) as live, live.client() as http:
        answer = http.get(
            "/oauth/authorize",
            params={
                "response_type": "code",
                "client_id": "never-registered-" + "k" * 40,
                "state": state,
                "code_challenge": challenge,
                "code_challenge_method": "S256",
            },
        )
    assert answer.status_code == 400

    [line] = [text for text in _written(caplog) if "/oauth/authorize" in text]
    assert len(line.encode()) < BOUND
    assert "sss" not in line
    assert "kkkk" not in line


def test_an_answered_request_is_logged_with_the_same_bounds(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="metacortex")
    with live_server(tmp_path) as live:
        answer = httpx2.get(
            f"{live.url}/owner/sign-in?next=" + "n" * 20_000,
            headers={"user-agent": "u" * 60_000},
            timeout=30,
        )
    assert answer.status_code == 200

    [line] = _written(caplog)
    assert len(line.encode()) < BOUND
    assert '"userAgent": "' + "u" * 200 + '…"' in line
