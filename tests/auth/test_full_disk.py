"""A full disk under the OAuth server and the owner's sign-in, for real: a small tmpfs
holds the SQLite store, a filler file takes every free byte, and each route that
writes answers a clear error (507, the store's own message) over the same kept-alive
connection, instead of a plain 500 and a reset. Freeing space loses nothing.

The counterpart is the kernel's ENOSPC on a real file system (needs root to mount
the tmpfs; CI runs as root, elsewhere the test says loudly that it was skipped)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from tests.filesystems import can_mount, filled, tmpfs
from tests.oauth_support import (
    CALLBACK,
    PASSPHRASE,
    Browserless,
    hidden,
    oauth_server,
    pkce_pair,
)

FULL_MESSAGE = "Retrying will not help until the operator frees disk space"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    if not can_mount():
        pytest.skip("FULL-DISK OAUTH TEST SKIPPED: needs root to mount a small tmpfs")
    with tmpfs(tmp_path / "small", size_kib=1536) as directory:
        yield directory


def _oauth_error(answer: httpx2.Response) -> str:
    assert answer.status_code == 507, answer.text
    body = answer.json()
    assert body["error"] == "server_error"
    assert FULL_MESSAGE in body["error_description"]
    return str(body["error_description"])


def test_every_route_that_writes_answers_a_full_disk_with_a_clear_error(
    small_disk: Path,
) -> None:
    with (
        oauth_server(small_disk) as live,
        contextlib.closing(Browserless(live)) as agent,
        httpx2.Client(base_url=live.url, timeout=30, follow_redirects=False) as owner,
    ):
        assert agent.sign_in().status_code == 303
        client = agent.register()
        verifier, challenge = pkce_pair()
        code = agent.code_for(client["client_id"], challenge)
        csrf = hidden(owner.get("/owner/sign-in").text, "csrf")
        browser = {"accept": "text/html,application/xhtml+xml,*/*;q=0.8"}

        def sign_in(passphrase: str) -> httpx2.Response:
            form = {"csrf": csrf, "next": "", "passphrase": passphrase}
            return owner.post("/owner/sign-in", data=form, headers=browser)

        with filled(small_disk):
            registered = agent.http.post(
                "/oauth/register",
                json={"redirect_uris": [CALLBACK], "token_endpoint_auth_method": "none"},
            )
            _oauth_error(registered)
            _oauth_error(agent.exchange(client["client_id"], code, verifier))
            _oauth_error(agent.authorize(client["client_id"], challenge, state="s"))

            # The passphrase check only reads; a correct one writes a session.
            assert sign_in("not it").status_code == 401
            signed = sign_in(PASSPHRASE)
            assert signed.status_code == 507, signed.text
            assert signed.headers["content-type"].startswith("text/html")
            assert FULL_MESSAGE in signed.text
            assert "Traceback" not in signed.text
            assert "frame-ancestors 'none'" in signed.headers["content-security-policy"]

            # The same kept-alive connections still answer.
            assert agent.http.get("/healthz").status_code == 200
            assert owner.get("/healthz").status_code == 200

        # Space freed: the code refused above was not spent, the owner signs in.
        assert agent.exchange(client["client_id"], code, verifier).status_code == 200
        assert sign_in(PASSPHRASE).status_code == 303
