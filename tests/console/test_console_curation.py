"""The console's listing and curation over real loopback HTTP (no browser): where you are in
the listing, confirmation pages that change nothing, refused changes that keep you where you
were with what you typed, consolidation of chosen memories with the owner's edit, and the
owner events they leave (ids, counts and lengths, never content)."""

from __future__ import annotations

import json
import re
from html import unescape

import pytest

from metacortex.kernel.events import MEMORY_EVENTS
from tests.console.support import ADMIN, ConsoleLive, Owner, ids_in, seed

pytestmark = pytest.mark.slow


def _link(html: str, element_id: str) -> str:
    found = re.search(rf'<a href="([^"]+)"[^>]*id="{element_id}"', html)
    assert found, element_id
    return unescape(found.group(1))


def _owner_events(live: ConsoleLive) -> list[dict[str, object]]:
    live.flush_events()
    return [e for e in live.store.read_events(MEMORY_EVENTS) if e["event_type"] == "owner_action"]


def test_an_empty_store_shows_one_state_that_says_how_to_connect_a_client(owner: Owner) -> None:
    page = owner.http.get("/console").text

    assert 'id="empty-store"' in page
    assert "connect your first client" in page
    assert "/console/clients" in page
    assert "The first hour" in page
    assert 'id="memory-list"' not in page
    assert 'class="filter-form"' not in page


def test_the_listing_says_where_you_are_and_pages_back_to_newer(
    owner: Owner, live: ConsoleLive
) -> None:
    for number in range(60):
        live.service.save(ADMIN, content=f"Line {number}\nmore text", topic="Bulk")

    first = owner.http.get("/console", params={"topic": "bulk"}).text
    second = owner.http.get(_link(first, "next-page")).text
    third = owner.http.get(_link(second, "next-page")).text
    back = owner.http.get(_link(third, "newer-page")).text

    positions = [
        re.search(r'<span id="position">([^<]+)</span>', page).group(1)  # type: ignore[union-attr]
        for page in (first, second, third, back)
    ]
    assert positions == ["1–25 of 60", "26–50 of 60", "51–60 of 60", "26–50 of 60"]
    assert ids_in(back) == ids_in(second)
    assert "Showing topic “Bulk”" in first
    assert ">Line 59</a></h3>" in first  # the first line is the heading
    assert 'id="newer-page"' not in first
    assert 'id="next-page"' not in third


def test_a_refused_correction_is_the_record_again_with_the_error_and_the_typed_text(
    owner: Owner, live: ConsoleLive
) -> None:
    seeded = seed(live.service)
    target = seeded.garden[0]
    typed = "Tomatoes need <b>eight</b> hours. " * 700

    answer = owner.post(f"/console/memories/{target}/correct", corrected_content=typed)

    assert answer.status_code == 400
    assert "the limit is 20000" in answer.text
    assert '<h1 id="page-title" class="record-title">Tomatoes need six hours' in answer.text
    textarea = answer.text.split('name="corrected_content"')[1].split("</textarea>")[0]
    assert unescape(textarea.split(">", 1)[1]) == typed  # as typed, trailing space too
    assert live.service.fetch(ADMIN, id=target)["item"]["metadata"]["branch_state"] == "active"
    [event] = _owner_events(live)
    assert (event["tool_name"], event["status"]) == ("correct", "error")
    assert "eight" not in json.dumps(event)


def test_the_deprecation_page_finds_replacements_by_search_and_changes_nothing(
    owner: Owner, live: ConsoleLive
) -> None:
    seeded = seed(live.service)
    target, replacement, _ = seeded.garden

    page = owner.http.get(
        f"/console/memories/{target}/deprecate",
        params={"q": "basil planted", "reason": "corrected"},
    )

    assert page.status_code == 200
    assert f'value="{replacement}"' in page.text
    assert f'name="superseding_id" value="{target}"' not in page.text  # never itself
    assert 'id="reason-corrected" name="reason" value="corrected" checked' in page.text
    assert live.service.fetch(ADMIN, id=target)["item"]["metadata"]["branch_state"] == "active"
    done = owner.post(
        f"/console/memories/{target}/deprecate", superseding_id=replacement, reason="corrected"
    )
    assert done.status_code == 303
    meta = live.service.fetch(ADMIN, id=target)["item"]["metadata"]
    assert (meta["superseded_by"], meta["supersession_reason"]) == (replacement, "corrected")
    replaced = owner.http.get(f"/console/memories/{replacement}").text
    assert 'id="replaced"' in replaced
    assert f"/console/memories/{target}" in replaced.split('id="replaced"')[1]


def test_an_edited_merge_of_chosen_memories_is_saved_and_its_event_holds_no_text(
    owner: Owner, live: ConsoleLive
) -> None:
    seeded = seed(live.service)
    chosen = [seeded.garden[0], seeded.image, seeded.drafts[0]]

    preview = owner.http.get("/console/consolidate", params=[("id", i) for i in chosen])

    assert preview.status_code == 200
    assert "Consolidate 3 memories" in preview.text
    proposed = unescape(preview.text.split('name="proposed_content" value="')[1].split('"')[0])
    confirm = owner.post(
        "/console/consolidate/confirm",
        topic="planning",
        source_id=chosen,
        previewed_id=chosen,
        proposed_content=proposed,
        merged_content="Sunny tomatoes, the whiteboard, and Lisbon on May 3.",
    )
    assert confirm.status_code == 303
    merged_id = confirm.headers["location"].split("/console/memories/")[1].split("?")[0]
    merged = live.service.fetch(ADMIN, id=merged_id)["item"]
    assert merged["content"] == "Sunny tomatoes, the whiteboard, and Lisbon on May 3."
    assert merged["metadata"]["topic"] == "planning"
    assert merged["metadata"]["merge_method"] == "offline_sentence_merge, edited by the owner"
    [event] = _owner_events(live)
    assert event["request"] == {
        "topic": "planning",
        "source_ids": chosen,
        "edited": True,
        "merged_content_chars": 52,
    }
    assert "Lisbon" not in json.dumps(event)


def test_an_unedited_preview_is_merged_by_the_model_and_says_so(
    owner: Owner, live: ConsoleLive
) -> None:
    seeded = seed(live.service)
    preview = owner.post("/console/consolidate/preview", topic="trip")
    proposed = unescape(preview.text.split('name="proposed_content" value="')[1].split('"')[0])

    confirm = owner.post(
        "/console/consolidate/confirm",
        topic="trip",
        source_id=seeded.drafts,
        previewed_id=seeded.drafts,
        proposed_content=proposed,
        merged_content=proposed.replace(" ", "  ") + "\n",  # whitespace is no edit
    )

    merged_id = confirm.headers["location"].split("/console/memories/")[1].split("?")[0]
    meta = live.service.fetch(ADMIN, id=merged_id)["item"]["metadata"]
    assert meta["merge_method"] == "offline_sentence_merge"
    assert meta["provenance"]["origin"] == "agent_inferred"


def test_unticking_a_source_then_confirming_previews_again_and_merges_nothing(
    owner: Owner, live: ConsoleLive
) -> None:
    seeded = seed(live.service)
    extra = live.service.save(ADMIN, content="Draft: pack the adapter.", topic="trip", draft=True)[
        "item"
    ]["id"]
    previewed = [*seeded.drafts, extra]

    answer = owner.post(
        "/console/consolidate/confirm",
        topic="trip",
        source_id=seeded.drafts,
        previewed_id=previewed,
        proposed_content="whatever was proposed",
        merged_content="My own text.",
    )

    assert answer.status_code == 200
    assert "The sources changed, so nothing was merged yet" in answer.text
    assert "Your edited text was kept." in answer.text
    assert ">My own text.</textarea>" in answer.text
    assert answer.text.count('name="previewed_id"') == 2
    for draft in previewed:
        assert live.service.fetch(ADMIN, id=draft)["item"]["metadata"]["branch_state"] == "wip"


def test_one_chosen_memory_or_all_sources_unticked_is_refused_and_says_why(
    owner: Owner, live: ConsoleLive
) -> None:
    seeded = seed(live.service)

    one = owner.http.get("/console/consolidate", params={"id": seeded.garden[0]})
    none_left = owner.post("/console/consolidate/preview", topic="trip", previewed_id=seeded.drafts)

    assert one.status_code == none_left.status_code == 400
    assert "tick at least two memories" in one.text
    assert "keep at least two sources ticked" in none_left.text
