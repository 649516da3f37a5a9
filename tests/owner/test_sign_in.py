"""Owner sign-in over real loopback HTTP: passphrase, cookie, CSRF, rate limit, headers."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from metacortex.cli.main import main
from metacortex.owner import is_set, verify_passphrase
from metacortex.storage.sqlite import SQLiteStore
from tests.oauth_support import PASSPHRASE, Browserless, OAuthLive, hidden, oauth_server


@pytest.fixture
def live(tmp_path: Path) -> Iterator[OAuthLive]:
    with oauth_server(tmp_path) as running:
        yield running


@pytest.fixture
def agent(live: OAuthLive) -> Iterator[Browserless]:
    user = Browserless(live)
    yield user
    user.close()


def test_sign_in_page_has_strict_csp_no_script_and_no_third_party_assets(
    agent: Browserless,
) -> None:
    page = agent.http.get("/owner/sign-in")

    assert page.status_code == 200
    csp = page.headers["content-security-policy"]
    assert "default-src 'none'" in csp
    assert "frame-ancestors 'none'" in csp
    assert "form-action 'self'" in csp
    assert page.headers["x-frame-options"] == "DENY"
    assert page.headers["cache-control"] == "no-store"
    assert "<script" not in page.text
    assert 'name="viewport"' in page.text
    assert '<label for="passphrase">' in page.text
    links = re.findall(r'(?:href|src|action)="([^"]+)"', page.text)
    assert links
    assert all(link.startswith(agent.live.url + "/") for link in links)
    css = agent.http.get("/owner/static/owner.css")
    assert css.status_code == 200
    assert css.headers["content-type"].startswith("text/css")


def test_wrong_passphrase_is_refused_and_sets_no_session(agent: Browserless) -> None:
    answer = agent.sign_in("not the passphrase at all")

    assert answer.status_code == 401
    assert "That passphrase is not correct." in answer.text
    assert "mc_owner" not in agent.http.cookies


def test_right_passphrase_sets_an_httponly_samesite_strict_session(agent: Browserless) -> None:
    answer = agent.sign_in()

    assert answer.status_code == 303
    cookie = next(
        value
        for name, value in answer.headers.multi_items()
        if name == "set-cookie" and "mc_owner" in value
    )
    assert "HttpOnly" in cookie
    assert "SameSite=strict" in cookie or "SameSite=Strict" in cookie
    assert "Secure" not in cookie  # plain http on loopback
    assert "You are signed in" in agent.http.get("/owner/sign-in").text


def test_sign_in_without_the_csrf_token_is_refused(agent: Browserless) -> None:
    agent.http.get("/owner/sign-in")
    answer = agent.http.post("/owner/sign-in", data={"csrf": "forged", "passphrase": PASSPHRASE})

    assert answer.status_code == 403
    assert "mc_owner" not in agent.http.cookies


def test_sign_in_is_rate_limited_per_address(agent: Browserless) -> None:
    statuses = [agent.sign_in("wrong passphrase number x").status_code for _ in range(6)]

    assert statuses[:5] == [401] * 5
    assert statuses[5] == 429


def test_after_sign_in_only_urls_of_this_server_are_followed(agent: Browserless) -> None:
    answer = agent.sign_in(next_url="https://evil.example/steal")

    assert answer.status_code == 303
    assert answer.headers["location"].startswith(agent.live.url + "/")


def test_sign_out_needs_the_session_csrf_and_ends_the_session(agent: Browserless) -> None:
    agent.sign_in()
    page = agent.http.get("/owner/sign-in")
    assert agent.http.post("/owner/sign-out", data={"csrf": "forged"}).status_code == 403
    answer = agent.http.post("/owner/sign-out", data={"csrf": hidden(page.text, "csrf")})

    assert answer.status_code == 303
    assert ">Sign in</h1>" in agent.http.get("/owner/sign-in").text


def test_over_https_the_session_cookie_is_secure_and_host_prefixed(tmp_path: Path) -> None:
    with oauth_server(tmp_path, metacortex_public_url="https://memory.example") as live:
        http = httpx2.Client(base_url=live.url, timeout=30, follow_redirects=False)
        page = http.get("/owner/sign-in")
        csrf_cookie = page.headers["set-cookie"]
        assert csrf_cookie.startswith("__Host-mc_csrf=")
        assert "Secure" in csrf_cookie
        http.close()


def test_set_passphrase_command_stores_only_an_argon2id_hash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    monkeypatch.setattr("sys.stdin", io.StringIO("a long owner passphrase\n"))

    assert main(["owner", "set-passphrase", "--stdin", "--data-dir", str(data)]) == 0

    store = SQLiteStore(data / "metacortex.sqlite3")
    try:
        assert is_set(store)
        [(key, record)] = store.auth_list("owner")
        assert key == "passphrase"
        assert record["argon2"].startswith("$argon2id$")
        assert "a long owner passphrase" not in str(record)
        assert verify_passphrase(store, "a long owner passphrase")
        assert not verify_passphrase(store, "a long owner passphrasE")
    finally:
        store.close()


def test_a_short_passphrase_is_refused_with_a_clear_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("short\n"))

    assert main(["owner", "set-passphrase", "--stdin", "--data-dir", str(tmp_path)]) == 2
    assert "at least 12" in capsys.readouterr().err
