"""A person signs in with their email and passphrase, over real HTTP (the live app on
loopback, its SQLite store); the owner keeps the passphrase alone. Deactivation refuses a
sign-in and ends a session already open; attempts are rate limited as the owner's are."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from metacortex.owner.sessions import KIND as SESSION_KIND
from tests.oauth_support import PASSPHRASE, Browserless, OAuthLive
from tests.owner.people_support import ANN_PASSPHRASE, Household, PersonBrowser


@pytest.fixture
def household(live: OAuthLive) -> Household:
    return Household.signed_up(live.store)


@pytest.fixture
def ann(live: OAuthLive, household: Household) -> Iterator[PersonBrowser]:
    browser = PersonBrowser(live.url)
    yield browser
    browser.close()


def _people_of_sessions(live: OAuthLive) -> list[str]:
    sessions = live.store.auth_list(SESSION_KIND)
    return sorted(str(data.get("person", "owner")) for _, data in sessions)


def test_a_person_signs_in_with_email_and_the_owner_with_the_passphrase_alone(
    live: OAuthLive, household: Household, ann: PersonBrowser
) -> None:
    answer = ann.sign_in("  Ann@Example.com ", ANN_PASSPHRASE, next_url=live.url + "/console")
    owner = Browserless(live)
    owned = owner.sign_in()

    assert answer.status_code == 303
    assert answer.headers["location"] == live.url + "/console"
    assert ann.signed_in()
    assert owned.status_code == 303
    assert _people_of_sessions(live) == sorted([household.ann.id, "owner"])
    owner.close()


def test_a_wrong_passphrase_and_an_unknown_email_are_refused_alike(
    household: Household, ann: PersonBrowser
) -> None:
    wrong = ann.sign_in("ann@example.com", "not ann's passphrase at all")
    unknown = ann.sign_in("nobody@example.com", ANN_PASSPHRASE)
    never_set = ann.sign_in("ben@example.com", ANN_PASSPHRASE)  # invited, never chose one
    owners = ann.sign_in("ann@example.com", PASSPHRASE)  # the owner's, with an email

    for answer in (wrong, unknown, never_set, owners):
        assert answer.status_code == 401
        assert "That email and passphrase do not match." in answer.text
    assert 'value="nobody@example.com"' in unknown.text  # the email stays as typed
    assert not ann.signed_in()


def test_a_deactivated_person_cannot_sign_in(household: Household, ann: PersonBrowser) -> None:
    household.registry.change_person(household.ann.id, active=False)

    answer = ann.sign_in("ann@example.com", ANN_PASSPHRASE)

    assert answer.status_code == 403
    assert "Your access to this server is turned off" in answer.text
    assert not ann.signed_in()


def test_deactivating_a_person_ends_the_session_they_have_open(
    live: OAuthLive, household: Household, ann: PersonBrowser
) -> None:
    assert ann.sign_in("ann@example.com", ANN_PASSPHRASE).status_code == 303
    assert ann.signed_in()

    # METACORTEX_CLIENT_REFRESH_SECONDS is 0 here: the next request sees the change.
    household.registry.change_person(household.ann.id, active=False)

    assert not ann.signed_in()
    assert ann.http.get("/owner/sign-in").text.count('name="passphrase"') == 1
    household.registry.change_person(household.ann.id, active=True)
    assert ann.signed_in()  # the session itself was not deleted: reactivation restores it


def test_person_sign_in_is_rate_limited_like_the_owners(
    live: OAuthLive, household: Household, ann: PersonBrowser
) -> None:
    per_minute = live.app.state.runtime.settings.metacortex_sign_in_per_minute
    for _ in range(per_minute):
        assert ann.sign_in("ann@example.com", "a wrong guess, surely").status_code == 401

    refused = ann.sign_in("ann@example.com", ANN_PASSPHRASE)

    assert refused.status_code == 429
    assert int(refused.headers["retry-after"]) > 0
    assert "Too many sign-in attempts" in refused.text


def test_choosing_a_passphrase_again_ends_the_persons_other_sessions(
    live: OAuthLive, household: Household, ann: PersonBrowser
) -> None:
    assert ann.sign_in("ann@example.com", ANN_PASSPHRASE).status_code == 303
    laptop = PersonBrowser(live.url)

    answer = laptop.accept(household.invitation(household.ann), "a new passphrase for ann 8")

    assert answer.status_code == 303
    assert laptop.signed_in()
    assert not ann.signed_in()
    laptop.close()
