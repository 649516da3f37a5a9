"""The console on the production store: the real Firestore emulator behind the real app."""

from __future__ import annotations

from pathlib import Path

import pytest

from metacortex.kernel.events import MEMORY_EVENTS
from tests.console.support import ADMIN, Owner, console_on, make_events, seed
from tests.firestore_support import FirestoreStoreFactory

pytestmark = [pytest.mark.slow, pytest.mark.firestore]


def test_the_console_browses_searches_curates_and_charts_on_firestore(
    firestore_store_factory: FirestoreStoreFactory, tmp_path: Path
) -> None:
    with console_on(firestore_store_factory(), tmp_path) as live:
        seeded = seed(live.service)
        make_events(live.url)
        live.flush_events()
        owner = Owner(live)
        owner.sign_in()

        browse = owner.http.get("/console").text
        record = owner.http.get(f"/console/memories/{seeded.merged}").text
        search = owner.http.get("/console/search", params={"q": "tomatoes sun"}).text
        activity = owner.http.get("/console/activity").text
        deprecated = owner.post(f"/console/memories/{seeded.garden[0]}/deprecate")
        preview = owner.post("/console/consolidate/preview", topic="trip")
        owner.close()

        assert 'aria-label="2 drafts in trip"' in browse
        assert '<span id="position">1–5 of 5</span> active memories' in browse
        assert all(source in record for source in seeded.merge_sources)
        assert 'class="keyword"' in search
        assert "default: 3</title>" in activity
        assert deprecated.status_code == 303
        meta = live.service.fetch(ADMIN, id=seeded.garden[0])["item"]["metadata"]
        assert meta["branch_state"] == "deprecated"
        assert "We fly to Lisbon on May 3." in preview.text
        live.flush_events()
        owner_events = [
            e for e in live.store.read_events(MEMORY_EVENTS) if e["event_type"] == "owner_action"
        ]
        assert [e["initiator"] for e in owner_events] == ["owner"]
