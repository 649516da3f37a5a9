"""The console's spaces for the owner and for people, over real loopback HTTP (the app with
OAuth off, its SQLite store): the page's space carried in every link and form; the
owner's "All spaces"; who wrote each memory and with which client ("unattributed" for a
record saved before authors were kept); the filters by person, client and creation date
with the others; moving a memory to another space (the owner's, recorded as an event;
the use case refuses a person without write on the target); the Spaces and People
pages, which change the store through the registry and invitations the commands use;
the activity page by space and person; a consolidation's contested sources."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from types import MappingProxyType
from typing import Any

import httpx2
import pytest

from metacortex.access.model import Level, Person, Role
from metacortex.domain.records import ALL_STATES, BranchState, utc_now
from metacortex.errors import Forbidden
from metacortex.kernel.events import MEMORY_EVENTS
from metacortex.service import Access
from metacortex.storage.base import StoreTransaction
from tests.console.support import ConsoleLive, Owner, console_server, ids_in
from tests.oauth_support import hidden
from tests.owner.people_support import (
    ANN_PASSPHRASE,
    BEN_PASSPHRASE,
    Household,
    PersonBrowser,
)

pytestmark = pytest.mark.slow


def person_access(household: Household, person: Person, client: str) -> Access:
    """What ``person``'s client endpoint ``client`` acts with (home: family)."""
    directory = household.registry.directory()
    levels = {key: level for key in directory.spaces if (level := person.level_in(key))}
    return Access(
        frozenset(ALL_STATES),
        BranchState.ACTIVE,
        may_write_lifecycle=True,
        principal=client,
        levels=MappingProxyType(levels),
        default_space="family",
        person=person.id,
        names=MappingProxyType(directory.names()),
        directory=directory,
    )


class Team:
    """The household, and memories in family by Ann (client ``ann-laptop``) and the owner,
    one in work and one in default; one family memory saved before authors were kept."""

    def __init__(self, live: ConsoleLive) -> None:
        self.household = Household.signed_up(live.store)
        service = live.service
        owner = Access.admin(directory=self.household.registry.directory())
        ann = person_access(self.household, self.household.ann, "ann-laptop")

        def save(access: Access, content: str, space: str, topic: str) -> str:
            found = service.save(access, content=content, space=space, topic=topic)
            return str(found["item"]["id"])

        self.ann_meal = save(ann, "Ann cooks lentil soup on Mondays", "family", "meals")
        self.ann_chore = save(ann, "Ann waters the plants on Sundays", "family", "chores")
        self.owner_meal = save(owner, "The owner bakes bread on Fridays", "family", "meals")
        self.work = save(owner, "The work retro is on Thursday", "work", "team")
        self.default = save(owner, "The default plan is ready", "default", "plans")
        self.old = save(owner, "The old family recipe book is in the attic", "family", "meals")

        def unattributed(txn: StoreTransaction) -> None:
            record = txn.get(self.old)
            assert record is not None
            txn.put(replace(record, created_by=None, changed_by=None))

        live.store.transaction(unattributed, space="family")


@pytest.fixture
def live(tmp_path: Path) -> Iterator[ConsoleLive]:
    with console_server(tmp_path, oauth=False, metacortex_client_refresh_seconds=0) as running:
        yield running


@pytest.fixture
def team(live: ConsoleLive) -> Team:
    return Team(live)


@pytest.fixture
def owner(live: ConsoleLive, team: Team) -> Iterator[Owner]:
    user = Owner(live)
    assert user.sign_in().status_code == 303
    yield user
    user.close()


def _person(live: ConsoleLive, email: str, passphrase: str) -> Iterator[PersonBrowser]:
    browser = PersonBrowser(live.url)
    assert browser.sign_in(email, passphrase).status_code == 303
    yield browser
    browser.close()


@pytest.fixture
def ann(live: ConsoleLive, team: Team) -> Iterator[PersonBrowser]:
    yield from _person(live, "ann@example.com", ANN_PASSPHRASE)


@pytest.fixture
def ben(live: ConsoleLive, team: Team) -> Iterator[PersonBrowser]:
    yield from _person(live, "ben@example.com", BEN_PASSPHRASE)


def _owner_actions(live: ConsoleLive, name: str) -> list[dict[str, Any]]:
    live.flush_events()
    return [
        event
        for event in live.store.read_events(MEMORY_EVENTS)
        if event["event_type"] == "owner_action" and event["tool_name"] == name
    ]


def _switcher(html: str) -> list[str]:
    """The values the header's space switcher offers (none: no switcher)."""
    found = re.search(r'<select id="space-choice" name="space">(.*?)</select>', html, re.S)
    return re.findall(r'<option value="([^"]*)"', found.group(1)) if found else []


# ------------------------------------------------------------------ the page's space
def test_every_link_and_form_of_a_page_carries_its_space(owner: Owner, team: Team) -> None:
    page = owner.http.get("/console", params={"space": "family"}).text
    links = re.findall(r'href="(http://[^"]*/console[^"]*)"', page)
    assert links
    assert all("space=family" in link for link in links), [
        link for link in links if "space=family" not in link
    ]
    assert '<input type="hidden" name="space" value="family">' in page  # the GET forms
    assert set(ids_in(page)) == {team.ann_meal, team.ann_chore, team.owner_meal, team.old}

    record = owner.http.get(f"/console/memories/{team.ann_meal}", params={"space": "family"})
    assert record.status_code == 200
    assert f"/console/memories/{team.ann_meal}/correct?space=family" in record.text


def test_without_a_space_a_page_shows_the_callers_home_space(owner: Owner, team: Team) -> None:
    page = owner.http.get("/console").text
    assert ids_in(page) == [team.default]
    assert _switcher(page) == ["*", "default", "family", "work"]
    assert 'value="default" selected' in page


def test_a_person_switches_only_among_their_spaces(
    ann: PersonBrowser, ben: PersonBrowser, team: Team
) -> None:
    assert _switcher(ann.http.get("/console").text) == ["family", "work"]  # no "All spaces"
    assert _switcher(ben.http.get("/console").text) == []  # one space: nothing to switch
    refused = ann.http.get("/console", params={"space": "*"})
    assert refused.status_code == 404
    assert refused.text.count(team.ann_meal) == 0


# ------------------------------------------------------------------ all spaces, authors
def test_the_owners_all_spaces_lists_every_space_with_each_rows_space(
    owner: Owner, team: Team
) -> None:
    page = owner.http.get("/console", params={"space": "*"}).text
    assert set(ids_in(page)) == {
        team.ann_meal,
        team.ann_chore,
        team.owner_meal,
        team.old,
        team.work,
        team.default,
    }
    assert f"/console/memories/{team.work}?space=work" in page  # opens in its own space
    assert '<span class="space-tag">Work</span>' in page
    assert 'class="select-item"' not in page  # changes are made in one space
    found = owner.http.get("/console/search", params={"space": "*", "q": "Thursday retro"})
    assert team.work in ids_in(found.text)


def test_each_row_and_a_memorys_page_name_its_author_and_client(owner: Owner, team: Team) -> None:
    page = owner.http.get("/console", params={"space": "family"}).text
    row = page[page.index(team.ann_meal) :][:3000]
    assert ">Ann</a> with <a" in row
    assert ">ann-laptop</a>" in row
    old = page[page.index(team.old) :][:3000]
    assert '<span class="by unattributed">unattributed</span>' in old

    record = owner.http.get(f"/console/memories/{team.ann_meal}", params={"space": "family"})
    assert re.search(r'id="record-author">Ann with ann-laptop<', record.text)
    unattributed = owner.http.get(f"/console/memories/{team.old}", params={"space": "family"})
    assert 'id="record-author">unattributed' in unattributed.text


# ------------------------------------------------------------------ filters
def test_filters_by_person_client_and_date_combine_with_topic_and_stay_in_the_links(
    owner: Owner, team: Team
) -> None:
    def listed(**params: str) -> list[str]:
        page = owner.http.get("/console", params={"space": "family", **params})
        assert page.status_code == 200, page.text
        return ids_in(page.text)

    ann_id = team.household.ann.id
    assert set(listed(person=ann_id)) == {team.ann_meal, team.ann_chore}
    assert listed(person=ann_id, topic="meals") == [team.ann_meal]
    assert set(listed(client="ann-laptop")) == {team.ann_meal, team.ann_chore}
    assert listed(person="unattributed") == [team.old]
    today = utc_now().date()
    assert set(listed(topic="meals", created_from=today.isoformat())) == {
        team.ann_meal,
        team.owner_meal,
        team.old,
    }
    later = (today + timedelta(days=1)).isoformat()
    assert listed(person=ann_id, created_from=later) == []
    assert set(listed(person=ann_id, created_until=today.isoformat())) == {
        team.ann_meal,
        team.ann_chore,
    }
    page = owner.http.get(
        "/console", params={"space": "family", "person": ann_id, "topic": "meals"}
    ).text
    assert f'<option value="{ann_id}" selected>Ann</option>' in page
    record_link = re.search(rf'href="([^"]*/console\?[^"]*person={ann_id}[^"]*)"', page)
    assert record_link is not None  # the author's link lists what they wrote

    wrong = owner.http.get("/console", params={"space": "family", "created_from": "Monday"})
    assert wrong.status_code == 400
    assert "created from must be a date (YYYY-MM-DD); got &#39;Monday&#39;" in wrong.text


# ------------------------------------------------------------------ moving
def test_the_owner_moves_a_memory_to_another_space_and_the_event_says_so(
    owner: Owner, live: ConsoleLive, team: Team
) -> None:
    path = f"/console/memories/{team.ann_meal}"
    page = owner.http.get(path, params={"space": "family"}).text
    assert re.findall(r'<select id="to-space" name="to_space"[^>]*>(.*?)</select>', page)
    moved = owner.http.post(
        path + "/space?space=family",
        data={"csrf": hidden(page, "csrf"), "to_space": "work"},
    )
    assert moved.status_code == 303
    assert moved.headers["location"].endswith(f"{path}?space=work&done=moved-space")
    shown = owner.http.get(moved.headers["location"]).text
    assert "The memory was moved to this space" in shown
    assert live.store.get(team.ann_meal, space="family") is None
    record = live.store.get(team.ann_meal, space="work")
    assert record is not None
    assert record.created_by is not None
    assert record.created_by.person == team.household.ann.id  # authors kept
    [event] = _owner_actions(live, "move_to_space")
    assert event["space"] == "family"
    assert event["person"] == "owner"
    assert event["request"] == {"id": team.ann_meal, "from_space": "family", "to_space": "work"}
    assert event["status"] == "ok"


def test_a_person_is_offered_no_move_and_cannot_post_one(
    ann: PersonBrowser, ben: PersonBrowser, live: ConsoleLive, team: Team
) -> None:
    for person in (ann, ben):
        page = person.http.get(f"/console/memories/{team.ann_meal}").text
        assert 'id="move-space-form"' not in page
    page = ben.http.get(f"/console/memories/{team.ann_meal}").text
    assert 'id="correct-form"' not in page  # a reader changes nothing
    refused = ann.http.post(
        f"/console/memories/{team.ann_meal}/space?space=family",
        data={"csrf": hidden(ann.http.get("/console").text, "csrf"), "to_space": "work"},
    )
    assert refused.status_code == 403
    assert live.store.get(team.ann_meal, space="family") is not None


def test_moving_needs_write_on_the_target_space(live: ConsoleLive, team: Team) -> None:
    ann = person_access(team.household, team.household.ann, "ann-laptop")  # reads work
    with pytest.raises(Forbidden, match="may only read the space 'work'"):
        live.service.move_to_space(ann, id=team.ann_meal, to_space="work")
    assert live.store.get(team.ann_meal, space="family") is not None


# ------------------------------------------------------------------ spaces and people
def test_the_owner_adds_renames_and_removes_spaces_and_a_space_with_memories_stays(
    owner: Owner, live: ConsoleLive, team: Team
) -> None:
    added = owner.post("/console/spaces", key="garden", name="Garden", description="Plants")
    assert added.status_code == 303
    page = owner.http.get(added.headers["location"]).text
    assert "The space “garden” was added." in page
    assert re.search(r'id="space-family".*?4 memories', page, re.S)
    renamed = owner.post("/console/spaces/garden/rename", name="The garden", description="")
    assert renamed.status_code == 303
    assert team.household.registry.space("garden").name == "The garden"

    kept = owner.post("/console/spaces/family/remove")
    assert kept.status_code == 409
    assert "holds 4 memories" in kept.text
    assert "family" in team.household.registry.directory().spaces
    removed = owner.post("/console/spaces/garden/remove")
    assert removed.status_code == 303
    assert "garden" not in team.household.registry.directory().spaces
    events = [
        (e["tool_name"], e["space"], e["status"])
        for e in _owner_actions(live, "space_add")
        + _owner_actions(live, "space_rename")
        + _owner_actions(live, "space_remove")
    ]
    assert events == [
        ("space_add", "garden", "ok"),
        ("space_rename", "garden", "ok"),
        ("space_remove", "family", "error"),
        ("space_remove", "garden", "ok"),
    ]


def test_the_owner_adds_a_person_changes_them_and_makes_an_invitation_that_opens(
    owner: Owner, live: ConsoleLive, team: Team
) -> None:
    added = owner.post(
        "/console/people",
        email="Cy@Example.com",
        name="Cy",
        role="reader",
        **{"space-work": "read"},
    )
    assert added.status_code == 303, added.text
    cy = team.household.registry.person("cy@example.com")
    assert (cy.role, cy.spaces) == (Role.READER, {"work": Level.READ})
    assert owner.post(f"/console/people/{cy.id}/role", role="writer").status_code == 303
    assert owner.post(f"/console/people/{cy.id}/deactivate").status_code == 303
    assert not team.household.registry.person(cy.id).active
    refused = owner.post(f"/console/people/{cy.id}/invite")
    assert refused.status_code == 409
    assert owner.post(f"/console/people/{cy.id}/reactivate").status_code == 303
    person = team.household.registry.person(cy.id)
    assert (person.role.value, person.active) == ("writer", True)

    invited = owner.post(f"/console/people/{cy.id}/invite")
    assert invited.status_code == 200
    link = re.search(r'id="invite-link">([^<]+)<', invited.text)
    assert link is not None
    with httpx2.Client(timeout=30) as stranger:
        opened = stranger.get(link.group(1))
    assert opened.status_code == 200
    assert "cy@example.com" in opened.text
    recorded = _owner_actions(live, "person_invite")
    assert [e["request"]["person"] for e in recorded] == [cy.id, cy.id]
    assert all("cy@example.com" not in str(e) for e in recorded)  # ids, never the email


def test_a_person_cannot_open_or_post_to_the_spaces_and_people_pages(
    ann: PersonBrowser, team: Team
) -> None:
    for path in ("/console/spaces", "/console/people"):
        assert ann.http.get(path).status_code == 403
    csrf = hidden(ann.http.get("/console").text, "csrf")
    answer = ann.http.post("/console/spaces", data={"csrf": csrf, "key": "mine"})
    assert answer.status_code == 403
    assert "mine" not in team.household.registry.directory().spaces


# ------------------------------------------------------------------ activity
def test_the_activity_page_counts_by_space_and_person_and_filters_by_them(
    owner: Owner, live: ConsoleLive, team: Team
) -> None:
    events = live.runtime.events
    assert events is not None
    for space, person in (("family", team.household.ann.id), ("work", "owner")):
        events.mcp_request(
            event_type="tool_call",
            client_id="laptop",
            name="search_context",
            status="ok",
            latency_ms=5.0,
            request_summary={},
            response_summary={"result_count": 1, "top_score": 0.9},
            space=space,
            person=person,
        )
    live.flush_events()
    page = owner.http.get("/console/activity").text
    assert 'id="chart-spaces"' in page
    assert 'id="chart-people"' in page
    assert "2 tool calls" in page
    family = owner.http.get("/console/activity", params={"space": "family"}).text
    assert "1 tool calls" in family
    assert "Only the calls in the space Family" in family
    by_ann = owner.http.get("/console/activity", params={"person": team.household.ann.id})
    assert "1 tool calls" in by_ann.text
    assert "by Ann" in by_ann.text


# ------------------------------------------------------------------ contested
def test_a_consolidation_that_leaves_someone_elses_memory_active_lists_it(
    ann: PersonBrowser, live: ConsoleLive, team: Team
) -> None:
    sources = [team.ann_meal, team.owner_meal]
    csrf = hidden(ann.http.get("/console").text, "csrf")
    done = ann.http.post(
        "/console/consolidate/confirm?space=family",
        data={
            "csrf": csrf,
            "topic": "meals",
            "source_id": sources,
            "previewed_id": sources,
        },
    )
    assert done.status_code == 303, done.text
    assert f"done=consolidated-contested&contested={team.owner_meal}" in done.headers["location"]
    page = ann.http.get(done.headers["location"]).text
    assert "Some of them were written by someone else, so they stay active" in page
    listed = re.search(r'<ul class="links" id="contested-ids">(.*?)</ul>', page, re.S)
    assert listed is not None
    assert ids_in(listed.group(1)) == [team.owner_meal]
    kept = live.store.get(team.owner_meal, space="family")
    assert kept is not None
    assert kept.branch_state is BranchState.ACTIVE
