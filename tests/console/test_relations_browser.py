"""Relations in the console, in a real headless Chromium (Debian's ``chromium`` driven by
Playwright with the system binary) against the real app and its SQLite store: a
memory's page draws its neighbourhood as a server-made SVG (no script) with the same
relations listed as text, a topic's graph page draws its memories' relations, both pass
axe-core (WCAG 2.2 AA, target size) and fit a phone and a desktop, light and dark; the
owner adds and invalidates a relation from the page (owner events); a person who is not
the owner is offered neither and cannot post them (real loopback HTTP)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from metacortex.kernel.events import MEMORY_EVENTS
from metacortex.service import Access
from tests.console.browser_checks import axe_script
from tests.console.browsing import Browser, chromium_on
from tests.console.people_browser import page_problems, screenshot
from tests.console.support import ADMIN, ConsoleLive, console_server
from tests.oauth_support import hidden
from tests.owner.people_support import ANN_PASSPHRASE, Household, PersonBrowser

pytestmark = pytest.mark.slow

TOPIC = "home/renovating-the-old-farmhouse-kitchen-before-winter-2027"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass(frozen=True)
class Linked:
    """A kitchen plan and what relates to it: the budget relates to the plan, the oven
    choice extends it, the delivery date updates the oven choice (two links away), and a
    memory with no relation."""

    plan: str
    budget: str
    oven: str
    delivery: str
    alone: str


def _save(live: ConsoleLive, content: str, relations: list[dict[str, str]] | None = None) -> str:
    saved = live.service.save(ADMIN, content=content, topic=TOPIC, relations=relations)
    return str(saved["item"]["id"])


def link_kitchen(live: ConsoleLive) -> Linked:
    plan = _save(
        live,
        "The kitchen plan: an island with a butcher-block top, open shelves on the north "
        "wall and the sink moved under the window so the morning light reaches it",
    )
    budget = _save(
        live,
        "Budget for the kitchen is 18,000 euros including the electrician and the plumber",
        [{"id": plan, "type": "relates_to", "note": "what the plan may cost"}],
    )
    oven = _save(
        live,
        "We chose the induction hob and a steam oven for the island, both from the same shop",
        [{"id": plan, "type": "extends", "note": "appliances for the island"}],
    )
    delivery = _save(
        live,
        "The steam oven is delivered on March 3; the old range goes to the recycling centre",
        [{"id": oven, "type": "updates"}],
    )
    alone = _save(live, "Paint samples: sage green for the cupboards, warm white walls")
    return Linked(plan, budget, oven, delivery, alone)


@pytest.fixture
async def browser(live: ConsoleLive) -> AsyncIterator[Browser]:
    axe_script()  # installed (or skipped loudly) before the browser starts
    async with chromium_on(live, bypass_csp=True) as driver:
        yield driver
    assert driver.problems == []


async def _drawn(page: Any, figure: str) -> tuple[set[str], set[tuple[str, str, str]]]:
    nodes = await page.locator(f"{figure} svg g.node").evaluate_all(
        "gs => gs.map(g => g.dataset.id)"
    )
    edges = await page.locator(f"{figure} svg g.edge").evaluate_all(
        "gs => gs.map(g => [g.dataset.source, g.dataset.target, g.dataset.type])"
    )
    return set(nodes), {(s, t, k) for s, t, k in edges}


@pytest.mark.anyio
async def test_a_memorys_page_draws_its_neighbourhood_and_lists_the_same_relations(
    browser: Browser,
) -> None:
    kitchen = link_kitchen(browser.live)
    await browser.sign_in(f"/console/memories/{kitchen.plan}")
    page = browser.page
    await screenshot(page, "console-relations")

    nodes, edges = await _drawn(page, "#neighbourhood-figure")
    labels = await page.locator("#neighbourhood-figure svg g.node text").evaluate_all(
        "ts => ts.map(t => t.textContent)"
    )
    title = await page.locator("svg#neighbourhood > title").text_content()
    description = await page.locator("svg#neighbourhood > desc").text_content()
    listed = await page.locator("#relation-list > li").all_inner_texts()

    assert nodes == {kitchen.plan, kitchen.budget, kitchen.oven, kitchen.delivery}
    assert edges == {
        (kitchen.budget, kitchen.plan, "relates_to"),
        (kitchen.oven, kitchen.plan, "extends"),
        (kitchen.delivery, kitchen.oven, "updates"),
    }
    assert sorted(
        await page.locator("svg#neighbourhood g.edge text").evaluate_all(
            "ts => ts.map(t => t.textContent)"
        )
    ) == ["extends", "relates_to", "updates"]
    assert "The kitchen plan: an…" in labels  # the summary, cut to fit its box
    assert all(len(text) <= 22 for text in labels)
    assert await page.locator("svg#neighbourhood").get_attribute("role") == "img"
    assert title is not None
    assert title.startswith("Memories related to “The kitchen plan")
    assert description is not None
    assert "3 memories within 2 links" in description
    assert len(listed) == 3
    assert any("relates to" in item and "what the plan may cost" in item for item in listed)
    assert await page.locator("script").count() == 1  # the layout's copy buttons only


@pytest.mark.anyio
async def test_a_topics_graph_page_draws_the_related_memories_and_lists_the_others(
    browser: Browser,
) -> None:
    kitchen = link_kitchen(browser.live)
    await browser.sign_in(f"/console/memories/{kitchen.plan}")
    page = browser.page

    await page.get_by_role("link", name=f"Relations in the topic “{TOPIC}”").click()
    await screenshot(page, "console-topic-graph")
    nodes, edges = await _drawn(page, "#topic-graph-figure")

    assert nodes == {kitchen.plan, kitchen.budget, kitchen.oven, kitchen.delivery}
    assert len(edges) == 3
    assert await page.locator("#alone li").all_inner_texts() == [
        "Paint samples: sage green for the cupboards, warm white walls"
    ]
    assert await page.locator("#graph-next").count() == 0


@pytest.mark.anyio
async def test_the_relation_pages_pass_axe_and_fit_a_phone_and_a_desktop(
    browser: Browser,
) -> None:
    kitchen = link_kitchen(browser.live)
    await browser.sign_in("/console")
    url = browser.live.url

    problems = await page_problems(browser.page, f"{url}/console/memories/{kitchen.plan}")
    problems |= await page_problems(browser.page, f"{url}/console/memories/{kitchen.alone}")
    problems |= await page_problems(browser.page, f"{url}/console/graph?topic={TOPIC}")

    assert problems == {}


def _owner_actions(live: ConsoleLive) -> list[tuple[str, str, dict[str, Any]]]:
    live.flush_events()
    return [
        (str(event["tool_name"]), str(event["status"]), dict(event["request"]))
        for event in live.store.read_events(MEMORY_EVENTS)
        if event["event_type"] == "owner_action"
    ]


@pytest.mark.anyio
async def test_the_owner_adds_a_relation_and_invalidates_it_from_the_memorys_page(
    browser: Browser,
) -> None:
    live = browser.live
    kitchen = link_kitchen(live)
    await browser.sign_in(f"/console/memories/{kitchen.alone}")
    page = browser.page
    assert await page.locator("#no-relations").count() == 1

    await page.get_by_label("Other memory's id").fill(kitchen.plan)
    await page.get_by_label("Type").select_option("relates_to")
    await page.get_by_label("Note (why; optional)").fill("colours for the new kitchen")
    await page.get_by_role("button", name="Add relation").click()

    assert await browser.notice() == "The relation was added."
    nodes, edges = await _drawn(page, "#neighbourhood-figure")
    assert (kitchen.alone, kitchen.plan, "relates_to") in edges
    assert {kitchen.alone, kitchen.plan} <= nodes

    await (
        page.locator("#relation-list li", has_text="colours for the new kitchen")
        .get_by_role("button", name="Invalidate")
        .click()
    )

    assert await browser.notice() == (
        "The relation was invalidated; it is kept, marked invalid, for history."
    )
    assert await page.locator("#no-relations").count() == 1
    kept = live.store.relations_of([kitchen.alone], include_invalid=True)
    assert [(r.target, r.type.value, r.valid) for r in kept] == [
        (kitchen.plan, "relates_to", False)
    ]
    assert kept[0].invalidated_by is not None
    actions = _owner_actions(live)
    assert [(name, status) for name, status, _ in actions] == [
        ("relate", "ok"),
        ("invalidate_relation", "ok"),
    ]
    assert actions[0][2] == {
        "id": kitchen.alone,
        "target_id": kitchen.plan,
        "type": "relates_to",
        "note_chars": len("colours for the new kitchen"),
    }


@pytest.mark.anyio
async def test_a_refused_relation_shows_the_page_again_with_the_error_and_what_was_typed(
    browser: Browser,
) -> None:
    live = browser.live
    kitchen = link_kitchen(live)
    browser.expected_statuses |= {400}
    await browser.sign_in(f"/console/memories/{kitchen.alone}")
    page = browser.page

    await page.get_by_label("Other memory's id").fill(kitchen.alone)
    await page.get_by_label("Note (why; optional)").fill("itself")
    await page.get_by_role("button", name="Add relation").click()

    assert "cannot be related to itself" in await page.get_by_role("alert").inner_text()
    assert await page.get_by_label("Other memory's id").input_value() == kitchen.alone
    assert await page.get_by_label("Note (why; optional)").input_value() == "itself"
    assert live.store.relations_of([kitchen.alone], include_invalid=True) == []
    assert [(name, status) for name, status, _ in _owner_actions(live)] == [("relate", "error")]


@pytest.fixture
def people_live(tmp_path: Path) -> Iterator[ConsoleLive]:
    with console_server(tmp_path, oauth=False, metacortex_client_refresh_seconds=0) as running:
        yield running


def test_a_person_who_is_not_the_owner_sees_no_relation_actions_and_cannot_post_them(
    people_live: ConsoleLive,
) -> None:
    live = people_live
    household = Household.signed_up(live.store)
    owner = Access.admin(directory=household.registry.directory())
    plan = live.service.save(owner, content="The family trip plan", space="family")["item"]["id"]
    hotel = live.service.save(
        owner,
        content="The hotel is booked for the family trip",
        space="family",
        relations=[{"id": plan, "type": "extends"}],
    )["item"]["id"]
    ann = PersonBrowser(live.url)  # a writer in family, not the owner
    try:
        assert ann.sign_in("ann@example.com", ANN_PASSPHRASE).status_code == 303
        page = ann.http.get(f"/console/memories/{hotel}", params={"space": "family"})
        csrf = hidden(page.text, "csrf")
        added = ann.http.post(
            f"/console/memories/{hotel}/relations?space=family",
            data={"csrf": csrf, "target_id": plan, "type": "relates_to", "note": ""},
        )
        invalidated = ann.http.post(
            f"/console/memories/{hotel}/relations/invalidate?space=family",
            data={"csrf": csrf, "source_id": hotel, "type": "extends", "target_id": plan},
        )
    finally:
        ann.close()

    assert page.status_code == 200
    assert 'id="neighbourhood"' in page.text  # she sees the picture
    assert 'id="relate-form"' not in page.text
    assert "invalidate-relation" not in page.text
    assert added.status_code == 403
    assert invalidated.status_code == 403
    assert "Only the owner adds or invalidates relations" in added.text
    relations = live.store.relations_of([hotel], space="family", include_invalid=True)
    assert [(r.type.value, r.valid) for r in relations] == [("extends", True)]
