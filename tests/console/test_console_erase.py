"""Erasing from the console over real loopback HTTP (no browser): one record, a
selection, a topic, each after a confirmation that says how many; CSRF; owner events;
links to erased records."""

from __future__ import annotations

import json
import re

import pytest

from metacortex.kernel.events import MEMORY_EVENTS
from tests.console.support import ADMIN, ConsoleLive, Owner, seed

pytestmark = pytest.mark.slow


def _hidden_values(html: str, name: str) -> list[str]:
    return re.findall(rf'<input type="hidden" name="{name}" value="([^"]*)"', html)


def test_a_record_is_erased_after_a_confirmation_that_says_how_many(
    owner: Owner, live: ConsoleLive
) -> None:
    secret = live.service.save(ADMIN, content="The door code is 4711-heron")["item"]["id"]
    record = owner.http.get(f"/console/memories/{secret}")
    assert f'<input type="hidden" name="id" value="{secret}">' in record.text
    assert 'id="erase"' in record.text

    confirm = owner.http.get("/console/erase", params={"id": secret})

    assert confirm.status_code == 200
    assert '<h1 id="page-title">Erase 1 memory?</h1>' in confirm.text
    assert "Erase 1 memory</button>" in confirm.text
    assert live.store.get(secret) is not None  # the confirmation changes nothing
    done = owner.post(
        "/console/erase",
        id=_hidden_values(confirm.text, "id"),
        count=_hidden_values(confirm.text, "count")[0],
    )
    assert done.status_code == 200
    assert "1 memory erased; a tombstone stays for each." in done.text
    assert live.store.get(secret) is None
    gone = owner.http.get(f"/console/memories/{secret}")
    assert gone.status_code == 404
    assert "was erased on" in gone.text
    assert "by owner (console)" in gone.text


def test_a_selection_from_the_browse_page_is_erased_and_recorded_with_ids_only(
    owner: Owner, live: ConsoleLive
) -> None:
    seeded = seed(live.service)
    browse = owner.http.get("/console", params={"topic": "garden"})
    assert 'id="select-form"' in browse.text
    assert f'name="id" value="{seeded.garden[0]}"' in browse.text
    chosen = seeded.garden[:2]

    confirm = owner.http.get("/console/erase", params=[("id", i) for i in chosen])
    assert "Erase 2 memories?" in confirm.text
    done = owner.post("/console/erase", id=chosen, count="2")

    assert done.status_code == 200
    assert [live.store.get(i) for i in chosen] == [None, None]
    assert live.store.get(seeded.garden[2]) is not None
    live.flush_events()
    [event] = [e for e in live.store.read_events(MEMORY_EVENTS) if e["tool_name"] == "erase"]
    assert (event["event_type"], event["initiator"], event["status"]) == (
        "owner_action",
        "owner",
        "ok",
    )
    assert event["request"] == {"via": "console", "selection": "ids", "count": "2"}
    assert event["response"]["erased_ids"] == chosen
    assert "Tomatoes" not in json.dumps(event)


def test_a_topic_is_erased_only_with_the_count_the_owner_confirmed(
    owner: Owner, live: ConsoleLive
) -> None:
    for i in range(3):
        live.service.save(ADMIN, content=f"Scratch note {i}", topic="scratch")
    live.service.save(ADMIN, content="A draft", topic="scratch", draft=True)
    browse = owner.http.get("/console", params={"topic": "scratch", "state": "all"})
    assert "Erase all 4 memories of “scratch”…" in browse.text

    confirm = owner.http.get("/console/erase", params={"topic": "scratch"})
    assert "Erase 4 memories?" in confirm.text
    assert _hidden_values(confirm.text, "topic") == ["scratch"]
    live.service.save(ADMIN, content="Saved while the owner was reading", topic="scratch")
    stale = owner.post("/console/erase", topic="scratch", count="4")

    assert stale.status_code == 409
    assert "now holds 5 memories to erase, not the 4 you confirmed" in stale.text
    assert sum(live.store.topic_counts()["scratch"].values()) == 5
    done = owner.post("/console/erase", topic="scratch", count="5")
    assert "5 memories erased" in done.text
    assert "scratch" not in live.store.topic_counts()


def test_an_erase_without_the_sessions_csrf_token_changes_nothing(
    owner: Owner, live: ConsoleLive
) -> None:
    kept = live.service.save(ADMIN, content="Kept")["item"]["id"]

    forged = owner.http.post("/console/erase", data={"csrf": "forged", "id": kept, "count": "1"})
    bare = owner.http.post("/console/erase", data={"id": kept, "count": "1"})

    assert forged.status_code == bare.status_code == 403
    assert live.store.get(kept) is not None


def test_the_confirmation_names_the_consolidated_records_built_from_the_text(
    owner: Owner, live: ConsoleLive
) -> None:
    seeded = seed(live.service)
    source = seeded.merge_sources[0]

    confirm = owner.http.get("/console/erase", params={"id": source})
    done = owner.post("/console/erase", id=[source], count="1")

    for page in (confirm, done):
        assert "Built from this text, not erased" in page.text
        assert f"/console/memories/{seeded.merged}" in page.text
    merged = owner.http.get(f"/console/memories/{seeded.merged}")
    assert re.search(
        rf"<code>{source}</code> <span class=\"tag state-erased\">erased</span> on .* by owner"
        r" \(console\)",
        merged.text,
    )


def test_a_record_superseded_by_an_erased_one_says_so(owner: Owner, live: ConsoleLive) -> None:
    old = live.service.save(ADMIN, content="The office is on floor 3")["item"]["id"]
    new = live.service.save(ADMIN, content="The office is on floor 4")["item"]["id"]
    live.service.deprecate(ADMIN, id=old, superseding_id=new)
    owner.post("/console/erase", id=[new], count="1")

    page = owner.http.get(f"/console/memories/{old}")

    assert re.search(
        rf'<li id="chain-end"><code>{new}</code> <span class="tag state-erased">erased</span>'
        r" on .* by owner \(console\)</li>",
        page.text,
    )


def test_asking_to_erase_nothing_or_an_unknown_id_is_refused_clearly(owner: Owner) -> None:
    empty = owner.http.get("/console/erase")
    unknown = owner.http.get("/console/erase", params={"id": "zz-unknown"})
    no_count = owner.post("/console/erase", id=["zz-unknown"])

    assert (empty.status_code, unknown.status_code, no_count.status_code) == (400, 404, 400)
    assert "choose the memories to erase first" in empty.text
    assert "no memory with id &#39;zz-unknown&#39;; nothing was erased" in unknown.text
    assert "the confirmation carries no count" in no_count.text
