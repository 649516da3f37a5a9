"""Adding a memory by hand and a new store's first steps, over real loopback HTTP (the app
with OAuth off, its SQLite store; issue 41 §2): the form saves through ``save_context``'s
use case (search finds it, its relation is the tools' relation, the same text again is
kept once, an empty text is refused in console words and keeps what was typed), finds the
memory to link by search in the chosen space, and is not offered to a reader; the owner's
Memories page of a new store counts and ticks the four first steps."""

from __future__ import annotations

import re
from collections.abc import Iterator
from html import unescape
from pathlib import Path

import pytest

from metacortex.kernel.events import MEMORY_EVENTS
from metacortex.service import Access
from tests.console.support import ADMIN, ConsoleLive, Owner, console_server
from tests.oauth_support import tool_call
from tests.owner.people_support import ANN_PASSPHRASE, BEN_PASSPHRASE, Household, PersonBrowser
from tests.server.conftest import ADMIN_TOKEN

pytestmark = pytest.mark.slow


@pytest.fixture
def live(tmp_path: Path) -> Iterator[ConsoleLive]:
    settings = {"metacortex_client_refresh_seconds": 0, "mcp_client_profiles_json": None}
    with console_server(tmp_path, oauth=False, **settings) as running:  # no client yet
        yield running


def _saved_id(answer: object) -> str:
    location = getattr(answer, "headers")["location"]  # noqa: B009 (httpx2 response)
    found = re.search(r"/console/memories/([0-9a-z]{26})\?", location)
    assert found, location
    return found.group(1)


def test_the_form_saves_a_memory_that_search_finds_with_its_topic_and_space(
    owner: Owner, live: ConsoleLive
) -> None:
    answer = owner.post(
        "/console/new",
        action="save",
        content="The boiler is serviced every October by Heatwise",
        topic="house",
        space="default",
    )

    assert answer.status_code == 303, answer.text
    memory_id = _saved_id(answer)
    assert "done=saved" in answer.headers["location"]
    record = live.store.get(memory_id)
    assert record is not None
    assert (record.topic, record.space, record.branch_state.value) == ("house", "default", "active")
    assert record.created_by is not None
    assert record.created_by.via == "console"
    found = live.service.search(ADMIN, query="when is the boiler serviced")
    assert found["matches"][0]["id"] == memory_id
    page = owner.http.get(answer.headers["location"]).text
    assert "The memory was saved." in page


def test_the_form_finds_the_memory_to_link_by_search_and_saves_the_relation(
    owner: Owner, live: ConsoleLive
) -> None:
    older = live.service.save(ADMIN, content="The boiler is serviced every October")["item"]["id"]
    live.service.save(ADMIN, content="Paint samples: sage green for the cupboards")

    found = owner.post(
        "/console/new", action="find", content="Now serviced in September", q="boiler service"
    )
    assert found.status_code == 200
    assert f'value="{older}"' in found.text
    assert "Now serviced in September" in unescape(found.text)  # what was typed stays
    saved = owner.post(
        "/console/new",
        action="save",
        content="The boiler is now serviced in September",
        related=older,
        type="updates",
    )

    new_id = _saved_id(saved)
    related = live.service.related_context(ADMIN, id=new_id)
    assert [(e["source"], e["target"], e["type"]) for e in related["edges"]] == [
        (new_id, older, "updates")
    ]


def test_the_same_text_again_is_kept_once_and_an_empty_one_is_refused_keeping_the_topic(
    owner: Owner, live: ConsoleLive
) -> None:
    first = _saved_id(owner.post("/console/new", action="save", content="Keys are with Ann"))
    again = owner.post("/console/new", action="save", content="Keys are with Ann")
    empty = owner.post("/console/new", action="save", content="  ", topic="garden")

    assert _saved_id(again) == first
    assert "done=saved-duplicate" in again.headers["location"]
    assert empty.status_code == 400
    assert "Write the memory&#39;s text first" in empty.text
    assert 'value="garden"' in empty.text
    live.flush_events()
    added = [
        e
        for e in live.store.read_events(MEMORY_EVENTS)
        if e["event_type"] == "owner_action" and e["tool_name"] == "add_memory"
    ]
    assert len(added) == 3
    assert "Keys are with Ann" not in repr(added)  # lengths and ids, never the text


def test_a_reader_is_not_offered_the_form_and_cannot_post_it(live: ConsoleLive) -> None:
    household = Household.signed_up(live.store)
    ben = PersonBrowser(live.url)  # a reader: the role caps his family membership at read
    ann = PersonBrowser(live.url)  # writes in family, reads work
    try:
        assert ben.sign_in("ben@example.com", BEN_PASSPHRASE).status_code == 303
        assert ann.sign_in("ann@example.com", ANN_PASSPHRASE).status_code == 303
        live.service.save(
            Access.admin(directory=household.registry.directory()),
            content="Family dinner on Sundays",
            space="family",
        )
        home = ben.http.get("/console").text
        page = ben.http.get("/console/new")
        csrf = home.split('name="csrf" value="')[1].split('"')[0]
        posted = ben.http.post(
            "/console/new", data={"csrf": csrf, "action": "save", "content": "Ben was here"}
        )
        in_work = ann.http.get("/console/new", params={"space": "work"})
    finally:
        ben.close()
        ann.close()

    assert 'id="add-memory"' not in home
    assert page.status_code == 403
    assert "You may read this space but not change it" in page.text
    assert posted.status_code == 403
    everyone = Access.admin(directory=household.registry.directory())
    found = live.service.search(everyone, query="Ben was here", space="family")["matches"]
    assert "Ben was here" not in [match["summary"] for match in found]
    assert in_work.status_code == 200  # her one write space is offered instead
    assert re.search(r'<option value="family" selected>', in_work.text)


def test_a_new_stores_home_counts_and_ticks_the_four_first_steps(
    owner: Owner, live: ConsoleLive
) -> None:
    before = owner.http.get("/console").text
    created = owner.post("/console/clients", id="laptop", tools="search_context")
    assert created.status_code < 400, created.text
    live.service.save(ADMIN, content="The first memory of this store")
    after = owner.http.get("/console").text

    assert 'id="empty-store"' in before
    assert "First steps: 4 of 4 left" in before
    for step in ("connect", "memory", "invite", "documents"):
        assert f'id="step-{step}"' in before
    assert "metacortex client add my-agent --space default" in unescape(before)
    assert "metacortex ingest ~/notes --space default" in unescape(before)
    assert 'data-copy="the command to connect an application"' in before
    assert "First steps: 2 of 4 left" in after
    assert 'class="step done" id="step-connect"' in after
    assert 'class="step done" id="step-memory"' in after
    assert "1 application connected" in after
    assert 'id="add-memory"' in after


def test_the_activity_page_shows_new_memories_per_day_and_by_space_and_topic(
    owner: Owner, live: ConsoleLive
) -> None:
    """Issue 41 §2, growth: memories over time and by topic and space."""
    owner.post("/console/new", action="save", content="Tomatoes need sun", topic="garden")
    owner.post("/console/new", action="save", content="Basil beside them", topic="garden")
    saved = tool_call(
        live.url + "/mcp",
        ADMIN_TOKEN,
        "save_context",
        {"content": "Plan the roof", "topic": "house"},
    )
    assert saved.status_code == 200, saved.text
    live.flush_events()

    page = owner.http.get("/console/activity").text

    for chart in ("chart-saved", "chart-by-space", "chart-by-topic"):
        assert f'id="{chart}"' in page, chart
    assert "New memories per day" in page
    assert re.search(r'id="growth-table".*?<td>3</td>', page, re.S)
