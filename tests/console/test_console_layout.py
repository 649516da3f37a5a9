"""Every console page at phone (390 px) and desktop (1280 px) width on a realistic store,
in a real headless Chromium (Debian's ``chromium`` driven by Playwright with the system
binary): no horizontal overflow of any kind, and zero violations from axe-core (Deque's
engine from npm, every rule it runs by default).

The store (``tests/console/realistic.py``) holds hundreds of memories with long topics,
long first lines and unbroken URLs, drafts, deprecated chains, links to erased records,
OAuth grants with long names and two weeks of events from many clients. Screenshots of
each page at both widths go to ``docs/images/`` when ``METACORTEX_UPDATE_SCREENSHOTS=1``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import quote, urlencode

import pytest

from tests.console import realistic
from tests.console.browser_checks import (
    DESKTOP,
    SCHEMES,
    WIDTHS,
    axe_script,
    axe_violations,
    chromium,
    overflow,
    screenshot,
)
from tests.console.support import ConsoleLive, console_server, make_events
from tests.oauth_support import (
    PASSPHRASE,
    Browserless,
    OAuthLive,
    authorization_query,
    pkce_pair,
    tool_call,
)

playwright_sync = pytest.importorskip("playwright.sync_api")

pytestmark = pytest.mark.slow

GRANT_NAMES: Final = (
    "Notes Agent for the Platform Migration Working Group (staging environment)",
    "Claude",
    "ChatGPT connector of the household account",
)


@dataclass
class Site:
    live: ConsoleLive
    corpus: realistic.Corpus
    page: Any
    signed_out: Any
    consent_client: str  # an OAuth client registered for the consent page
    active: Iterator[str]  # active memories no visit has changed yet

    def open(self, path: str) -> None:
        answer = self.page.goto(self.live.url + path)
        assert answer is not None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One Chromium for the module (Playwright's sync API runs one instance at a time)."""
    executable = chromium()
    axe_script()
    with playwright_sync.sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=executable, args=["--no-sandbox", "--disable-gpu"]
        )
        yield launched
        launched.close()


def _signed_in(browser: Any, url: str) -> Any:
    # bypass_csp: the pages' CSP (rightly) refuses the injected axe script.
    page = browser.new_context(viewport=DESKTOP, bypass_csp=True).new_page()
    page.goto(url + "/console")
    page.fill("#passphrase", PASSPHRASE)
    page.click("button[type=submit]")
    page.get_by_role("navigation", name="Console").wait_for()
    return page


@pytest.fixture(scope="module")
def site(browser: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    with console_server(tmp_path_factory.mktemp("layout")) as live:
        corpus = realistic.build(live.service)
        oauth = OAuthLive(live.url, live.store, live.app, documents=None)  # type: ignore[arg-type]
        agent = Browserless(oauth)
        agent.sign_in()
        for name in GRANT_NAMES:
            client = agent.register(client_name=name)
            tokens = agent.tokens(client["client_id"])
            used = tool_call(oauth.mcp, tokens["access_token"], "search_context", {"query": "x"})
            assert used.status_code == 200, used.text
        consent_client = agent.register(client_name=GRANT_NAMES[0])["client_id"]
        agent.close()
        make_events(live.url)
        live.flush_events()
        signed_out = browser.new_context(viewport=DESKTOP, bypass_csp=True).new_page()
        records = live.store.get_many(corpus.bulk)
        active = iter([r.id for r in records if r is not None and r.branch_state.value == "active"])
        page = _signed_in(browser, live.url)
        yield Site(live, corpus, page, signed_out, consent_client, active)


def _sign_in(site: Site) -> Any:
    site.signed_out.goto(site.live.url + "/console")
    return site.signed_out


def _path(path: str) -> Callable[[Site], Any]:
    def visit(site: Site) -> Any:
        site.open(path.format(c=site.corpus, long=quote(realistic.LONG_TOPICS[0], safe="")))
        return site.page

    return visit


def _older(site: Site) -> Any:
    site.open("/console?state=all")
    site.page.locator("#next-page").click()
    site.page.locator("#memory-list").wait_for()
    return site.page


def _consolidate_preview(site: Site) -> Any:
    site.open("/console/consolidate")
    site.page.get_by_role("combobox", name="Topic with drafts").select_option(
        site.corpus.drafts_topic
    )
    site.page.get_by_role("button", name="Preview").click()
    site.page.locator("#preview-merged").wait_for()
    return site.page


def _refused_correction(site: Site) -> Any:
    site.open(f"/console/memories/{site.corpus.long_line}")
    site.page.get_by_label("Corrected content").fill(realistic.LONG_FIRST_LINE * 60)
    site.page.get_by_role("button", name="Save correction").click()
    site.page.get_by_role("alert").wait_for()
    return site.page


def _consent(site: Site) -> Any:
    _, challenge = pkce_pair()
    query = authorization_query(
        site.consent_client,
        challenge,
        state="st-1",
        resource=site.live.url + "/mcp",
        scope="memory:read memory:write offline_access",
    )
    site.open("/oauth/authorize?" + urlencode(query))
    site.page.get_by_role("button", name="Allow").wait_for()
    return site.page


def _undo_offered(site: Site) -> Any:
    """A memory's page right after its deprecation: the confirmation and its Undo."""
    site.open(f"/console/memories/{next(site.active)}/deprecate")
    site.page.get_by_role("button", name="Deprecate", exact=True).click()
    site.page.locator("#undo-form").wait_for()
    return site.page


def _bulk_done(site: Site) -> Any:
    ids = "&".join(f"id={next(site.active)}" for _ in range(3))
    site.open(f"/console/bulk?action=move&{ids}")
    site.page.get_by_label("Move to topic").fill("household/filing-2026")
    site.page.get_by_role("button", name="Move 3 memories").click()
    site.page.locator("#page-notice").wait_for()
    return site.page


def _add_found(site: Site) -> Any:
    """The add form after a search for the memory to link: the typed text kept."""
    site.open("/console/new")
    site.page.get_by_label("The memory", exact=True).fill(realistic.LONG_FIRST_LINE)
    site.page.get_by_label("Find the memory it relates to").fill("billing migration")
    site.page.get_by_role("button", name="Find").click()
    site.page.get_by_label("How it relates").wait_for()
    return site.page


# name -> how to reach it; names without a number are also the screenshots' names.
PAGES: Final[dict[str, Callable[[Site], Any]]] = {
    "sign-in": _sign_in,
    "browse": _path("/console"),
    "browse-2 every state": _path("/console?state=all"),
    "browse-3 older page": _older,
    "browse-4 long topic": _path("/console?topic={long}&state=all"),
    "record": _path("/console/memories/{c.merged}"),
    "record-2 chain": _path("/console/memories/{c.chain[0]}"),
    "record-3 erased end": _path("/console/memories/{c.broken_chain}"),
    "record-4 long first line": _path("/console/memories/{c.long_line}"),
    "record-5 image": _path("/console/memories/{c.image}"),
    "record-6 refused correction": _refused_correction,
    "record-7 relation found by search": _path(
        "/console/memories/{c.long_line}?relate_q=platform+migration+billing"
    ),
    "why": _path("/console/memories/{c.long_line}?q=platform+migration+billing&state=active"),
    "undo": _undo_offered,
    "words": _path("/console?words=billing+invoice&state=all"),
    "bulk": _path("/console/bulk?action=move&id={c.chain[2]}&id={c.correction}&id={c.long_line}"),
    "bulk-2 deprecate": _path("/console/bulk?action=deprecate&id={c.chain[2]}&id={c.image}"),
    "bulk-3 done": _bulk_done,
    "deprecate": _path("/console/memories/{c.long_line}/deprecate?q=platform+migration+billing"),
    "search": _path("/console/search?q=billing+migration+invoice"),
    "new": _path("/console/new"),
    "new-2 found": _add_found,
    "search-2 no such topic": _path("/console/search?q=billing&topic=clie"),
    "nothing-relevant": _path("/console/search?q=zxqv+plorf+wibble"),
    "consolidate-2 picker": _path("/console/consolidate"),
    "consolidate": _consolidate_preview,
    "consolidate-3 chosen": _path(
        "/console/consolidate?id={c.chain[2]}&id={c.correction}&id={c.long_line}&id={c.image}"
    ),
    "erase": _path("/console/erase?topic={long}"),
    "erase-2 a selection": _path("/console/erase?id={c.merged}&id={c.chain[2]}"),
    "clients": _path("/console/clients"),
    "activity": _path("/console/activity"),
    "export": _path("/console/backup"),
    "consent": _consent,
    "refused": _path("/console/memories/00000000000000000000000000"),
}


@pytest.mark.parametrize("name", list(PAGES))
def test_the_page_fits_phone_and_desktop_in_light_and_dark_and_axe_finds_nothing(
    site: Site, name: str
) -> None:
    problems: list[str] = []
    for scheme in SCHEMES:
        for width, size in WIDTHS.items():
            for page in (site.page, site.signed_out):
                page.set_viewport_size(size)
                page.emulate_media(color_scheme=scheme)
            page = PAGES[name](site)
            page.wait_for_load_state()
            where = f"{width} {scheme}"
            problems += [f"{where}: {problem}" for problem in overflow(page)]
            problems += [f"{where}: axe {violation}" for violation in axe_violations(page)]
            if not re.search(r"\d", name):
                screenshot(page, f"{name}-{width}", scheme)
    for page in (site.page, site.signed_out):
        page.set_viewport_size(DESKTOP)
        page.emulate_media(color_scheme="light")
    assert not problems, "\n".join(problems)


def test_at_least_ten_memories_show_above_the_fold_at_1280_by_800(site: Site) -> None:
    site.page.set_viewport_size(DESKTOP)
    site.open("/console")
    bottoms: list[float] = site.page.eval_on_selector_all(
        "#memory-list > li", "items => items.map(i => i.getBoundingClientRect().bottom)"
    )
    assert len([bottom for bottom in bottoms if bottom <= DESKTOP["height"]]) >= 10


def test_chart_labels_and_legends_are_readable_at_both_widths(site: Site) -> None:
    """Every label drawn in a chart renders at 11 px or more, and legends are text of 12 px
    or more that wraps (a long client name cannot run off the drawing)."""
    small: list[str] = []
    for width, size in WIDTHS.items():
        site.page.set_viewport_size(size)
        site.open("/console/activity")
        labels: list[list[Any]] = site.page.eval_on_selector_all(
            "svg.chart text",
            "ts => ts.map(t => [t.textContent,"
            " parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a])",
        )
        legends: list[list[Any]] = site.page.eval_on_selector_all(
            ".legend li",
            "ls => ls.map(l => [l.textContent, parseFloat(getComputedStyle(l).fontSize)])",
        )
        assert labels
        assert legends
        small += [f"{width}: label {text!r} at {px:.1f}px" for text, px in labels if px < 11]
        small += [f"{width}: legend {text!r} at {px:.1f}px" for text, px in legends if px < 12]
    site.page.set_viewport_size(DESKTOP)
    assert not small, "\n".join(small)


@pytest.fixture(scope="module")
def empty_site(browser: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Any]]:
    with console_server(tmp_path_factory.mktemp("empty"), oauth=False) as live:
        yield live.url, _signed_in(browser, live.url)


def _connect_first_client(page: Any, url: str) -> None:
    state = page.locator("#empty-store")
    assert "connect your first client" in state.inner_text()
    link = page.locator("#step-connect").get_by_role("link", name="Clients").get_attribute("href")
    assert link == url + "/console/clients"
    assert "The first hour" in state.inner_text()
    assert page.locator("#memory-list, .filter-form, .topics").count() == 0


def _what_activity_will_show(page: Any, url: str) -> None:
    assert "No activity in the last 14 days" in page.locator("#empty-activity h2").inner_text()
    assert page.locator("#empty-activity li").count() == 4
    assert page.locator("svg, table").count() == 0


@pytest.mark.parametrize(
    ("path", "name", "says"),
    [
        ("/console", "empty", _connect_first_client),
        ("/console/activity", "activity-empty", _what_activity_will_show),
    ],
    ids=["the memories say how to connect the first client", "activity says what will appear"],
)
def test_a_new_install_says_what_to_do_and_what_will_appear(
    empty_site: tuple[str, Any], path: str, name: str, says: Callable[[Any, str], None]
) -> None:
    url, page = empty_site
    problems: list[str] = []
    for scheme in SCHEMES:
        page.emulate_media(color_scheme=scheme)
        for width, size in WIDTHS.items():
            page.set_viewport_size(size)
            page.goto(url + path)
            says(page, url)
            where = f"{width} {scheme}"
            problems += [f"{where}: {problem}" for problem in overflow(page)]
            problems += [f"{where}: axe {violation}" for violation in axe_violations(page)]
            screenshot(page, f"{name}-{width}", scheme)
    assert not problems, "\n".join(problems)
