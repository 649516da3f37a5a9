"""Search that says when nothing is relevant, the keyword box, why a result matched, and
plain words, in a real headless Chromium (Debian's ``chromium`` through Playwright)
against the real app, its SQLite store and real tool calls.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import pytest

from metacortex.clients import ClientManager
from tests.console.browsing import Browser, chromium_on
from tests.console.support import ADMIN, ConsoleLive, console_server, make_events, seed
from tests.oauth_support import tool_call

pytestmark = pytest.mark.slow
expect = pytest.importorskip("playwright.async_api").expect
LONG_TOPIC = "clients/acme-international-holdings/platform-migration/2026-q3"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def live(tmp_path: Path) -> Iterator[ConsoleLive]:
    """The console (OAuth off); a stored client's pause applies at its next request."""
    with console_server(tmp_path, oauth=False, metacortex_client_refresh_seconds=0) as running:
        yield running


@pytest.fixture
async def browser(live: ConsoleLive) -> AsyncIterator[Browser]:
    async with chromium_on(live) as driver:
        yield driver
    assert driver.problems == []


def _call_as_a_paused_client(live: ConsoleLive) -> None:
    manager = ClientManager(live.store, live.runtime.settings)
    created = manager.create("paused-agent")
    manager.pause("paused-agent")
    url = f"{live.url}/clients/paused-agent/mcp"
    refused = tool_call(url, created.token, "search_context", {"query": "x"})
    assert refused.status_code == 403


async def _scores(browser: Browser, selector: str) -> list[float]:
    texts = await browser.page.locator(f"{selector} dd.score").all_inner_texts()
    return [float(text) for text in texts]


@pytest.mark.anyio
async def test_a_search_for_words_no_memory_holds_says_nothing_is_relevant(
    browser: Browser,
) -> None:
    seed(browser.live.service)
    page = browser.page
    await browser.sign_in("/console/search")

    await page.get_by_label("Query").fill("zxqv plorf wibble")
    await page.keyboard.press("Enter")

    assert await page.locator("#results-title").inner_text() == "Nothing relevant"
    assert await page.locator("#results").count() == 0
    weak = await _scores(browser, "#weak-results")
    assert weak  # the closest memories, shown apart
    assert "neither close in meaning nor holding most of the keywords" in (
        await page.locator("#weak-title").inner_text()
    )


@pytest.mark.anyio
async def test_results_count_only_strong_matches_and_open_with_why_they_matched(
    browser: Browser,
) -> None:
    """The search's own judgement (``relevance``, as the tools give it to a model): the
    memory holding both words is a result; those holding only the commoner one are weak
    (the hashing test embedder gives no similarity to rely on)."""
    seed(browser.live.service)
    page = browser.page
    await browser.sign_in("/console/search?q=tomatoes+sun")

    relevant = await _scores(browser, "#results")
    assert relevant
    for item in await page.locator("#weak-results > li").all():
        assert sorted(await item.locator("mark").all_inner_texts()) != ["Tomatoes", "sun"]
    count = len(relevant)
    assert await page.locator("#results-title").inner_text() == (
        f"{count} result" + ("" if count == 1 else "s")
    )
    first = page.locator("#results > li").first
    assert await first.locator("mark").all_inner_texts() == ["Tomatoes", "sun"]

    await first.locator("h3 a").click()
    why = await page.locator("#why-summary").inner_text()
    match = re.search(
        r"Result 1 of \d+, relevant: score ([\d.]+) = semantic ([\d.]+) \+ keyword ([\d.]+)"
        r" \+ context ([\d.]+)\.",
        why,
    )
    assert match is not None, why
    score, *parts = (float(value) for value in match.groups())
    assert sum(parts) == pytest.approx(score, abs=0.002)
    assert await page.locator("#record-content mark").all_inner_texts() == ["Tomatoes", "sun"]
    await page.get_by_role("link", name="Back to the results").click()
    assert await page.get_by_label("Query").input_value() == "tomatoes sun"


@pytest.mark.anyio
async def test_the_keyword_box_lists_the_memories_containing_the_words_marked_and_escaped(
    browser: Browser,
) -> None:
    live = browser.live
    seed(live.service)
    live.service.save(ADMIN, content="<b>Tomato</b> seedlings & basil, sown in March.", topic="x")
    page = browser.page
    await browser.sign_in()

    await page.get_by_label("Containing words").fill("tomatoes")
    await page.get_by_role("button", name="Apply filters").click()

    titles = await page.locator("#memory-list h3").all_inner_texts()
    assert sorted(titles) == [
        "<b>Tomato</b> seedlings & basil, sown in March.",
        "The basil is planted next to the tomatoes.",
        "Tomatoes need six hours of sun a day.",
    ]
    assert await page.locator("#memory-list h3 b").count() == 0  # text, never markup
    marks = await page.locator("#memory-list mark").all_inner_texts()
    assert sorted(marks) == ["Tomato", "Tomatoes", "tomatoes"]
    assert (
        "3 active memories containing “tomatoes”" in await page.locator("#list-title").inner_text()
    )
    await page.locator("#memory-list h3 a", has_text="Tomatoes need").click()
    assert "Found by the words “tomatoes”" in await page.locator("#why-title").inner_text()
    assert await page.locator("#record-content mark").all_inner_texts() == ["Tomatoes"]


@pytest.mark.anyio
async def test_a_topic_cut_short_shows_its_whole_name_on_hover_and_on_focus(
    browser: Browser,
) -> None:
    """Hover: the browser's tooltip (its ``title``); keyboard focus: it unfolds in place."""
    browser.live.service.save(ADMIN, content="The cut-over window is Sunday.", topic=LONG_TOPIC)
    page = browser.page
    await page.set_viewport_size({"width": 390, "height": 844})
    await browser.sign_in()
    topic = page.locator("#memory-list .meta a.topic").first

    def cut(element: str) -> str:
        return f"{element} => element.scrollWidth > element.clientWidth + 1"

    assert await topic.get_attribute("title") == LONG_TOPIC
    assert await topic.evaluate(cut("element"))
    await page.locator("#memory-list h3 a").first.focus()
    await page.keyboard.press("Tab")  # from the title to its topic, as a keyboard user does
    assert await topic.evaluate("element => element === document.activeElement")
    assert not await topic.evaluate(cut("element"))
    await page.get_by_label("Containing words").focus()
    assert await topic.evaluate(cut("element"))


@pytest.mark.anyio
async def test_states_merges_and_refusals_read_in_plain_words(browser: Browser) -> None:
    live = browser.live
    seeded = seed(live.service)
    make_events(live.url)
    _call_as_a_paused_client(live)
    live.flush_events()
    page = browser.page
    await browser.sign_in()

    states = await page.get_by_label("State").locator("option").all_inner_texts()
    assert "merged" not in " ".join(states)  # consolidation left none: not offered
    assert "active (" in states[0]
    await browser.open("/console?state=merged")
    explanation = await page.locator("#no-results").inner_text()
    assert "Consolidation keeps its sources as deprecated" in explanation

    await browser.open(f"/console/memories/{seeded.merged}")
    merged_by = await page.locator("#merged-by").inner_text()
    assert merged_by == "joining the sentences, without a model (no generation model is configured)"

    await browser.open("/console/activity")
    refusals = await page.locator("#chart-refusals rect.bar").all_text_contents()
    assert refusals == ["client paused: 1", "wrong or no token: 1"]
    text = await page.locator("main").inner_text()
    for identifier in ("client_paused", "unauthorized", "offline_sentence_merge", ".py"):
        assert identifier not in text


@pytest.mark.anyio
async def test_the_clients_pages_say_times_as_every_other_page_does(browser: Browser) -> None:
    page = browser.page
    await browser.sign_in("/console/clients")
    await page.get_by_label("Id", exact=False).first.fill("laptop")
    await page.get_by_role("button", name="Create client").click()
    await page.locator("#new-token").wait_for()
    defined = page.locator(".client-facts time")
    assert await defined.inner_text() == "just now"
    assert re.fullmatch(
        r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", await defined.get_attribute("title") or ""
    )

    await browser.open("/console/clients")
    card = page.locator("#client-laptop")
    assert "Stored just now" in await card.inner_text()
    assert not re.search(r"\d{4}-\d\d-\d\dT", await page.locator("main").inner_text())


@pytest.mark.anyio
async def test_corrections_that_change_nothing_or_repeat_a_recent_save_are_explained(
    browser: Browser,
) -> None:
    live = browser.live
    right = live.service.save(
        ADMIN, content="The office opens at 9.", topic="office", origin="user_asserted"
    )["item"]["id"]
    wrong = live.service.save(ADMIN, content="The office opens at 10.", topic="office")["item"][
        "id"
    ]
    page = browser.page
    browser.expected_statuses.add(400)
    await browser.sign_in(f"/console/memories/{wrong}")

    await page.get_by_role("button", name="Save correction").click()
    assert (
        "the corrected text is the same as the memory's"
        in await page.get_by_role("alert").inner_text()
    )
    assert live.service.fetch(ADMIN, id=wrong)["item"]["metadata"]["branch_state"] == "active"

    await page.get_by_label("Corrected content").fill("The office opens at 9.")
    await page.get_by_role("button", name="Save correction").click()
    notice = await browser.notice()
    assert "already saved as memory" in notice
    assert "in the last 15 minutes" in notice
    assert page.url.split("/console/memories/")[1].split("?")[0] == right


@pytest.mark.anyio
async def test_export_is_in_the_menu_and_downloads_the_backup(browser: Browser) -> None:
    seed(browser.live.service)
    page = browser.page
    await browser.sign_in()

    await page.get_by_role("navigation", name="Console").get_by_role("link", name="Export").click()
    await page.get_by_role("heading", name="Export", exact=True).wait_for()
    assert "memories.ndjson" in await page.locator("main").inner_text()
    async with page.expect_download() as waiting:
        await page.get_by_role("link", name="Download the backup (zip)").click()
    download = await waiting.value
    assert download.suggested_filename.startswith("metacortex-backup-")
    assert (await anyio.Path(await download.path()).stat()).st_size > 200


@pytest.mark.anyio
async def test_a_new_install_says_what_the_activity_page_will_show(browser: Browser) -> None:
    page = browser.page
    await browser.sign_in("/console/activity")

    empty = page.locator("#empty-activity")
    assert "No activity in the last 14 days" in await empty.inner_text()
    assert "how many searches found something relevant" in await empty.inner_text()
    assert await page.locator("svg").count() == 0
    await empty.get_by_role("link", name="Clients").click()
    await page.get_by_role("heading", name="Clients", exact=True).wait_for()
