"""Nobody can lock the owner out of sign-in (issue 19 item 13): ``owner/devices.py``.

The counterpart is an attacker guessing over real loopback HTTP from many
addresses (the cloud deployment behind Google's front end, whose appended
``X-Forwarded-For`` entry is each request's address) or from the owner's own
address (``metacortex serve`` behind a tunnel: every request comes from
loopback). The owner's browser is a plain HTTP client keeping its cookies.
"""

from __future__ import annotations

from pathlib import Path

import httpx2

from metacortex.owner.sessions import digest
from tests.abuse_support import SIGN_IN_BUDGET, live_server, sign_in
from tests.oauth_support import hidden


def _from(address: str) -> dict[str, str]:
    return {"x-forwarded-for": address}  # as Google's front end delivers it


def _session_over(browser: httpx2.Client) -> None:
    """The session cookie is gone (ended, expired); the browser keeps its others."""
    browser.cookies.delete("mc_owner")


def test_a_browser_that_signed_in_before_signs_in_while_an_attacker_has_spent_the_overall_budget(
    tmp_path: Path,
) -> None:
    # 2 a minute per address, 4 overall: what 5 and 30 are, at a scale this test spends
    # before a bucket refills (one attempt in 15 s).
    budgets = SIGN_IN_BUDGET | {"metacortex_sign_in_per_minute_overall": 4}
    with live_server(tmp_path, like="cloud", **budgets) as live, live.client() as owner:
        assert sign_in(owner, headers=_from("198.51.100.1")).status_code == 303
        _session_over(owner)
        with live.client() as attacker:
            guesses = [  # from ever new addresses, until the overall budget is spent
                sign_in(attacker, "a guess", _from(f"203.0.113.{n // 2}")).status_code
                for n in range(4)
            ]
        with live.client() as stranger:  # somebody else, or the owner on a new browser
            locked_out = sign_in(stranger, headers=_from("198.51.100.1")).status_code

        assert guesses == [401, 401, 401, 429]
        assert locked_out == 429
        assert sign_in(owner, headers=_from("198.51.100.1")).status_code == 303


def test_behind_a_tunnel_an_attacker_spending_the_shared_address_does_not_lock_out_a_known_browser(
    tmp_path: Path,
) -> None:
    with live_server(tmp_path, **SIGN_IN_BUDGET) as live, live.client() as owner:
        assert sign_in(owner).status_code == 303
        _session_over(owner)
        with live.client() as attacker:  # from loopback, as everyone behind a tunnel
            guesses = [sign_in(attacker, "a guess").status_code for _ in range(2)]

        assert guesses == [401, 429]
        assert sign_in(owner).status_code == 303


def test_a_made_up_device_cookie_gets_no_budget_of_its_own(tmp_path: Path) -> None:
    with live_server(tmp_path, **SIGN_IN_BUDGET) as live, live.client() as attacker:
        attacker.cookies.set("mc_device", "A" * 43)

        statuses = [sign_in(attacker, "a guess").status_code for _ in range(3)]

    assert statuses == [401, 401, 429]


def test_the_device_budget_is_limited_too(tmp_path: Path) -> None:
    with live_server(tmp_path, **SIGN_IN_BUDGET) as live, live.client() as owner:
        assert sign_in(owner).status_code == 303
        _session_over(owner)

        statuses = [sign_in(owner, "a guess").status_code for _ in range(3)]

    assert statuses == [401, 401, 429]


def test_the_device_cookie_is_httponly_strict_and_only_its_digest_is_stored(
    tmp_path: Path,
) -> None:
    with live_server(tmp_path) as live, live.client() as owner:
        answer = sign_in(owner)
        stored = [key for key, _ in live.store.auth_list("owner_device")]

    cookie = next(
        value for name, value in answer.headers.multi_items() if value.startswith("mc_device=")
    )
    value = cookie.split(";", 1)[0].split("=", 1)[1]
    assert "HttpOnly" in cookie
    assert "samesite=strict" in cookie.lower()
    assert "Max-Age=7776000" in cookie  # 90 days
    assert stored == [digest(value)]


def test_over_https_the_device_cookie_is_secure_and_host_prefixed(tmp_path: Path) -> None:
    with (
        live_server(tmp_path, metacortex_public_url="https://memory.example") as live,
        httpx2.Client(base_url=live.url, timeout=30) as browser,
    ):
        page = browser.get("/owner/sign-in")
        csrf = hidden(page.text, "csrf")
        # A Secure cookie goes back only over https: send it as the browser would there.
        answer = browser.post(
            "/owner/sign-in",
            data={"csrf": csrf, "next": "", "passphrase": "correct horse battery staple 42"},
            headers={"cookie": f"__Host-mc_csrf={csrf}"},
        )

    assert answer.status_code == 303
    cookie = next(
        value
        for name, value in answer.headers.multi_items()
        if value.startswith("__Host-mc_device=")
    )
    assert "Secure" in cookie
    assert "Path=/" in cookie
