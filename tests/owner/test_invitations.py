"""Invitation links over real HTTP (the live app on loopback, its SQLite store): a person
chooses a passphrase once; a replayed, expired, replaced or unknown link says so plainly
and sets nothing; the store keeps only the token's sha256, and the server's log never
holds the token (issue 30 §4, "People sign in")."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator
from datetime import timedelta

import pytest

from metacortex.domain.records import to_wire_time, utc_now
from metacortex.owner.invitations import KIND
from metacortex.owner.passphrase import PERSON_KIND, verify_person_passphrase
from metacortex.owner.sessions import KIND as SESSION_KIND
from tests.oauth_support import OAuthLive
from tests.owner.people_support import ANN_PASSPHRASE, Household, PersonBrowser


@pytest.fixture
def household(live: OAuthLive) -> Household:
    return Household.on(live.store)


@pytest.fixture
def browser(live: OAuthLive) -> Iterator[PersonBrowser]:
    person = PersonBrowser(live.url)
    yield person
    person.close()


def test_an_invitation_sets_the_persons_passphrase_and_signs_them_in(
    live: OAuthLive, household: Household, browser: PersonBrowser
) -> None:
    link = household.invitation(household.ann)
    page = browser.http.get(link)
    assert page.status_code == 200
    assert "ann@example.com" in page.text
    assert "Choose your passphrase" in page.text

    answer = browser.accept(link, ANN_PASSPHRASE)

    assert answer.status_code == 303
    assert answer.headers["location"] == live.url + "/console"
    assert browser.signed_in()
    [(_, session)] = live.store.auth_list(SESSION_KIND)
    assert session["person"] == household.ann.id
    assert verify_person_passphrase(live.store, household.ann.id, ANN_PASSPHRASE)


def test_a_replayed_invitation_says_it_was_used_and_changes_nothing(
    live: OAuthLive, household: Household, browser: PersonBrowser
) -> None:
    link = household.invitation(household.ann)
    page = browser.http.get(link)
    assert browser.accept(link, ANN_PASSPHRASE).status_code == 303
    someone = PersonBrowser(live.url)

    opened = someone.http.get(link)
    # The same form posted again (a second tab, or someone who copied the page).
    posted = browser.http.post(
        link,
        data={
            "csrf": page.text.split('name="csrf" value="')[1].split('"')[0],
            "passphrase": "another long passphrase 99",
            "repeat": "another long passphrase 99",
        },
    )

    for answer in (opened, posted):
        assert answer.status_code == 410
        assert "This invitation link was already used" in answer.text
        assert 'name="passphrase"' not in answer.text
    assert verify_person_passphrase(live.store, household.ann.id, ANN_PASSPHRASE)
    assert not verify_person_passphrase(live.store, household.ann.id, "another long passphrase 99")
    assert not someone.signed_in()
    someone.close()


def test_an_expired_invitation_says_it_expired_and_sets_nothing(
    live: OAuthLive, household: Household, browser: PersonBrowser
) -> None:
    link = household.invitation(household.ann, days=1)
    key = hashlib.sha256(link.rsplit("/", 1)[1].encode()).hexdigest()
    record = live.store.auth_get(KIND, key)
    assert record is not None
    # A day later: the link's own end has passed (the record is kept to say so).
    expired = {**record, "valid_until": to_wire_time(utc_now() - timedelta(minutes=1))}
    live.store.auth_put(KIND, key, expired, utc_now() + timedelta(days=30))

    opened = browser.http.get(link)
    posted = browser.http.post(
        link, data={"csrf": "x", "passphrase": ANN_PASSPHRASE, "repeat": ANN_PASSPHRASE}
    )

    for answer in (opened, posted):
        assert answer.status_code == 410
        assert "This invitation link expired on" in answer.text
        assert "Ask the owner for a new one" in answer.text
    assert live.store.auth_get(PERSON_KIND, household.ann.id) is None
    assert not browser.signed_in()


def test_a_mistyped_or_weak_passphrase_keeps_the_link_usable(
    live: OAuthLive, household: Household, browser: PersonBrowser
) -> None:
    link = household.invitation(household.ann)

    differ = browser.accept(link, ANN_PASSPHRASE, repeat=ANN_PASSPHRASE + "!")
    weak = browser.accept(link, "short")

    assert differ.status_code == 400
    assert "The two passphrases differ." in differ.text
    assert weak.status_code == 400
    assert "That passphrase is 5 characters" in weak.text
    assert live.store.auth_get(PERSON_KIND, household.ann.id) is None
    assert browser.accept(link, ANN_PASSPHRASE).status_code == 303


def test_a_newer_invitation_replaces_the_earlier_link(
    household: Household, browser: PersonBrowser
) -> None:
    first = household.invitation(household.ann)
    second = household.invitation(household.ann)

    old = browser.http.get(first)

    assert old.status_code == 410
    assert "A newer invitation replaced this link" in old.text
    assert browser.accept(second, ANN_PASSPHRASE).status_code == 303


def test_an_unknown_link_and_a_deactivated_persons_link_say_why(
    household: Household, browser: PersonBrowser
) -> None:
    link = household.invitation(household.ben)
    household.registry.change_person(household.ben.id, active=False)

    unknown = browser.http.get("/owner/invite/" + "A" * 43)
    mangled = browser.http.get("/owner/invite/not-a-token")
    inactive = browser.http.get(link)

    for answer in (unknown, mangled):
        assert answer.status_code == 404
        assert "This invitation link is not valid" in answer.text
    assert inactive.status_code == 403
    assert "Your access to this server is turned off" in inactive.text


def test_the_store_keeps_only_the_sha256_of_the_token(
    live: OAuthLive, household: Household
) -> None:
    link = household.invitation(household.ann)
    token = link.rsplit("/", 1)[1]

    [(key, data)] = live.store.auth_list(KIND)

    assert key == hashlib.sha256(token.encode()).hexdigest()
    assert token not in repr(data)


def test_the_server_log_never_holds_the_invitation_token(
    household: Household, browser: PersonBrowser, caplog: pytest.LogCaptureFixture
) -> None:
    link = household.invitation(household.ann)
    token = link.rsplit("/", 1)[1]

    with caplog.at_level(logging.INFO, logger="metacortex.server"):
        browser.accept(link, ANN_PASSPHRASE)
        browser.http.get(link)

    lines = [
        record.getMessage() + repr(getattr(record, "metacortex_fields", None))
        for record in caplog.records
    ]
    assert any("/owner/invite/REDACTED" in line for line in lines)
    assert not any(token in line for line in lines)
