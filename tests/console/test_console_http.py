"""The console over real loopback HTTP (no browser): sign-in, pages, CSRF, session expiry,
curation through the service with ``owner`` events, grants, export."""

from __future__ import annotations

import io
import json
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from metacortex.kernel.events import MEMORY_EVENTS
from tests.console.support import (
    ADMIN,
    ConsoleLive,
    Owner,
    console_server,
    ids_in,
    make_events,
    seed,
)
from tests.oauth_support import Browserless, OAuthLive, oauth_server, tools_list

pytestmark = pytest.mark.slow


@pytest.fixture(params=[True, False], ids=["oauth", "no-oauth"])
def live(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ConsoleLive]:
    with console_server(tmp_path, oauth=request.param) as running:
        yield running


@pytest.fixture
def owner(live: ConsoleLive) -> Iterator[Owner]:
    user = Owner(live)
    yield user
    user.close()


def test_every_console_page_asks_for_sign_in_first(owner: Owner) -> None:
    for path in ("/console", "/console/search?q=x", "/console/clients", "/console/activity"):
        page = owner.http.get(path)
        assert page.status_code == 200
        assert ">Sign in</h1>" in page.text
        assert 'name="passphrase"' in page.text
    assert owner.http.get("/console/export").headers["content-type"].startswith("text/html")


def test_signing_in_returns_to_the_console_with_a_strict_session_cookie(owner: Owner) -> None:
    answer = owner.sign_in()

    assert answer.status_code == 303
    assert answer.headers["location"].endswith("/console")
    cookie = answer.headers["set-cookie"].lower()
    assert "httponly" in cookie
    assert "samesite=strict" in cookie
    page = owner.http.get("/console")
    assert page.status_code == 200
    assert 'id="memory-list"' not in page.text  # an empty store says how to connect instead
    assert 'id="empty-store"' in page.text
    csp = page.headers["content-security-policy"]
    assert "default-src 'none'" in csp
    # One script file from the console's own origin; no inline script can run.
    assert "script-src 'self';" in csp
    assert "unsafe-inline" not in csp
    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", page.text, re.S)
    assert scripts == [(f' src="{owner.live.url}/console/static/console.js" defer', "")]
    served = owner.http.get("/console/static/console.js")
    assert served.headers["content-type"].startswith("text/javascript")
    assert served.headers["x-content-type-options"] == "nosniff"
    assert "http://" not in page.text.replace(owner.live.url, "")
    assert "https://" not in page.text


def test_browse_pages_newest_first_with_a_keyset_cursor(owner: Owner, live: ConsoleLive) -> None:
    for number in range(30):
        live.service.save(ADMIN, content=f"note number {number}", topic="bulk")
    owner.sign_in()

    first = owner.http.get("/console", params={"topic": "bulk"})
    first_ids = ids_in(first.text)
    assert len(first_ids) == 25
    assert first_ids == sorted(first_ids, reverse=True)
    next_url = first.text.split('id="next-page"')[0].rsplit('href="', 1)[1].split('"')[0]
    second = owner.http.get(next_url.replace("&amp;", "&"))
    second_ids = ids_in(second.text)
    assert len(second_ids) == 5
    assert not set(first_ids) & set(second_ids)
    assert 'id="next-page"' not in second.text


def test_topics_show_counts_per_state(owner: Owner, live: ConsoleLive) -> None:
    seed(live.service)
    owner.sign_in()

    page = owner.http.get("/console").text

    assert 'aria-label="2 drafts in trip"' in page
    assert 'aria-label="3 active in garden"' in page
    assert 'aria-label="2 deprecated in work"' in page


def test_filters_by_state_origin_and_validity_instant(owner: Owner, live: ConsoleLive) -> None:
    seeded = seed(live.service)
    later = live.service.save(
        ADMIN,
        content="The new office opens in 2030.",
        topic="garden",
        valid_from="2030-01-01T00:00:00Z",
    )["item"]["id"]
    owner.sign_in()

    drafts = ids_in(owner.http.get("/console", params={"state": "wip"}).text)
    asserted = ids_in(owner.http.get("/console", params={"origin": "user_asserted"}).text)
    now_valid = ids_in(owner.http.get("/console", params={"valid_at": "2026-06-01T12:00"}).text)
    future = ids_in(owner.http.get("/console", params={"valid_at": "2031-06-01T12:00:00"}).text)

    assert set(drafts) == set(seeded.drafts)
    assert set(asserted) == set(seeded.garden)
    assert later not in now_valid
    assert later in future
    bad = owner.http.get("/console", params={"valid_at": "yesterday"})
    assert bad.status_code == 400
    assert "valid_at must be an ISO 8601 date-time" in bad.text


def test_record_page_shows_provenance_image_description_refs_and_lineage_both_ways(
    owner: Owner, live: ConsoleLive
) -> None:
    seeded = seed(live.service)
    owner.sign_in()

    merged = owner.http.get(f"/console/memories/{seeded.merged}").text
    source = owner.http.get(f"/console/memories/{seeded.merge_sources[0]}").text
    image = owner.http.get(f"/console/memories/{seeded.image}").text

    assert all(source_id in merged for source_id in seeded.merge_sources)
    # How it was merged, in plain words (the identifier stays in the tools' metadata).
    assert "joining the sentences, without a model" in merged
    assert "offline_sentence_merge" not in merged
    assert 'id="lineage-merged"' in source
    assert seeded.merged in source
    assert "Image description" in image
    assert "gs://team-bucket/whiteboard.png" in image
    missing = owner.http.get("/console/memories/" + "0" * 26)
    assert missing.status_code == 404


def test_search_shows_each_results_score_breakdown(owner: Owner, live: ConsoleLive) -> None:
    seed(live.service)
    owner.sign_in()

    page = owner.http.get("/console/search", params={"q": "tomatoes sun"}).text

    assert page.count('class="semantic"') >= 1
    assert page.count('class="keyword"') == page.count('class="context"') >= 1
    # The query's words are marked, by the search's own analyzer, in the escaped text.
    assert "<mark>Tomatoes</mark> need six hours of <mark>sun</mark>" in page


def test_a_form_without_the_sessions_csrf_token_changes_nothing(
    owner: Owner, live: ConsoleLive
) -> None:
    seeded = seed(live.service)
    owner.sign_in()
    target = seeded.garden[0]

    forged = owner.http.post(f"/console/memories/{target}/deprecate", data={"csrf": "forged"})
    missing = owner.http.post(f"/console/memories/{target}/promote", data={})

    assert forged.status_code == missing.status_code == 403
    assert "The form expired" in forged.text
    state = live.service.fetch(ADMIN, id=target)["item"]["metadata"]["branch_state"]
    assert state == "active"


def test_an_expired_session_is_asked_to_sign_in_again_and_changes_nothing(
    owner: Owner, live: ConsoleLive
) -> None:
    seeded = seed(live.service)
    owner.sign_in()
    csrf = owner.csrf()
    owner.expire_session()

    page = owner.http.get("/console")
    post = owner.http.post(f"/console/memories/{seeded.garden[0]}/deprecate", data={"csrf": csrf})

    assert 'name="passphrase"' in page.text
    assert post.status_code == 403
    assert "Your session ended" in post.text
    state = live.service.fetch(ADMIN, id=seeded.garden[0])["item"]["metadata"]
    assert state["branch_state"] == "active"


def test_curation_goes_through_the_service_rules_and_is_recorded_as_owner_events(
    owner: Owner, live: ConsoleLive
) -> None:
    seeded = seed(live.service)
    owner.sign_in()
    first, second, third = seeded.garden

    deprecated = owner.post(
        f"/console/memories/{first}/deprecate", superseding_id=second, reason="changed"
    )
    looping = owner.post(f"/console/memories/{second}/deprecate", superseding_id=first)
    corrected = owner.post(f"/console/memories/{third}/correct", corrected_content="Water at 8.")
    promoted = owner.post(f"/console/memories/{seeded.drafts[0]}/promote")

    assert deprecated.status_code == corrected.status_code == promoted.status_code == 303
    assert looping.status_code == 409  # the service's cycle rule, as for the tool
    meta = live.service.fetch(ADMIN, id=first)["item"]["metadata"]
    assert (meta["branch_state"], meta["superseded_by"]) == ("deprecated", second)
    fixed = live.service.fetch(ADMIN, id=third)["item"]["metadata"]
    assert fixed["supersession_reason"] == "corrected"
    draft = live.service.fetch(ADMIN, id=seeded.drafts[0])["item"]["metadata"]
    assert draft["branch_state"] == "active"
    live.flush_events()
    events = [e for e in live.store.read_events(MEMORY_EVENTS) if e["event_type"] == "owner_action"]
    assert [(e["tool_name"], e["status"]) for e in events] == [
        ("deprecate", "ok"),
        ("deprecate", "error"),
        ("correct", "ok"),
        ("promote", "ok"),
    ]
    assert {e["initiator"] for e in events} == {"owner"}
    assert "Water at 8." not in json.dumps(events)


def test_consolidation_is_previewed_then_confirmed(owner: Owner, live: ConsoleLive) -> None:
    seeded = seed(live.service)
    owner.sign_in()

    preview = owner.post("/console/consolidate/preview", topic="trip")

    assert preview.status_code == 200
    assert "We fly to Lisbon on May 3." in preview.text
    drafts = live.service.list_memories(ADMIN, filter_topic="trip", filter_state="wip")
    assert len(drafts["items"]) == 2  # a preview changes nothing
    confirm = owner.post(
        "/console/consolidate/confirm",
        topic="trip",
        source_id=list(seeded.drafts),
        previewed_id=list(seeded.drafts),
    )
    assert confirm.status_code == 303
    merged_id = confirm.headers["location"].split("/console/memories/")[1].split("?")[0]
    merged = live.service.fetch(ADMIN, id=merged_id)["item"]
    assert merged["metadata"]["provenance"]["derived_from"] == seeded.drafts
    again = owner.post("/console/consolidate/preview", topic="trip")
    assert again.status_code == 409
    assert "at least two sources" in again.text


def test_activity_charts_are_drawn_from_real_events(owner: Owner, live: ConsoleLive) -> None:
    seed(live.service)
    make_events(live.url)
    live.flush_events()
    owner.sign_in()

    page = owner.http.get("/console/activity").text

    # By client, space, person; relevant; latency; refusals; growth: new per day, by
    # space, by topic (issue 41).
    assert page.count("<svg") == 9
    assert "Tool calls per day by client" in page
    assert 'class="bar s-0"' in page
    assert "default: 3</title>" in page  # three admin tool calls today
    assert "50%</title>" in page  # one of two searches found nothing
    assert "wrong or no token: 1</title>" in page  # the reason in plain words
    assert "unauthorized" not in page


def test_the_backup_download_is_the_portable_backup(owner: Owner, live: ConsoleLive) -> None:
    seed(live.service)
    owner.sign_in()

    answer = owner.http.get("/console/export")

    assert answer.status_code == 200
    assert answer.headers["content-type"] == "application/zip"
    assert "attachment" in answer.headers["content-disposition"]
    with zipfile.ZipFile(io.BytesIO(answer.content)) as archive:
        names = sorted(archive.namelist())
        manifest = json.loads(archive.read("manifest.json"))
        lines = archive.read(manifest["archive"]).decode().splitlines()
    assert "manifest.json" in names
    assert manifest["count"] == len(lines) == 9  # every state, the merged record too
    assert manifest["sha256"] == answer.headers["x-backup-sha256"]


@pytest.fixture
def oauth_live(tmp_path: Path) -> Iterator[OAuthLive]:
    with oauth_server(tmp_path) as running:
        yield running


def test_revoking_a_grant_ends_its_tokens(oauth_live: OAuthLive) -> None:
    agent = Browserless(oauth_live)
    client = agent.register(client_name="Test Agent")
    agent.sign_in()
    tokens = agent.tokens(client["client_id"])
    assert tools_list(oauth_live.mcp, tokens["access_token"]).status_code == 200
    live = ConsoleLive(oauth_live.url, oauth_live.store, oauth_live.app)
    live.flush_events()
    owner = Owner(live)
    owner.sign_in()

    clients = owner.http.get("/console/clients").text
    assert "Test Agent" in clients
    grant_id = clients.split("/console/clients/grants/")[1].split("/")[0]
    confirm = owner.http.get(f"/console/clients/grants/{grant_id}/revoke")
    assert "Revoke Test Agent" in confirm.text
    revoked = owner.post(f"/console/clients/grants/{grant_id}/revoke")

    assert revoked.status_code == 303
    assert tools_list(oauth_live.mcp, tokens["access_token"]).status_code == 401
    assert "Test Agent" not in owner.http.get("/console/clients").text
    agent.close()
    owner.close()


def test_the_console_is_served_under_the_cloud_function_name_too(
    owner: Owner, live: ConsoleLive
) -> None:
    seeded = seed(live.service)
    owner.sign_in()

    page = owner.http.get("/metaCortexMcp/console")
    record = owner.http.get(f"/metaCortexMcp/console/memories/{seeded.garden[0]}")

    assert page.status_code == record.status_code == 200
    assert f'href="{live.url}/metaCortexMcp/console/search"' in page.text
    assert f'action="{live.url}/metaCortexMcp/console/memories/' in record.text
    assert owner.http.get("/console/no/such/page").status_code == 404
    slash = owner.http.get("/console/", follow_redirects=True)
    assert slash.status_code == 200
    assert 'id="memory-list"' in slash.text


def test_memories_list_in_the_order_they_happened_and_filter_by_it(
    owner: Owner, live: ConsoleLive
) -> None:
    """Issue 39: the memories page orders by when memories happened ("latest happened
    first") and keeps those that happened between two days; a row says when."""
    saved = {
        month: live.service.save(
            ADMIN, content=f"Quarter notes {month}", topic="notes", occurred_at=f"2024-{month}"
        )["item"]["id"]
        for month in ("02", "05", "01", "04", "03")
    }
    owner.sign_in()

    by_saving = ids_in(owner.http.get("/console", params={"topic": "notes"}).text)
    happened = owner.http.get("/console", params={"topic": "notes", "order": "happened"})
    spring = owner.http.get(
        "/console",
        params={"topic": "notes", "happened_from": "2024-03-01", "happened_until": "2024-04-30"},
    )

    assert by_saving == [saved[m] for m in ("03", "04", "01", "05", "02")]
    assert ids_in(happened.text) == [saved[m] for m in ("05", "04", "03", "02", "01")]
    assert "happened 2024-05" in happened.text
    assert set(ids_in(spring.text)) == {saved["03"], saved["04"]}
    refused = owner.http.get("/console", params={"order": "sideways"})
    assert refused.status_code == 400
    assert "order must be saved or happened" in refused.text
