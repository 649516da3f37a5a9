"""Every console flow in a real headless Chromium (Debian's ``chromium`` driven by Playwright
with the system binary; never ``playwright install``), against the real app over loopback.

Each test fails on any browser console error or page error. Layout at phone and desktop width,
axe-core and the screenshots are ``test_console_layout.py``'s, on a realistic store.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Final

import anyio
import pytest

from metacortex.domain.records import utc_now
from metacortex.owner.sessions import KIND, digest
from tests.console.browsing import Browser, chromium_on
from tests.console.support import ADMIN, ConsoleLive, console_server, make_events, seed
from tests.oauth_support import PASSPHRASE, Browserless, OAuthLive, tool_call, tools_list

playwright_api = pytest.importorskip("playwright.async_api")

pytestmark = pytest.mark.slow


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def live(tmp_path: Path) -> Iterator[ConsoleLive]:
    with console_server(tmp_path) as running:
        yield running


@pytest.fixture
async def browser(live: ConsoleLive) -> AsyncIterator[Browser]:
    async with chromium_on(live) as driver:
        yield driver
    assert driver.problems == []


@pytest.mark.anyio
async def test_owner_signs_in_browses_filters_pages_and_opens_a_record(
    browser: Browser,
) -> None:
    live = browser.live
    seeded = seed(live.service)
    for number in range(30):
        live.service.save(ADMIN, content=f"Reading list entry {number}", topic="books")
    page = browser.page

    await browser.sign_in()

    assert await page.get_by_role("heading", name="Memories", exact=True).is_visible()
    assert await page.get_by_label("2 drafts in trip").is_visible()
    await page.get_by_role("combobox", name="Topic").fill("BOOKS")  # any case
    await page.get_by_role("button", name="Apply filters").click()
    assert "Showing topic “books”" in await page.get_by_role("status").inner_text()
    assert await page.locator("#position").inner_text() == "1–25 of 30"
    assert await page.locator("#memory-list > li").count() == 25
    assert await page.locator("#memory-list h3").first.inner_text() == "Reading list entry 29"
    await page.locator("#next-page").click()
    assert await page.locator("#position").inner_text() == "26–30 of 30"
    assert await page.locator("#memory-list > li").count() == 5
    await page.locator("#newer-page").click()
    assert await page.locator("#position").inner_text() == "1–25 of 30"
    await page.get_by_role("combobox", name="Topic").fill("")
    await page.get_by_label("State").select_option("all")
    await page.get_by_text("More filters").click()
    await page.get_by_label("Origin").select_option("user_asserted")
    await page.get_by_role("button", name="Apply filters").click()
    assert await page.locator("#memory-list > li").count() == len(seeded.garden)
    when = page.locator("#memory-list time").first
    assert await when.inner_text() == "just now"
    exact = await when.get_attribute("title")
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", exact or "")

    await browser.open(f"/console/memories/{seeded.merged}")
    await playwright_api.expect(page.locator("#lineage-sources li")).to_have_count(2)
    assert await page.get_by_role("heading", level=1).inner_text() == (
        "Standup moved to 9:30. Standup is in room B."
    )
    created = await page.locator("#record-created").inner_text()
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", created)
    await page.locator("#lineage-sources a").first.click()
    assert await page.locator("#lineage-merged").is_visible()
    await browser.open(f"/console/memories/{seeded.image}")
    assert await page.get_by_role("heading", name="Image description").is_visible()
    assert await page.get_by_text("gs://team-bucket/whiteboard.png").is_visible()


@pytest.mark.anyio
async def test_a_topic_that_names_none_suggests_the_topics_containing_it(browser: Browser) -> None:
    seed(browser.live.service)
    browser.live.service.save(ADMIN, content="Prune the roses.", topic="Garden-Roses")
    page = browser.page
    await browser.sign_in("/console?topic=gard")

    assert "No topic is named “gard”" in await page.get_by_role("alert").inner_text()
    suggestions = page.locator(".suggestions a")
    assert await suggestions.all_inner_texts() == ["garden", "Garden-Roses"]
    await suggestions.last.click()
    assert await page.locator("#memory-list h3").all_inner_texts() == ["Prune the roses."]
    names = await page.locator("#topic-names option").evaluate_all("o => o.map(e => e.value)")
    assert set(names) == {"garden", "Garden-Roses", "trip", "work"}


@pytest.mark.anyio
async def test_search_shows_the_score_breakdown_of_each_result(browser: Browser) -> None:
    seed(browser.live.service)
    page = browser.page
    await browser.sign_in("/console/search")

    await page.get_by_label("Query").fill("tomatoes sun")
    await page.keyboard.press("Enter")

    first = page.locator("#results > li").first
    await first.wait_for()
    assert "Tomatoes need six hours of sun" in await first.inner_text()
    parts = [
        float(await first.locator(f"dd.{name}").inner_text())
        for name in ("semantic", "keyword", "context")
    ]
    score = float(await first.locator("dd.score").inner_text())
    assert sum(parts) == pytest.approx(score, abs=0.002)
    assert parts[1] > 0


@pytest.mark.anyio
async def test_owner_deprecates_with_a_replacement_found_by_search_after_confirming(
    browser: Browser,
) -> None:
    live = browser.live
    seeded = seed(live.service)
    page = browser.page
    first = seeded.garden[0]
    await browser.sign_in(f"/console/memories/{first}")

    await (
        page.get_by_role("group", name="Change this memory")
        .get_by_role("button", name="Deprecate…")
        .click()
    )
    await page.get_by_role("heading", name="Deprecate this memory?").wait_for()
    await page.get_by_label("Find the memory that replaces it").fill("basil planted")
    await page.get_by_role("button", name="Find").click()
    assert live.service.fetch(ADMIN, id=first)["item"]["metadata"]["branch_state"] == "active"
    await page.get_by_label(re.compile("^The basil is planted next to the tomatoes")).check()
    await page.get_by_label(re.compile("^changed")).check()
    await page.get_by_role("button", name="Deprecate", exact=True).click()

    assert await browser.notice() == "The memory was deprecated."
    assert await page.locator("#record-state").inner_text() == "deprecated"
    assert await page.locator("#chain a").first.inner_text() == (
        "The basil is planted next to the tomatoes."
    )
    await page.locator("#chain a").first.click()
    replaced = page.locator("#replaced a")
    assert await replaced.all_inner_texts() == ["Tomatoes need six hours of sun a day."]


@pytest.mark.anyio
async def test_a_refused_deprecation_keeps_the_choice_and_shows_why(browser: Browser) -> None:
    live = browser.live
    seeded = seed(live.service)
    first, second, third = seeded.garden
    page = browser.page
    browser.expected_statuses.add(409)
    await browser.sign_in(f"/console/memories/{first}/deprecate?q=water+garden")
    await page.get_by_label(re.compile("^Water the garden before 9 am")).check()
    await page.get_by_label(re.compile("^corrected")).check()

    # Meanwhile an agent deprecates it with another replacement.
    live.service.deprecate(ADMIN, id=first, superseding_id=second)
    await page.get_by_role("button", name="Deprecate", exact=True).click()

    assert "already deprecated" in await page.get_by_role("alert").inner_text()
    assert await page.get_by_label(re.compile("^Water the garden before 9 am")).is_checked()
    assert await page.get_by_label(re.compile("^corrected")).is_checked()
    query = await page.get_by_label("Find the memory that replaces it").input_value()
    assert query == "water garden"
    meta = live.service.fetch(ADMIN, id=first)["item"]["metadata"]
    assert meta["superseded_by"] == second
    assert third != second


@pytest.mark.anyio
async def test_owner_corrects_and_promotes_and_a_refused_correction_keeps_the_text(
    browser: Browser,
) -> None:
    live = browser.live
    seeded = seed(live.service)
    page = browser.page
    third = seeded.garden[2]
    await browser.sign_in(f"/console/memories/{third}")
    browser.expected_statuses.add(400)

    too_long = "Water the garden before 8 am. " * 700  # over the 20,000-character limit
    await page.get_by_label("Corrected content").fill(too_long)
    await page.get_by_role("button", name="Save correction").click()
    assert "the limit is 20000" in await page.get_by_role("alert").inner_text()
    assert await page.get_by_role("heading", level=1).inner_text() == (
        "Water the garden before 9 am in summer."
    )
    assert await page.get_by_label("Corrected content").input_value() == too_long
    assert live.service.fetch(ADMIN, id=third)["item"]["metadata"]["branch_state"] == "active"

    await page.get_by_label("Corrected content").fill("Water the garden before 8 am.")
    await page.get_by_role("button", name="Save correction").click()
    assert "correction was saved" in await page.get_by_role("status").inner_text()
    assert await page.locator("#record-content").inner_text() == "Water the garden before 8 am."
    assert await page.locator("#replaced a").all_inner_texts() == [
        "Water the garden before 9 am in summer."
    ]
    wrong = live.service.fetch(ADMIN, id=third)["item"]["metadata"]
    assert wrong["supersession_reason"] == "corrected"

    await browser.open(f"/console/memories/{seeded.drafts[0]}")
    await page.get_by_role("button", name="Promote draft").click()
    assert await page.locator("#record-state").inner_text() == "active"


@pytest.mark.anyio
async def test_consolidation_preview_drops_a_draft_and_keeps_the_owners_edit(
    browser: Browser,
) -> None:
    live = browser.live
    seeded = seed(live.service)
    late = live.service.save(
        ADMIN, content="Draft: the hotel is near Rossio station.", topic="trip", draft=True
    )["item"]["id"]
    page = browser.page
    await browser.sign_in("/console/consolidate")

    await page.get_by_role("combobox", name="Topic with drafts").select_option("trip")
    await page.get_by_role("button", name="Preview").click()
    await playwright_api.expect(page.locator("#preview-sources .choice")).to_have_count(3)
    assert await page.locator("#preview-merged").input_value() == (
        "We fly to Lisbon on May 3. The hotel is near Rossio station."
    )
    await page.get_by_label(re.compile("^Draft: the hotel")).uncheck()
    await page.get_by_role("button", name="Update preview").click()
    await playwright_api.expect(page.locator("#preview-sources .choice")).to_have_count(2)
    assert live.service.fetch(ADMIN, id=late)["item"]["metadata"]["branch_state"] == "wip"
    edited = "We fly to Lisbon on May 3 (TP 1234); the hotel is near Rossio station."
    await page.get_by_label(re.compile("^Merged memory")).fill(edited)
    await page.get_by_role("button", name="Confirm consolidation").click()

    assert "merged into this one" in await page.get_by_role("status").inner_text()
    assert await page.locator("#record-content").inner_text() == edited
    assert "then edited by you" in await page.locator("#merged-by").inner_text()
    await playwright_api.expect(page.locator("#lineage-sources li")).to_have_count(2)
    for source in seeded.drafts:
        meta = live.service.fetch(ADMIN, id=source)["item"]["metadata"]
        assert meta["branch_state"] == "deprecated"
    assert live.service.fetch(ADMIN, id=late)["item"]["metadata"]["branch_state"] == "wip"


@pytest.mark.anyio
async def test_owner_consolidates_chosen_active_memories_of_two_topics(browser: Browser) -> None:
    live = browser.live
    seeded = seed(live.service)
    page = browser.page
    await browser.sign_in("/console?state=active")

    await page.get_by_label("Select Tomatoes need six hours of sun a day.").check()
    await page.get_by_label("Select Whiteboard from the planning meeting").check()
    await page.get_by_role("button", name="Consolidate selected…").click()
    await page.get_by_role("heading", name="Consolidate 2 memories").wait_for()
    topic = page.get_by_label("Topic of the merged memory")
    assert await topic.input_value() in ("garden", "work")
    await topic.fill("planning")
    await page.get_by_role("button", name="Confirm consolidation").click()

    status = await page.get_by_role("status").inner_text()
    assert status == "The memories were merged into this one."
    assert await page.locator(".crumb a").inner_text() == "← planning"
    for source in (seeded.garden[0], seeded.image):
        meta = live.service.fetch(ADMIN, id=source)["item"]["metadata"]
        assert meta["branch_state"] == "deprecated"


@pytest.mark.anyio
async def test_owner_erases_a_record_a_selection_and_a_topic_after_confirming_the_count(
    browser: Browser,
) -> None:
    live = browser.live
    seeded = seed(live.service)
    for number in range(3):
        live.service.save(ADMIN, content=f"Scratch note {number}", topic="scratch")
    page = browser.page
    first, second, third = seeded.garden
    await browser.sign_in(f"/console/memories/{first}")

    await page.get_by_role("button", name="Erase…").click()
    await page.get_by_role("heading", name="Erase 1 memory?").wait_for()
    assert live.store.get(first) is not None
    await page.get_by_role("button", name="Erase 1 memory").click()
    assert await page.get_by_role("status").inner_text() == (
        "1 memory erased; a tombstone stays for each."
    )
    assert live.store.get(first) is None

    await browser.open("/console?topic=garden")
    await page.get_by_label("Select Water the garden before 9 am in summer.").check()
    await page.get_by_label("Select The basil is planted next to the tomatoes.").check()
    await page.get_by_role("button", name="Erase selected…").click()
    await page.get_by_role("heading", name="Erase 2 memories?").wait_for()
    await page.get_by_role("button", name="Erase 2 memories").click()
    await page.get_by_role("status").wait_for()
    assert [live.store.get(i) for i in (second, third)] == [None, None]

    await browser.open("/console?topic=scratch")
    await page.get_by_role("link", name="Erase all 3 memories of “scratch”…").click()
    await page.get_by_role("heading", name="Erase 3 memories?").wait_for()
    await page.get_by_role("button", name="Erase 3 memories").click()
    assert "3 memories erased" in await page.get_by_role("status").inner_text()
    assert "scratch" not in live.store.topic_counts()


@pytest.mark.anyio
async def test_owner_revokes_a_grant_on_the_clients_page(browser: Browser) -> None:
    live = browser.live
    oauth = OAuthLive(live.url, live.store, live.app, documents=None)  # type: ignore[arg-type]
    agent = Browserless(oauth)
    client = agent.register(client_name="Notes Agent")
    agent.sign_in()
    tokens = agent.tokens(client["client_id"])
    agent.close()
    used = tool_call(oauth.mcp, tokens["access_token"], "search_context", {"query": "sun"})
    assert used.status_code == 200, used.text
    live.flush_events()
    page = browser.page
    await browser.sign_in("/console/clients")

    card = page.locator("#grants li", has_text="Notes Agent")
    assert "not in" not in await card.inner_text()
    await card.get_by_role("link", name=re.compile("^Revoke Notes Agent")).click()
    await page.get_by_role("button", name=re.compile("^Revoke Notes Agent")).click()
    browser.expected_statuses.add(401)

    assert "revoked" in await page.get_by_role("status").inner_text()
    assert await page.locator("#grants li", has_text="Notes Agent").count() == 0
    assert tools_list(oauth.mcp, tokens["access_token"]).status_code == 401


@pytest.mark.anyio
async def test_activity_charts_render_from_real_events_and_the_backup_downloads(
    browser: Browser,
) -> None:
    live = browser.live
    seed(live.service)
    make_events(live.url)
    live.flush_events()
    page = browser.page
    await browser.sign_in("/console/activity")

    charts = page.locator("svg.chart")
    # By client, space and person; relevant; latency; refusals; growth (new memories per
    # day, by space, by topic).
    assert await charts.count() == 9
    for index in range(9):
        assert await charts.nth(index).is_visible()
    assert await page.locator("#chart-calls rect.bar").count() >= 1
    relevant = page.locator("#chart-relevant circle.point", has_text="with a relevant result: 50%")
    assert await relevant.count() == 1  # of two searches, one found nothing
    assert "50% of searches (1 of 2)" in await page.locator("#search-health").inner_text()
    assert await page.locator("#chart-latency circle.point").count() >= 2
    refusals = page.locator("#chart-refusals rect.bar", has_text="wrong or no token: 1")
    assert await refusals.count() == 1
    box = await page.locator("#chart-calls").bounding_box()
    assert box is not None
    assert box["height"] > 100

    async with page.expect_download() as waiting:
        await page.get_by_role("link", name="Download a portable backup").click()
    download = await waiting.value
    assert download.suggested_filename.startswith("metacortex-backup-")
    saved = await anyio.Path(await download.path()).stat()
    assert saved.st_size > 200


@pytest.mark.anyio
async def test_a_forged_csrf_token_is_refused_and_changes_nothing(browser: Browser) -> None:
    live = browser.live
    seeded = seed(live.service)
    page = browser.page
    await browser.sign_in(f"/console/memories/{seeded.garden[0]}")

    browser.expected_statuses.add(403)
    await page.locator("#correct-form input[name=csrf]").evaluate("e => e.value = 'forged'")
    await page.get_by_label("Corrected content").fill("Tomatoes need eight hours of sun.")
    await page.get_by_role("button", name="Save correction").click()

    assert await page.get_by_role("heading", level=1).inner_text() == "The form expired"
    meta = live.service.fetch(ADMIN, id=seeded.garden[0])["item"]["metadata"]
    assert meta["branch_state"] == "active"


@pytest.mark.anyio
async def test_an_expired_session_asks_to_sign_in_again(browser: Browser) -> None:
    live = browser.live
    seeded = seed(live.service)
    page = browser.page
    await browser.sign_in(f"/console/memories/{seeded.garden[0]}")
    cookies = await page.context.cookies()
    [value] = [c["value"] for c in cookies if c["name"].endswith("mc_owner")]
    data = live.store.auth_get(KIND, digest(value))
    assert data is not None
    live.store.auth_put(KIND, digest(value), data, utc_now())
    browser.expected_statuses.add(403)

    await page.get_by_role("button", name="Save correction").click()

    assert "Your session ended" in await page.get_by_role("alert").inner_text()
    meta = live.service.fetch(ADMIN, id=seeded.garden[0])["item"]["metadata"]
    assert meta["branch_state"] == "active"
    await page.fill("#passphrase", PASSPHRASE)
    await page.click("button[type=submit]")
    await page.get_by_role("heading", name="Memories", exact=True).wait_for()


@pytest.mark.anyio
async def test_signing_in_over_the_limit_is_refused_with_the_wait(browser: Browser) -> None:
    page = browser.page
    browser.expected_statuses.update({401, 429})
    for _ in range(5):
        await browser.open("/console")
        await page.fill("#passphrase", "not the passphrase at all")
        await page.click("button[type=submit]")
        assert await page.get_by_role("alert").inner_text() == "That passphrase is not correct."

    await page.fill("#passphrase", PASSPHRASE)
    await page.click("button[type=submit]")

    assert "Too many sign-in attempts" in await page.get_by_role("alert").inner_text()
    assert await page.get_by_role("navigation", name="Console").count() == 0


@pytest.mark.anyio
async def test_no_page_logs_a_console_error(browser: Browser) -> None:
    seeded = seed(browser.live.service)
    make_events(browser.live.url)
    browser.live.flush_events()
    await browser.sign_in()
    for path in (
        "/console",
        "/console?state=all",
        f"/console/memories/{seeded.merged}",
        f"/console/memories/{seeded.image}",
        f"/console/memories/{seeded.drafts[0]}",
        "/console/search?q=standup",
        "/console/consolidate",
        f"/console/erase?id={seeded.garden[0]}",
        "/console/clients",
        "/console/activity",
    ):
        await browser.open(path)
        await browser.page.get_by_role("navigation", name="Console").wait_for()
        unlabelled = await browser.page.evaluate(UNLABELLED_CONTROLS)
        assert unlabelled == [], (path, unlabelled)
        assert await browser.page.locator("h1").count() == 1
    assert browser.problems == []


@pytest.mark.anyio
async def test_the_console_is_usable_from_the_keyboard(browser: Browser) -> None:
    seeded = seed(browser.live.service)
    page = browser.page
    await browser.sign_in()

    await page.keyboard.press("Tab")
    assert await page.evaluate("document.activeElement.textContent") == "Skip to content"
    await page.keyboard.press("Tab")
    assert await page.evaluate("document.activeElement.textContent") == "Memories"
    await page.keyboard.press("Tab")
    await page.keyboard.press("Enter")
    await page.get_by_role("heading", name="Search", exact=True).wait_for()
    await page.keyboard.type("standup")
    await page.keyboard.press("Enter")
    await page.locator("#results > li").first.wait_for()
    await browser.open(f"/console/memories/{seeded.drafts[0]}")
    await page.get_by_role("button", name="Promote draft").focus()
    await page.keyboard.press("Enter")
    await page.get_by_role("status").wait_for()
    assert await page.locator("#record-state").inner_text() == "active"


# Every visible form control with no accessible name (a <label>, aria-label or aria-labelledby).
UNLABELLED_CONTROLS: Final = """
() => [...document.querySelectorAll('input, select, textarea, button')]
  .filter(e => e.type !== 'hidden')
  .filter(e => !(e.labels && e.labels.length) && !e.getAttribute('aria-label')
               && !e.getAttribute('aria-labelledby') && !(e.textContent || '').trim())
  .map(e => e.outerHTML)
"""
