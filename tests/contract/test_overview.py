"""What the MCP resources and the ``context`` prompt read, on every store (SQLite and
Firestore): topics with counts per readable state, the newest active memories, one
memory by id, the prompt within its budget."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import SecretStr

from metacortex.access.profiles import Profile, load_profiles
from metacortex.config import Settings
from metacortex.domain.records import BranchState
from metacortex.errors import Forbidden, NotFound
from metacortex.mcp_surface import context_prompt, resources
from metacortex.service import Access, MemoryService


def client(tools: list[str], states: list[str] | None = None) -> Profile:
    entry: dict[str, Any] = {"id": "c", "token": "t0K3n-" + "abcdefghij" * 4, "allowedTools": tools}
    if states is not None:
        entry["allowedFilterStates"] = states
    profiles = SecretStr(json.dumps([entry]))
    settings = Settings(_env_file=None, mcp_client_profiles_json=profiles)  # type: ignore[call-arg]
    return load_profiles(settings).clients["c"]


def seed(service: MemoryService, admin: Access) -> dict[str, str]:
    ids = {
        "fence": service.save(admin, content="The fence is green.", topic="garden")["item"]["id"],
        "tomato": service.save(admin, content="Tomatoes need sun.", topic="garden")["item"]["id"],
        "basil": service.save(admin, content="Maybe basil.", topic="garden", draft=True)["item"][
            "id"
        ],
        "invoice": service.save(admin, content="Invoice due Friday.", topic="work")["item"]["id"],
    }
    service.deprecate(admin, id=ids["fence"])
    return ids


def test_topics_count_per_readable_state_and_leave_out_the_rest(
    service: MemoryService, admin: Access
) -> None:
    seed(service, admin)
    only_deprecated = service.save(admin, content="Old plan.", topic="vault")["item"]["id"]
    service.deprecate(admin, id=only_deprecated)
    active_and_wip = Access(
        frozenset({BranchState.ACTIVE, BranchState.WIP}), BranchState.ACTIVE, False
    )

    everything = {t.topic: (t.counts, t.total) for t in service.topics(admin)}
    scoped = {t.topic: (t.counts, t.total) for t in service.topics(active_and_wip)}

    assert everything == {
        "garden": (
            {BranchState.ACTIVE: 1, BranchState.WIP: 1, BranchState.DEPRECATED: 1},
            3,
        ),
        "vault": ({BranchState.DEPRECATED: 1}, 1),
        "work": ({BranchState.ACTIVE: 1}, 1),
    }
    assert scoped == {
        "garden": ({BranchState.ACTIVE: 1, BranchState.WIP: 1}, 2),
        "work": ({BranchState.ACTIVE: 1}, 1),
    }


def test_recent_is_newest_active_first_of_a_topic_or_of_all(
    service: MemoryService, admin: Access
) -> None:
    ids = seed(service, admin)

    everything = service.recent(admin, limit=10)
    garden = service.recent(admin, topic="garden", limit=10)
    one = service.recent(admin, limit=1)

    assert [m.id for m in everything.memories] == [ids["invoice"], ids["tomato"]]
    assert everything.more is False
    assert [m.id for m in garden.memories] == [ids["tomato"]]
    assert [m.id for m in one.memories] == [ids["invoice"]]
    assert one.more is True


def test_recent_is_refused_to_a_caller_that_may_not_read_active_memories(
    service: MemoryService,
) -> None:
    drafts_only = Access(frozenset({BranchState.WIP}), BranchState.WIP, False)
    with pytest.raises(Forbidden, match="'active'"):
        service.recent(drafts_only, limit=5)


def test_the_resources_follow_the_profile_on_every_store(
    service: MemoryService, admin: Access
) -> None:
    ids = seed(service, admin)
    reader = client(["search_context", "fetch_context"], ["active", "wip"])
    searcher = client(["search_context"])

    topics = resources.read(service, reader, "memory://topics").payload
    full = resources.read(service, reader, "memory://recent").payload
    summaries = resources.read(service, searcher, "memory://recent").payload
    one = resources.read(service, reader, f"memory://{ids['tomato']}").payload

    assert topics["topics"] == [
        {"topic": "garden", "counts": {"active": 1, "wip": 1}, "total": 2},
        {"topic": "work", "counts": {"active": 1}, "total": 1},
    ]
    assert [item["content"] for item in full["items"]] == [
        "Invoice due Friday.",
        "Tomatoes need sun.",
    ]
    assert [set(item) for item in summaries["items"]] == [{"id", "summary", "metadata"}] * 2
    assert one == service.fetch(admin, id=ids["tomato"])["item"]
    with pytest.raises(NotFound):
        resources.read(service, reader, f"memory://{ids['fence']}")  # deprecated: not readable
    with pytest.raises(resources.UnknownResource):
        resources.read(service, searcher, f"memory://{ids['tomato']}")


def test_the_context_prompt_fits_its_budget_on_every_store(
    service: MemoryService, admin: Access
) -> None:
    for i in range(12):
        service.save(admin, content=f"Note {i}: " + "word " * 60, topic="notes")
    reader = client(["fetch_context"])

    result, summary = context_prompt.render(service, reader, {"max_chars": "1200"})
    text = result.messages[0].content.text  # type: ignore[union-attr]

    assert len(text) <= 1200
    assert "Note 11:" in text
    assert summary["has_more"] is True
    assert summary["item_count"] == text.count("\n## ")
