"""Undo and changes to a selection, in a real headless Chromium (Debian's ``chromium``
through Playwright) against the real app and its SQLite store.

A deprecation, a correction and a promotion are confirmed on the memory's page with an
Undo button that lasts 15 minutes; undo goes through ``MemoryService.undo`` (all or
nothing, refused when the memory changed since) and is recorded as an owner event.
On the browse page "Select all" ticks the page, and deprecate, promote and move to a
topic act on the ticked memories after a confirmation, with one Undo for all of them.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest

from metacortex.console.undoing import KIND
from metacortex.domain.records import utc_now
from metacortex.kernel.events import MEMORY_EVENTS
from tests.console.browsing import Browser, chromium_on
from tests.console.support import ADMIN, ConsoleLive, seed

pytestmark = pytest.mark.slow
expect = pytest.importorskip("playwright.async_api").expect


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def browser(live: ConsoleLive) -> AsyncIterator[Browser]:
    async with chromium_on(live) as driver:
        yield driver
    assert driver.problems == []


def _meta(live: ConsoleLive, memory_id: str) -> dict[str, object]:
    meta: dict[str, object] = live.service.fetch(ADMIN, id=memory_id)["item"]["metadata"]
    return meta


def _owner_actions(live: ConsoleLive) -> list[tuple[str, str]]:
    live.flush_events()
    return [
        (str(event["tool_name"]), str(event["status"]))
        for event in live.store.read_events(MEMORY_EVENTS)
        if event["event_type"] == "owner_action"
    ]


async def _deprecate(browser: Browser) -> None:
    page = browser.page
    await (
        page.get_by_role("group", name="Change this memory")
        .get_by_role("button", name="Deprecate…")
        .click()
    )
    await page.get_by_role("button", name="Deprecate", exact=True).click()


@pytest.mark.anyio
async def test_a_deprecation_is_undone_from_the_page_that_confirms_it(browser: Browser) -> None:
    live = browser.live
    memory = seed(live.service).garden[0]
    before = _meta(live, memory)
    await browser.sign_in(f"/console/memories/{memory}")

    await _deprecate(browser)
    assert await browser.notice() == "The memory was deprecated."
    offer = await browser.page.locator("#undo-form").inner_text()
    assert re.search(r"Undo\s+until \d\d:\d\d UTC \(15 minutes after the change\)", offer)
    await browser.page.get_by_role("button", name="Undo").click()

    assert await browser.notice() == (
        "Undone: the memory is back as it was before the deprecation."
    )
    assert await browser.page.locator("#record-state").inner_text() == "active"
    after = _meta(live, memory)
    for field in ("branch_state", "superseded_by", "supersession_reason", "valid_until"):
        assert after[field] == before[field]
    assert await browser.page.locator("#undo-form").count() == 0
    assert _owner_actions(live) == [("deprecate", "ok"), ("undo", "ok")]


@pytest.mark.anyio
async def test_undoing_a_correction_brings_back_the_original_and_retires_the_correction(
    browser: Browser,
) -> None:
    live = browser.live
    wrong = seed(live.service).garden[2]
    page = browser.page
    await browser.sign_in(f"/console/memories/{wrong}")

    await page.get_by_role("link", name="Correct…").click()
    await expect(page.get_by_label("Corrected content")).to_be_focused()
    await page.get_by_label("Corrected content").fill("Water the garden before 8 am.")
    await page.get_by_role("button", name="Save correction").click()
    assert "correction was saved" in await browser.notice()
    correction = page.url.split("/console/memories/")[1].split("?")[0]
    await page.get_by_role("button", name="Undo").click()

    assert "the correction is deprecated" in await browser.notice()
    assert page.url.split("/console/memories/")[1].split("?")[0] == wrong
    assert _meta(live, wrong)["branch_state"] == "active"
    retired = _meta(live, correction)
    assert (retired["branch_state"], retired["superseded_by"]) == ("deprecated", wrong)
    assert await page.locator("#replaced a").all_inner_texts() == ["Water the garden before 8 am."]


@pytest.mark.anyio
async def test_undoing_a_promotion_makes_a_draft_again(browser: Browser) -> None:
    draft = seed(browser.live.service).drafts[0]
    await browser.sign_in(f"/console/memories/{draft}")

    await browser.page.get_by_role("button", name="Promote draft").click()
    assert await browser.page.locator("#record-state").inner_text() == "active"
    await browser.page.get_by_role("button", name="Undo").click()

    assert await browser.notice() == "Undone: the memory is a draft again."
    assert _meta(browser.live, draft)["branch_state"] == "wip"


@pytest.mark.anyio
async def test_an_undo_after_an_agent_changed_the_memory_is_refused_and_changes_nothing(
    browser: Browser,
) -> None:
    live = browser.live
    memory = seed(live.service).garden[0]
    await browser.sign_in(f"/console/memories/{memory}")
    await _deprecate(browser)
    live.service.move(ADMIN, id=memory, topic="kitchen-garden")  # meanwhile
    browser.expected_statuses.add(409)

    await browser.page.get_by_role("button", name="Undo").click()

    alert = await browser.page.get_by_role("alert").inner_text()
    assert f"memory '{memory}' changed after the deprecate" in alert
    assert "nothing was undone" in alert
    assert _meta(live, memory)["branch_state"] == "deprecated"


@pytest.mark.anyio
async def test_an_undo_whose_time_is_over_says_how_long_undo_lasts(browser: Browser) -> None:
    live = browser.live
    memory = seed(live.service).garden[0]
    await browser.sign_in(f"/console/memories/{memory}")
    await _deprecate(browser)
    key = await browser.page.locator("#undo-form input[name=undo]").input_value()
    data = live.store.auth_get(KIND, key)
    assert data is not None
    live.store.auth_put(KIND, key, data, utc_now() - timedelta(seconds=1))  # 15 minutes on
    browser.expected_statuses.add(409)

    await browser.page.get_by_role("button", name="Undo").click()

    assert "undo lasts 15 minutes" in await browser.page.get_by_role("alert").inner_text()
    assert _meta(live, memory)["branch_state"] == "deprecated"


@pytest.mark.anyio
async def test_select_all_then_deprecate_the_selection_and_undo_it_at_once(
    browser: Browser,
) -> None:
    live = browser.live
    garden = seed(live.service).garden
    page = browser.page
    await browser.sign_in("/console?topic=garden")

    await page.get_by_role("button", name="Select all 3 on this page").click()
    await expect(page.locator("#selected-count")).to_have_text("3 selected")
    assert await page.get_by_role("button", name="Clear the selection").is_visible()
    await page.get_by_role("button", name="Deprecate selected…").click()
    await page.get_by_role("heading", name="Deprecate 3 memories?").wait_for()
    assert [_meta(live, i)["branch_state"] for i in garden] == ["active"] * 3
    await page.get_by_label(re.compile("^corrected")).check()
    await page.get_by_role("button", name="Deprecate 3 memories").click()

    assert await browser.notice() == "3 memories deprecated."
    assert await page.locator("#bulk-records li").count() == 3
    assert {_meta(live, i)["supersession_reason"] for i in garden} == {"corrected"}
    await page.get_by_role("button", name="Undo").click()
    assert await browser.notice() == "Undone: 3 memories are back as they were."
    assert [_meta(live, i)["branch_state"] for i in garden] == ["active"] * 3
    assert _owner_actions(live) == [("deprecate", "ok"), ("undo", "ok")]


@pytest.mark.anyio
async def test_promote_a_selection_of_drafts(browser: Browser) -> None:
    live = browser.live
    drafts = seed(live.service).drafts
    page = browser.page
    await browser.sign_in("/console?topic=trip&state=wip")

    await page.get_by_role("button", name="Select all 2 on this page").click()
    await page.get_by_role("button", name="Promote selected…").click()
    assert "2 of them are drafts" in await page.locator("#bulk-summary").inner_text()
    await page.get_by_role("button", name="Promote 2 drafts").click()

    assert await browser.notice() == "2 memories promoted."
    assert [_meta(live, i)["branch_state"] for i in drafts] == ["active", "active"]


@pytest.mark.anyio
async def test_move_a_selection_to_a_topic_and_a_refused_name_suggests_the_accepted_one(
    browser: Browser,
) -> None:
    live = browser.live
    garden = seed(live.service).garden
    page = browser.page
    await browser.sign_in("/console?topic=garden")
    for memory_id in garden[:2]:
        await page.locator(f"#select-{memory_id}").check()
    await expect(page.locator("#selected-count")).to_have_text("2 selected")
    await page.get_by_role("button", name="Move selected to a topic…").click()
    browser.expected_statuses.add(400)

    await page.get_by_label("Move to topic").fill("architecture decisions")
    await page.get_by_role("button", name="Move 2 memories").click()
    alert = await page.get_by_role("alert").inner_text()
    assert "for example 'architecture-decisions'" in alert
    assert await page.get_by_label("Move to topic").input_value() == "architecture decisions"
    assert [_meta(live, i)["topic"] for i in garden] == ["garden"] * 3

    await page.get_by_label("Move to topic").fill("architecture-decisions")
    await page.get_by_role("button", name="Move 2 memories").click()
    assert await browser.notice() == "2 memories moved."
    assert [_meta(live, i)["topic"] for i in garden] == [
        "architecture-decisions",
        "architecture-decisions",
        "garden",
    ]
    await page.get_by_role("button", name="Undo").click()
    assert [_meta(live, i)["topic"] for i in garden] == ["garden"] * 3
