"""What a reader is offered and the words the console says, over real loopback HTTP (the
app with OAuth off, its SQLite store; issue 41 §2, "Readers and words"): a reader is not
offered Consolidate and its pages refuse before any preview; every page names the space
it shows (and says when it is read only); refusals say what happened in console words,
not a tool's name, a code or "credential"; invitation links, the restore command and a
memory's id carry a Copy button."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from metacortex.service import Access
from tests.console.support import ConsoleLive, Owner, console_server
from tests.owner.people_support import ANN_PASSPHRASE, BEN_PASSPHRASE, Household, PersonBrowser

pytestmark = pytest.mark.slow


@pytest.fixture
def live(tmp_path: Path) -> Iterator[ConsoleLive]:
    with console_server(tmp_path, oauth=False, metacortex_client_refresh_seconds=0) as running:
        yield running


@pytest.fixture
def household(live: ConsoleLive) -> Household:
    household = Household.signed_up(live.store)
    everyone = Access.admin(directory=household.registry.directory())
    for number in range(2):
        live.service.save(everyone, content=f"Family note {number}", space="family", draft=True)
    return household


def _person(live: ConsoleLive, email: str, passphrase: str) -> Iterator[PersonBrowser]:
    browser = PersonBrowser(live.url)
    assert browser.sign_in(email, passphrase).status_code == 303
    yield browser
    browser.close()


@pytest.fixture
def ben(live: ConsoleLive, household: Household) -> Iterator[PersonBrowser]:
    yield from _person(live, "ben@example.com", BEN_PASSPHRASE)  # reads family, alone


@pytest.fixture
def ann(live: ConsoleLive, household: Household) -> Iterator[PersonBrowser]:
    yield from _person(live, "ann@example.com", ANN_PASSPHRASE)  # writes family, reads work


def test_a_reader_is_not_offered_consolidate_and_its_pages_refuse_before_a_preview(
    ben: PersonBrowser,
) -> None:
    home = ben.http.get("/console").text
    picker = ben.http.get("/console/consolidate")
    csrf = home.split('name="csrf" value="')[1].split('"')[0]
    preview = ben.http.post("/console/consolidate/preview", data={"csrf": csrf, "topic": "general"})

    assert "/console/consolidate" not in home
    assert picker.status_code == 403
    assert "You may read this space but not change it" in picker.text
    assert 'id="preview-merged"' not in picker.text
    assert preview.status_code == 403
    assert 'id="preview-merged"' not in preview.text


def test_the_page_names_the_space_it_shows_and_says_when_it_is_read_only(
    ben: PersonBrowser, ann: PersonBrowser
) -> None:
    alone = ben.http.get("/console").text
    reading = ann.http.get("/console", params={"space": "work"}).text
    writing = ann.http.get("/console", params={"space": "family"}).text

    assert 'id="space-shown">Space: <strong>Family</strong>' in alone
    assert 'id="space-level">read only' in alone
    assert 'id="space-level">read only' in reading  # beside the switcher
    assert 'id="space-level"' not in writing


def test_refusals_say_what_happened_in_console_words(ann: PersonBrowser) -> None:
    other = ann.http.get("/console", params={"space": "default"})
    csrf = ann.http.get("/console").text.split('name="csrf" value="')[1].split('"')[0]
    moved = ann.http.post(
        "/console/new?space=work", data={"csrf": csrf, "action": "save", "content": "x"}
    )

    assert other.status_code == 404
    for page in (other.text, moved.text):
        for word in ("list_spaces", "credential", "Code:", "forbidden", "not_found"):
            assert word not in page, word
    assert "the Space menu at the top lists the ones that are" in other.text
    assert 'id="error-code">Not found<' in other.text


def test_invitation_links_the_restore_command_and_memory_ids_have_copy_buttons(
    owner: Owner, live: ConsoleLive, household: Household
) -> None:
    invited = owner.post(f"/console/people/{household.ann.id}/invite")
    memory_id = live.service.save(Access.admin(), content="Copy my id")["item"]["id"]
    record = owner.http.get(f"/console/memories/{memory_id}").text
    backup = owner.http.get("/console/backup").text

    assert 'data-copy="the invitation link"' in invited.text
    assert f'data-copy="the memory\'s id">{memory_id}<' in record
    assert 'data-copy="the restore command"' in backup
