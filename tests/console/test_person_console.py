"""The console for a signed-in person, over real loopback HTTP (the app with OAuth off, its
SQLite store): their spaces at their level and nothing of another; the owner's pages
(clients, erase, activity, export) refused with a page that says so; a reader changes
nothing; what a writer changes names them. The owner keeps every space."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import httpx2
import pytest

import metacortex
from metacortex.access.model import Role
from metacortex.kernel.events import MEMORY_EVENTS
from metacortex.owner.passphrase import set_person_passphrase
from metacortex.service import Access
from tests.console.support import ConsoleLive, Owner, console_server
from tests.owner.people_support import (
    ANN_PASSPHRASE,
    BEN_PASSPHRASE,
    Household,
    PersonBrowser,
)
from tests.test_space_scoping import SPACED

pytestmark = pytest.mark.slow


class Corpus:
    """One memory in each space, saved by the owner."""

    def __init__(self, live: ConsoleLive, household: Household) -> None:
        owner = Access.admin(directory=household.registry.directory())
        self.ids = {
            space: str(
                live.service.save(owner, content=f"The {space} plan is ready", space=space)["item"][
                    "id"
                ]
            )
            for space in ("default", "family", "work")
        }


@pytest.fixture
def live(tmp_path: Path) -> Iterator[ConsoleLive]:
    with console_server(tmp_path, oauth=False, metacortex_client_refresh_seconds=0) as running:
        yield running


@pytest.fixture
def household(live: ConsoleLive) -> Household:
    return Household.signed_up(live.store)


@pytest.fixture
def corpus(live: ConsoleLive, household: Household) -> Corpus:
    return Corpus(live, household)


def _signed_in(live: ConsoleLive, email: str, passphrase: str) -> PersonBrowser:
    browser = PersonBrowser(live.url)
    assert browser.sign_in(email, passphrase).status_code == 303
    return browser


@pytest.fixture
def ann(live: ConsoleLive, household: Household) -> Iterator[PersonBrowser]:
    browser = _signed_in(live, "ann@example.com", ANN_PASSPHRASE)
    yield browser
    browser.close()


@pytest.fixture
def ben(live: ConsoleLive, household: Household) -> Iterator[PersonBrowser]:
    browser = _signed_in(live, "ben@example.com", BEN_PASSPHRASE)
    yield browser
    browser.close()


def test_a_person_sees_their_spaces_and_nothing_of_another(
    ann: PersonBrowser, corpus: Corpus
) -> None:
    home = ann.http.get("/console").text  # Ann is not in `default`: her first space, family
    work = ann.http.get("/console", params={"space": "work"}).text
    found = ann.http.get("/console/search", params={"q": "plan"}).text
    other = ann.http.get("/console", params={"space": "default"})
    fetched = ann.http.get(f"/console/memories/{corpus.ids['default']}")

    assert corpus.ids["family"] in home
    assert corpus.ids["work"] in work
    assert corpus.ids["family"] in found
    for page in (home, work, found):
        assert corpus.ids["default"] not in page
    assert corpus.ids["work"] not in home
    assert other.status_code == 404
    assert "no space &#39;default&#39; is available to you" in other.text
    assert fetched.status_code == 404
    assert "no memory with id" in fetched.text


@pytest.mark.parametrize(
    "path",
    [
        "/console/clients",
        "/console/clients/default",
        "/console/activity",
        "/console/backup",
        "/console/export",
        "/console/erase?topic=general",
    ],
)
def test_the_owners_pages_refuse_a_person_with_a_page_that_says_so(
    ann: PersonBrowser, path: str
) -> None:
    answer = ann.http.get(path)

    assert answer.status_code == 403
    assert "This page is the owner&#39;s" in answer.text
    assert "/console/clients" not in answer.text  # the menu does not offer it either


def test_a_person_cannot_create_a_client_or_erase_by_posting(
    live: ConsoleLive, ann: PersonBrowser, corpus: Corpus
) -> None:
    csrf = ann.http.get("/console").text.split('name="csrf" value="')[1].split('"')[0]

    created = ann.http.post("/console/clients", data={"csrf": csrf, "client_id": "ann-laptop"})
    erased = ann.http.post(
        "/console/erase", data={"csrf": csrf, "id": corpus.ids["family"], "count": "1"}
    )

    assert created.status_code == 403
    assert erased.status_code == 403
    assert live.store.auth_get("stored_client", "ann-laptop") is None
    assert corpus.ids["family"] in ann.http.get("/console").text


def test_a_reader_is_offered_no_change_and_changes_nothing(
    live: ConsoleLive, ben: PersonBrowser, corpus: Corpus
) -> None:
    memory = corpus.ids["family"]
    page = ben.http.get(f"/console/memories/{memory}").text
    csrf = page.split('name="csrf" value="')[1].split('"')[0]

    refused = ben.http.post(
        f"/console/memories/{memory}/deprecate", data={"csrf": csrf, "reason": "changed"}
    )

    assert 'id="deprecate"' not in page
    assert 'id="correct-form"' not in page
    assert 'id="erase"' not in page
    assert refused.status_code == 403
    assert "may only read the space &#39;family&#39;" in refused.text
    assert live.store.get(memory, space="family").branch_state.value == "active"  # type: ignore[union-attr]


def _deprecate(browser: PersonBrowser, memory: str) -> httpx2.Response:
    page = browser.http.get(f"/console/memories/{memory}").text
    csrf = page.split('name="csrf" value="')[1].split('"')[0]
    return browser.http.post(
        f"/console/memories/{memory}/deprecate", data={"csrf": csrf, "reason": "changed"}
    )


def test_what_a_writer_changes_names_them_in_the_record_and_the_event(
    live: ConsoleLive, household: Household, ann: PersonBrowser
) -> None:
    as_ann = replace(
        Access.admin(directory=household.registry.directory()), person=household.ann.id
    )
    memory = str(live.service.save(as_ann, content="Ann's own note", space="family")["item"]["id"])

    done = _deprecate(ann, memory)

    assert done.status_code == 303
    assert ann.http.get(done.headers["location"]).text.count("The memory was deprecated.") == 1
    record = live.store.get(memory, space="family")
    assert record is not None
    assert record.branch_state.value == "deprecated"
    assert record.changed_by is not None
    assert (record.changed_by.person, record.changed_by.via) == (household.ann.id, "console")
    live.flush_events()
    [event] = [
        e for e in live.store.read_events(MEMORY_EVENTS) if e["event_type"] == "owner_action"
    ]
    assert (event["person"], event["space"], event["initiator"]) == (
        household.ann.id,
        "family",
        "user",
    )


def test_a_writer_does_not_retire_someone_elses_memory_and_the_page_says_so(
    live: ConsoleLive, ann: PersonBrowser, corpus: Corpus
) -> None:
    memory = corpus.ids["family"]  # the owner wrote it

    done = _deprecate(ann, memory)

    assert done.status_code == 303
    page = ann.http.get(done.headers["location"]).text
    assert "Someone else wrote this memory, so it stays as it is" in page
    assert "The memory was deprecated." not in page
    record = live.store.get(memory, space="family")
    assert record is not None
    assert record.branch_state.value == "active"


def test_a_person_in_no_space_is_told_to_ask_the_owner(
    live: ConsoleLive, household: Household
) -> None:
    carl = household.registry.add_person("carl@example.com", "Carl", Role.WRITER)
    set_person_passphrase(live.store, carl.id, "carl's long passphrase 5")
    browser = _signed_in(live, "carl@example.com", "carl's long passphrase 5")

    page = browser.http.get("/console")

    assert page.status_code == 403
    assert "You are not a member of any space yet" in page.text
    browser.close()


def test_the_owner_keeps_every_space(live: ConsoleLive, corpus: Corpus) -> None:
    owner = Owner(live)
    owner.sign_in()

    home = owner.http.get("/console").text
    family = owner.http.get("/console", params={"space": "family"}).text
    clients = owner.http.get("/console/clients")

    assert corpus.ids["default"] in home
    assert corpus.ids["family"] in family
    assert clients.status_code == 200
    owner.close()


def test_every_store_call_of_the_console_names_its_space() -> None:
    """A page that called the store without ``space=`` would read ``default`` whatever the
    caller's space: the console's calls (``console.call(<...>.store.<method>, ...)``) are
    refused in that shape, as ``tests/test_space_scoping.py`` refuses the use cases'."""
    offences: list[str] = []
    for path in sorted((Path(metacortex.__file__).parent / "console").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and node.args):
                continue
            target = node.args[0]
            if (
                isinstance(target, ast.Attribute)
                and target.attr in SPACED
                and ast.unparse(target.value).endswith("store")
                and "space" not in {keyword.arg for keyword in node.keywords}
            ):
                offences.append(f"{path.name}:{node.lineno} {ast.unparse(target)}")
    assert offences == []
