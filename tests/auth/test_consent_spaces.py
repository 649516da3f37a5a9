"""The consent page's space choice over real HTTP (the live OAuth server on loopback, its
SQLite store; the tokens used through the MCP endpoint): the owner may give any space, a
person only their own at most at their level; a refused choice spends nothing; the grant
records who approved it and the spaces, which `metacortex oauth grants` and the console's
clients page show."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from metacortex.access.model import Role
from metacortex.owner.passphrase import set_person_passphrase
from tests.commands import COMMAND, fresh_clone_env, run_command
from tests.oauth_support import (
    Browserless,
    OAuthLive,
    hidden,
    oauth_server,
    pkce_pair,
    query_of,
    tool_call,
)
from tests.owner.people_support import (
    ANN_PASSPHRASE,
    BEN_PASSPHRASE,
    Household,
    sign_in_as,
)


@pytest.fixture
def live(tmp_path: Path) -> Iterator[OAuthLive]:
    # The store where `metacortex --data-dir tmp_path` finds it, for the CLI's listing.
    with oauth_server(
        tmp_path, store_file="metacortex.sqlite3", metacortex_client_refresh_seconds=0
    ) as running:
        yield running


@pytest.fixture
def household(live: OAuthLive) -> Household:
    return Household.signed_up(live.store)


def _person(live: OAuthLive, email: str, passphrase: str) -> Browserless:
    agent = Browserless(live)
    assert sign_in_as(agent.http, email, passphrase).status_code == 303
    return agent


@pytest.fixture
def ann(live: OAuthLive, household: Household) -> Iterator[Browserless]:
    agent = _person(live, "ann@example.com", ANN_PASSPHRASE)
    yield agent
    agent.close()


def _consent_page(agent: Browserless) -> tuple[httpx2.Response, str]:
    """A new client's authorization request, opened: (the consent page, client id)."""
    client = agent.register(client_name="Notes app")
    _, challenge = pkce_pair()
    authorize = agent.authorize(client["client_id"], challenge)
    return agent.http.get(authorize.headers["location"]), client["client_id"]


def _options(page: str) -> dict[str, tuple[list[str], str]]:
    """Each space select on the page: (its option values, the selected one)."""
    found: dict[str, tuple[list[str], str]] = {}
    for key, body in re.findall(r'<select id="space-([a-z0-9-]+)"[^>]*>(.*?)</select>', page, re.S):
        values = re.findall(r'<option value="([a-z]+)"', body)
        selected = re.search(r'<option value="([a-z]+)" selected', body)
        found[key] = (values, selected.group(1) if selected else "")
    return found


def _decide(agent: Browserless, page: httpx2.Response, **fields: str) -> httpx2.Response:
    return agent.http.post(
        "/oauth/consent",
        data={
            "csrf": hidden(page.text, "csrf"),
            "request": hidden(page.text, "request"),
            "decision": "approve",
            "preset": "read-write",
            **fields,
        },
    )


def _tokens(agent: Browserless, client_id: str, **fields: str) -> dict[str, Any]:
    """Authorize, approve with these space fields on the consent form, exchange the code."""
    verifier, challenge = pkce_pair()
    location = agent.consent(agent.authorize(client_id, challenge), **fields)
    answer = agent.exchange(client_id, query_of(location)["code"], verifier)
    assert answer.status_code == 200, answer.text
    tokens: dict[str, Any] = answer.json()
    return tokens


def _grants(live: OAuthLive) -> list[dict[str, Any]]:
    return [grant for _, grant in live.store.auth_list("grant")]


def test_the_owner_is_offered_every_space_with_the_default_space_preselected(
    live: OAuthLive, household: Household, agent: Browserless
) -> None:
    page, _ = _consent_page(agent)

    assert _options(page.text) == {
        "default": (["none", "read", "write"], "write"),
        "family": (["none", "read", "write"], "none"),
        "work": (["none", "read", "write"], "none"),
    }
    assert 'id="approver"' not in page.text


def test_a_person_gives_their_own_spaces_at_most_at_their_level(
    live: OAuthLive, household: Household, ann: Browserless
) -> None:
    page, client_id = _consent_page(ann)
    assert _options(page.text) == {
        "family": (["none", "read", "write"], "write"),  # her first space, at her level
        "work": (["none", "read"], "none"),  # she only reads work
    }
    assert "Ann (ann@example.com)" in page.text

    tokens = _tokens(
        ann, client_id, **{"space-family": "read", "space-work": "read", "default_space": "work"}
    )

    [grant] = _grants(live)
    assert grant["person"] == household.ann.id
    assert grant["spaces"] == {"family": "read", "work": "read"}
    assert grant["default_space"] == "work"
    token = tokens["access_token"]
    read = tool_call(live.mcp, token, "search_context", {"query": "x", "space": "family"})
    write = tool_call(live.mcp, token, "save_context", {"content": "x", "space": "family"})
    other = tool_call(live.mcp, token, "search_context", {"query": "x", "space": "default"})
    assert read.json()["result"]["isError"] is False
    assert write.json()["result"]["isError"] is True
    assert "may only read the space 'family'" in write.text
    assert other.json()["result"]["isError"] is True
    assert "no space 'default' is available" in other.text


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"space-work": "write", "default_space": "work"}, "at most read access to the space"),
        ({"space-default": "write", "default_space": "default"}, "the space &#39;default&#39;"),
        ({"space-family": "none", "default_space": "family"}, "choose at least one space"),
        ({"space-family": "read", "default_space": "work"}, "its default space must be one"),
    ],
)
def test_a_choice_beyond_the_approvers_spaces_is_refused_and_spends_nothing(
    live: OAuthLive, household: Household, ann: Browserless, fields: dict[str, str], message: str
) -> None:
    page, _ = _consent_page(ann)

    refused = _decide(ann, page, **fields)
    allowed = _decide(ann, page, **{"space-family": "write", "default_space": "family"})

    assert refused.status_code == 400
    assert message in refused.text
    assert 'id="consent-error"' in refused.text
    assert allowed.status_code == 303  # the request was still there
    assert "code" in query_of(allowed.headers["location"])
    assert [grant["spaces"] for grant in _grants(live)] == [{"family": "write"}]


def test_a_reader_can_give_only_read(live: OAuthLive, household: Household) -> None:
    ben = _person(live, "ben@example.com", BEN_PASSPHRASE)

    page, _ = _consent_page(ben)

    assert _options(page.text) == {"family": (["none", "read"], "read")}
    ben.close()


def test_a_person_in_no_space_has_nothing_to_give(live: OAuthLive, household: Household) -> None:
    carl = household.registry.add_person("carl@example.com", "Carl", Role.WRITER)
    set_person_passphrase(live.store, carl.id, "carl's long passphrase 5")
    agent = _person(live, "carl@example.com", "carl's long passphrase 5")

    page, _ = _consent_page(agent)

    assert page.status_code == 403
    assert "You have no space you could give this client" in page.text
    agent.close()


def test_the_grants_list_and_the_clients_page_name_the_approver_and_the_spaces(
    live: OAuthLive, household: Household, ann: Browserless, agent: Browserless, tmp_path: Path
) -> None:
    client = ann.register(client_name="Notes app")
    _tokens(ann, client["client_id"], **{"space-family": "read", "default_space": "family"})
    (tmp_path / "home").mkdir()

    listed = run_command(
        [*COMMAND, "oauth", "grants", "--data-dir", str(tmp_path)],
        env=fresh_clone_env(tmp_path / "home"),
        cwd=tmp_path,
    )
    clients = agent.http.get("/console/clients").text

    assert listed.returncode == 0, listed.stderr
    assert "by ann@example.com  spaces=family:read (default family)" in listed.stdout
    assert "Approved by Ann · family:read (default family)" in clients
