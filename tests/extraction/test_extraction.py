"""Fact extraction on save_context against Gemini faked at the HTTP wire (issue 32).

The real google-genai client sends each request to a fake Gemini on a loopback port,
which answers with structured output exactly as the REST API shapes it (the JSON as
the text of the one part, ``usageMetadata`` with token counts). Both stores.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from metacortex.access.model import Level
from metacortex.domain.records import BranchState
from metacortex.service import Access, MemoryService
from metacortex.storage.base import MemoryStore
from tests.contract.test_spaces import Team
from tests.extraction.wire import MODEL, facts, ran_report, request_text, structured_reply
from tests.gemini_wire import FakeGemini, error_reply, wire_tokens
from tests.test_gemini_providers import Sleeps

TEXT = "Staging moved to db-staging-2 on 2026-03-01. Dana ran the migration over the weekend."
MOVED = "The staging database moved to db-staging-2 on 2026-03-01."
DANA = "Dana ran the staging database migration over the weekend."
ELSEWHERE = "01hzzzzzzzzzzzzzzzzzzzzzzz"


def saved_id(service: MemoryService, access: Access, content: str, **kw: Any) -> str:
    return str(service.save(access, content=content, **kw)["item"]["id"])


def generate_requests(fake: FakeGemini) -> list[dict[str, Any]]:
    return [
        FakeGemini.body(request)
        for request in fake.requests
        if request.url.path.endswith(":generateContent")
    ]


def relation_schema(body: dict[str, Any]) -> dict[str, Any]:
    fact = body["generationConfig"]["responseSchema"]["properties"]["facts"]["items"]
    relation: dict[str, Any] = fact["properties"]["relation"]
    return relation


def test_a_text_of_several_facts_is_kept_whole_and_each_fact_saved_and_linked(
    service: MemoryService, plain: MemoryService, store: MemoryStore, fake: FakeGemini
) -> None:
    admin = Access.admin()
    old = saved_id(plain, admin, "The staging database is db-staging-1.", topic="infra")
    answer = facts(
        (MOVED, {"id": old, "type": "updates", "note": "the database changed"}),
        (DANA, None),
    )
    fake.script.append(structured_reply(answer, thoughts=40))

    result = service.save(admin, content=TEXT, topic="infra", source_session="s-1")

    item = result["item"]
    assert (item["content"], result["write_status"]) == (TEXT, "created")
    assert [fact["content"] for fact in result["facts"]] == [MOVED, DANA]
    moved_id, dana_id = (fact["id"] for fact in result["facts"])
    for fact_id, content in ((moved_id, MOVED), (dana_id, DANA)):
        fetched = service.fetch(admin, id=fact_id)["item"]
        assert fetched["content"] == content
        assert fetched["metadata"]["topic"] == "infra"
        assert fetched["metadata"]["branch_state"] == "active"
        assert fetched["metadata"]["provenance"]["origin"] == "agent_inferred"
        assert fetched["metadata"]["provenance"]["derived_from"] == [item["id"]]
        assert fetched["metadata"]["provenance"]["source_session"] == "s-1"
    assert result["relations"] == [
        {"source": moved_id, "target": old, "type": "updates", "note": "the database changed"}
    ]
    stored = {(r.source, r.type.value, r.target) for r in store.relations_of([old, item["id"]])}
    assert stored == {
        (moved_id, "updates", old),
        (moved_id, "derived_from", item["id"]),
        (dana_id, "derived_from", item["id"]),
    }
    assert {(r["id"], r["type"], r["direction"]) for r in item["related"]} == {
        (moved_id, "derived_from", "incoming"),
        (dana_id, "derived_from", "incoming"),
    }
    # Extraction proposes; it never retires (the caller's deprecate_context does).
    assert plain.fetch(admin, id=old)["item"]["metadata"]["branch_state"] == "active"
    assert "contested_ids" not in result

    [body] = generate_requests(fake)
    [request] = [r for r in fake.requests if r.url.path.endswith(":generateContent")]
    assert request.url.path.endswith(f"/models/{MODEL}:generateContent")
    config = body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["temperature"] == 0.0
    assert relation_schema(body)["properties"]["id"]["enum"] == [old]
    assert relation_schema(body)["properties"]["type"]["enum"] == [
        "derives",
        "extends",
        "relates_to",
        "updates",
    ]
    assert "db-staging-1" in request_text(body)
    assert TEXT in request_text(body)
    assert result["extraction"] == ran_report(
        body, answer, thoughts=40, facts=2, saved_facts=2, relations=1, dropped_relations=0
    )


def test_a_text_of_one_fact_stays_one_memory_and_its_relation_starts_there(
    service: MemoryService, plain: MemoryService, store: MemoryStore, fake: FakeGemini
) -> None:
    admin = Access.admin()
    old = saved_id(plain, admin, "The staging database is db-staging-1.")
    fake.script.append(
        structured_reply(facts((MOVED, {"id": old, "type": "updates", "note": "moved"})))
    )

    result = service.save(admin, content=MOVED)

    new = result["item"]["id"]
    assert result["facts"] == []
    assert result["relations"] == [
        {"source": new, "target": old, "type": "updates", "note": "moved"}
    ]
    assert result["item"]["related"][0] | {"summary": ""} == {
        "id": old,
        "type": "updates",
        "direction": "outgoing",
        "note": "moved",
        "summary": "",
        "hops": 1,
    }
    assert [(r.source, r.target) for r in store.relations_of([old])] == [(new, old)]
    assert len(plain.list_memories(admin)["items"]) == 2


@pytest.mark.parametrize(
    ("answer", "finish", "reason"),
    [
        ('{"facts": [{"text": "Staging moved', "STOP", "malformed answer: not JSON"),
        ('{"facts": "Staging moved"}', "STOP", "malformed answer: no list of facts"),
        ('{"facts": [{"relation": null}]}', "STOP", "malformed answer: fact 1 has no text"),
        (
            json.dumps(facts((MOVED, {"id": "X", "type": "contradicts", "note": ""}))),
            "STOP",
            "malformed answer: fact 1 has a relation type outside",
        ),
        (json.dumps(facts((MOVED, None))), "MAX_TOKENS", "the answer was cut off"),
    ],
    ids=["truncated-json", "facts-not-a-list", "fact-without-text", "unknown-type", "cut-off"],
)
def test_a_malformed_answer_saves_the_text_whole_with_no_relations_and_says_why(
    service: MemoryService,
    plain: MemoryService,
    store: MemoryStore,
    fake: FakeGemini,
    answer: str,
    finish: str,
    reason: str,
) -> None:
    admin = Access.admin()
    old = saved_id(plain, admin, "The staging database is db-staging-1.")
    fake.script.append(structured_reply(answer, finish=finish))

    result = service.save(admin, content=TEXT)

    assert result["item"]["content"] == TEXT
    assert "facts" not in result
    assert "relations" not in result
    assert result["item"]["related"] == []
    report = result["extraction"]
    assert report["status"] == "failed"
    assert report["reason"].startswith(reason)
    assert "Dana" not in report["reason"]  # the model's answer is never quoted
    # What the call cost is counted all the same.
    assert report["model_calls"] == 1
    assert report["output_tokens"] == wire_tokens(answer)
    assert report["prompt_tokens"] > 0
    assert store.relations_of([old, result["item"]["id"]]) == []
    assert len(plain.list_memories(admin)["items"]) == 2


def test_a_relation_to_an_id_that_was_not_a_candidate_is_dropped_and_its_fact_kept(
    service: MemoryService, plain: MemoryService, store: MemoryStore, fake: FakeGemini
) -> None:
    admin = Access.admin()
    old = saved_id(plain, admin, "The staging database is db-staging-1.")
    fake.script.append(
        structured_reply(
            facts(
                (MOVED, {"id": ELSEWHERE, "type": "updates", "note": "hallucinated"}),
                (DANA, {"id": old, "type": "relates_to", "note": "same database"}),
            )
        )
    )

    result = service.save(admin, content=TEXT)

    moved_id, dana_id = (fact["id"] for fact in result["facts"])
    assert result["relations"] == [
        {"source": dana_id, "target": old, "type": "relates_to", "note": "same database"}
    ]
    assert result["extraction"]["dropped_relations"] == 1
    assert plain.fetch(admin, id=moved_id)["item"]["content"] == MOVED
    assert not any(r.touches(ELSEWHERE) for r in store.relations_of([moved_id, ELSEWHERE]))


def test_a_memory_of_another_space_is_never_a_candidate_and_a_relation_to_it_is_dropped(
    service: MemoryService, plain: MemoryService, store: MemoryStore, fake: FakeGemini
) -> None:
    team = Team(store)
    owner = team.owner()
    at_work = saved_id(plain, owner, "The staging database is db-staging-1.", space="work")
    at_home = saved_id(plain, owner, "The staging database is db-staging-1.", space="family")
    fake.script.append(
        structured_reply(facts((MOVED, {"id": at_work, "type": "updates", "note": "leak"})))
    )

    result = service.save(owner, content=MOVED, space="family")

    [body] = generate_requests(fake)
    assert relation_schema(body)["properties"]["id"]["enum"] == [at_home]
    assert result["relations"] == []
    assert result["extraction"]["dropped_relations"] == 1
    assert store.relations_of([at_work], space="work") == []
    assert store.relations_of([at_work, result["item"]["id"]], space="family") == []


def test_an_update_of_another_persons_memory_is_recorded_and_contested_and_it_stays_active(
    service: MemoryService, plain: MemoryService, store: MemoryStore, fake: FakeGemini
) -> None:
    team = Team(store)
    owner = team.owner()
    ann = team.access(team.ann, {"family": Level.WRITE}, "family")
    owners = saved_id(plain, owner, "The spare key is under the blue pot.", space="family")
    anns = saved_id(plain, ann, "The bikes are in the shed.", space="family")
    fake.script.append(
        structured_reply(
            facts(
                (
                    "The spare key is now in the key safe.",
                    {"id": owners, "type": "updates", "note": "moved"},
                ),
                (
                    "The bikes are now in the garage.",
                    {"id": anns, "type": "updates", "note": "moved"},
                ),
            )
        )
    )

    result = service.save(
        ann,
        content="The spare key is now in the key safe, and the bikes in the garage.",
        space="family",
    )

    key_fact, bike_fact = (fact["id"] for fact in result["facts"])
    assert result["contested_ids"] == [owners]
    assert owners in result["message"]
    assert "stays active" in result["message"]
    stored = {
        (r.source, r.type.value, r.target)
        for r in store.relations_of([owners, anns], space="family")
    }
    assert stored == {(key_fact, "updates", owners), (bike_fact, "updates", anns)}
    for memory_id in (owners, anns):
        state = plain.fetch(owner, id=memory_id, space="family")["item"]["metadata"]["branch_state"]
        assert state == BranchState.ACTIVE.value


@pytest.mark.parametrize(
    ("status", "grpc", "reason"),
    [
        (500, "INTERNAL", "Gemini fact extraction failed after 3 attempts: 500 INTERNAL"),
        (429, "RESOURCE_EXHAUSTED", "Gemini fact extraction failed after 3 attempts: 429"),
    ],
)
def test_a_model_that_keeps_failing_leaves_the_text_saved_whole_with_no_relations(
    service: MemoryService,
    plain: MemoryService,
    store: MemoryStore,
    fake: FakeGemini,
    sleeps: Sleeps,
    status: int,
    grpc: str,
    reason: str,
) -> None:
    admin = Access.admin()
    old = saved_id(plain, admin, "The staging database is db-staging-1.")
    fake.script.extend([error_reply(status, grpc, "try later")] * 3)

    result = service.save(admin, content=TEXT)

    assert result["write_status"] == "created"
    assert result["item"]["content"] == TEXT
    assert result["item"]["related"] == []
    assert result["extraction"]["status"] == "failed"
    assert result["extraction"]["reason"].startswith(reason)
    assert (result["extraction"]["prompt_tokens"], result["extraction"]["output_tokens"]) == (0, 0)
    assert sleeps.delays == [1.0, 2.0]
    assert len(generate_requests(fake)) == 3
    assert store.relations_of([old, result["item"]["id"]]) == []
    assert len(plain.list_memories(admin)["items"]) == 2


def test_a_duplicate_save_or_a_draft_makes_no_model_call(
    service: MemoryService, fake: FakeGemini
) -> None:
    admin = Access.admin()
    fake.script.append(structured_reply(facts((MOVED, None))))
    first = service.save(admin, content=MOVED)

    again = service.save(admin, content=MOVED)
    draft = service.save(admin, content=DANA, draft=True)

    assert first["extraction"]["status"] == "ran"
    assert again["write_status"] == "duplicate"
    assert (again["extraction"]["status"], again["extraction"]["model_calls"]) == ("skipped", 0)
    assert "duplicate" in again["extraction"]["reason"]
    assert draft["extraction"]["status"] == "skipped"
    assert len(generate_requests(fake)) == 1


def test_a_correction_is_saved_as_typed_with_no_model_call_while_save_context_extracts(
    service: MemoryService, plain: MemoryService, fake: FakeGemini
) -> None:
    """One ``Saving`` serves both: ``save_context`` runs its after-save step (extraction),
    the lifecycle's correction saves the owner's text as given and is never split."""
    admin = Access.admin()
    wrong = saved_id(plain, admin, "The staging database is db-staging-1.", topic="infra")

    corrected = service.correct(admin, id=wrong, corrected_content=TEXT)

    assert corrected["write_status"] == "created"
    assert corrected["item"]["content"] == TEXT
    assert not {"extraction", "facts", "relations"} & corrected.keys()
    assert generate_requests(fake) == []
    listed = [item["id"] for item in plain.list_memories(admin)["items"]]
    assert listed == [corrected["item"]["id"]]  # the text alone: no fact saved beside it
    fake.script.append(structured_reply(facts((MOVED, None), (DANA, None))))
    assert service.save(admin, content=DANA + " Again.")["extraction"]["status"] == "ran"
    assert len(generate_requests(fake)) == 1
