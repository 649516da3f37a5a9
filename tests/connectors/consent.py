"""The owner's browser: Debian's Chromium, headless, driven by Playwright (the system
binary; never ``playwright install``). It opens an authorization URL as a client would
hand it over, signs in, and presses *Allow* with whatever the page preselected.

Each connector (a server origin and the client_id it registered) gets its own browser
profile, so the owner signs in once per connector and never rides another connector's
session: the server must ask for the passphrase on a profile's first visit, and
``ConsentFailed`` says so when it does not (a session cookie that came from elsewhere,
such as a front end keeping a cookie jar). Later approvals for the same connector
reuse its session cookie, as a real browser does.

Playwright's sync API is bound to the thread that started it, and the tests call it
from threads and event loops alike, so one worker thread owns the browser and runs
every consent in turn.
"""

from __future__ import annotations

import queue
import shutil
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from tests.oauth_support import PASSPHRASE, query_of

# The browser resolves no host name: a redirect to the client's own site (chatgpt.com,
# claude.ai) fails inside Chromium without leaving the machine. (Playwright's request
# interception cannot be used instead: with it, a redirect to a private-use scheme such
# as cursor:// aborts the form's POST before its answer is seen.) Real loopback
# listeners, Codex's, are reached by address.
_NO_NAME_RESOLUTION: Final = "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"
_TIMEOUT_MS: Final = 20_000
_ANSWER_MS: Final = 10_000


class ConsentFailed(AssertionError):
    """The browser never reached an *Allow* button, or pressing it sent nobody back."""


@dataclass(frozen=True)
class Consent:
    location: str  # where the authorization server sent the browser after Allow
    preset: str  # the preset the page had preselected (and so was approved)
    csp_violations: tuple[str, ...] = field(default=())
    signed_in: bool = False  # the owner typed the passphrase on the way

    @property
    def params(self) -> dict[str, str]:
        return query_of(self.location)


def chromium_executable() -> str | None:
    for candidate in ("/usr/lib/chromium/chromium", shutil.which("chromium") or ""):
        if candidate and Path(candidate).exists():
            return candidate
    return None


class ConsentBrowser:
    def __init__(self, executable: str) -> None:
        self._executable = executable
        self._jobs: queue.Queue[tuple[Callable[[Any], Any], Future[Any]] | None] = queue.Queue()
        self._ready: Future[None] = Future()
        self._thread = threading.Thread(target=self._run, name="consent-browser", daemon=True)
        self._thread.start()
        self._ready.result(timeout=60)

    def approve(self, authorization_url: str) -> Consent:
        """Open the URL, sign in if asked, press Allow; where the browser was sent."""
        done: Future[Consent] = Future()
        self._jobs.put((lambda contexts: _approve(contexts, authorization_url), done))
        return done.result(timeout=90)

    def close(self) -> None:
        self._jobs.put(None)
        self._thread.join(timeout=60)

    def _run(self) -> None:
        from playwright.sync_api import sync_playwright  # imported where the tests need it

        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path=self._executable,
                    args=["--no-sandbox", "--disable-gpu", _NO_NAME_RESOLUTION],
                )
                contexts = _Contexts(browser)
                self._ready.set_result(None)
                while (job := self._jobs.get()) is not None:
                    work, done = job
                    try:
                        done.set_result(work(contexts))
                    except Exception as error:  # noqa: BLE001 (handed to the waiting test)
                        done.set_exception(error)
                browser.close()
        except BaseException as error:
            if not self._ready.done():
                self._ready.set_exception(error)
            raise


class _Contexts:
    """One browser profile per connector: a server origin and the client_id asking."""

    def __init__(self, browser: Any) -> None:
        self._browser = browser
        self._by_connector: dict[tuple[str, str], Any] = {}

    def for_url(self, url: str) -> tuple[Any, bool]:
        """The connector's profile, and whether it is new (it never signed in)."""
        parts = urlsplit(url)
        connector = (f"{parts.scheme}://{parts.netloc}", query_of(url).get("client_id", ""))
        fresh = connector not in self._by_connector
        if fresh:
            context = self._browser.new_context()
            context.set_default_timeout(_TIMEOUT_MS)
            self._by_connector[connector] = context
        return self._by_connector[connector], fresh


def _approve(contexts: _Contexts, authorization_url: str) -> Consent:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    context, fresh = contexts.for_url(authorization_url)
    page = context.new_page()
    violations: list[str] = []
    page.on(
        "console",
        lambda message: (
            violations.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )
    try:
        opened = page.goto(authorization_url)
        signed_in = bool(page.locator("#passphrase").count())
        if fresh and not signed_in:
            raise ConsentFailed(
                f"the owner was not asked for the passphrase on a new browser profile at "
                f"{authorization_url}: a session reached the server from elsewhere"
            )
        if signed_in:
            page.fill("#passphrase", PASSPHRASE)
            with page.expect_navigation():
                page.click("button[type=submit]")
        allow = page.get_by_role("button", name="Allow")
        if not allow.count():
            status = opened.status if opened is not None else "no response"
            raise ConsentFailed(
                f"no consent page at {authorization_url}: {status} "
                f"{page.locator('body').inner_text()[:600]!r}"
            )
        preset = page.locator("input[name=preset]:checked").get_attribute("value") or ""
        try:
            with page.expect_response(
                lambda response: (
                    response.request.method == "POST" and response.status in (302, 303)
                ),
                timeout=_ANSWER_MS,
            ) as answered:
                allow.click()
        except PlaywrightTimeout:
            # Chromium drops the answer when the page's CSP forbids where it redirects.
            raise ConsentFailed(
                f"pressing Allow gave the browser no redirect it would follow "
                f"(CSP reports: {violations or 'none'})"
            ) from None
        location = answered.value.headers.get("location", "")
        if not location:
            raise ConsentFailed(f"Allow sent nobody back: {answered.value.status}")
        # Let the browser follow the redirect as far as it goes (a real loopback listener
        # is reached; a private-use scheme ends here), so a blocked one is logged.
        page.wait_for_load_state()
        return Consent(location, preset, tuple(violations), signed_in)
    finally:
        page.close()
