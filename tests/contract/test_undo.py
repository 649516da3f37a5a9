"""Undo of the owner's lifecycle changes (``usecases/undo.py``): deprecate, promote, correct
and move put back exactly what they changed, in one transaction, only for a while and only
while nothing changed the records since. On SQLite and on the Firestore emulator."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta

import pytest

from metacortex.errors import Conflict, FailedPrecondition
from metacortex.service import Access, MemoryService
from metacortex.usecases.undo import UNDO_WINDOW, Undo


def _save(service: MemoryService, admin: Access, content: str, **kw: object) -> str:
    return str(service.save(admin, content=content, **kw)["item"]["id"])  # type: ignore[arg-type]


def _meta(service: MemoryService, admin: Access, memory_id: str) -> dict[str, object]:
    meta: dict[str, object] = service.fetch(admin, id=memory_id)["item"]["metadata"]
    return meta


def test_undoing_a_deprecation_puts_the_memory_back_as_it_was(
    service: MemoryService, admin: Access
) -> None:
    old = _save(service, admin, "Team lunch is on Thursday.", topic="team")
    new = _save(service, admin, "Team lunch is on Friday.", topic="team")
    before = _meta(service, admin, old)

    _, undo = service.deprecate_undoable(admin, id=old, superseding_id=new)
    assert undo is not None
    assert _meta(service, admin, old)["valid_until"] is not None
    done = service.undo(admin, undo)

    after = _meta(service, admin, old)
    assert done == {"undone": "deprecate", "ids": [old]}
    for field in ("branch_state", "superseded_by", "supersession_reason", "valid_until"):
        assert after[field] == before[field], field
    assert service.store.superseded_by_any([new]) == []
    found = service.search(admin, query="team lunch thursday", filter_topic="team")["matches"]
    assert old in [match["id"] for match in found]


def test_undoing_a_promotion_makes_the_memory_a_draft_again(
    service: MemoryService, admin: Access
) -> None:
    draft = _save(service, admin, "An idea about caching.", draft=True)

    _, undo = service.promote_undoable(admin, id=draft)
    assert undo is not None
    service.undo(admin, undo)

    assert _meta(service, admin, draft)["branch_state"] == "wip"
    _, nothing = service.promote_undoable(admin, id=_save(service, admin, "already active"))
    assert nothing is None


def test_undoing_a_correction_reinstates_the_original_and_retires_the_correction(
    service: MemoryService, admin: Access
) -> None:
    wrong = _save(service, admin, "The office opens at 10.", topic="office")

    result, undo = service.correct_undoable(
        admin, id=wrong, corrected_content="The office opens at 9."
    )
    correction = result["item"]["id"]
    service.undo(admin, undo)

    original = _meta(service, admin, wrong)
    retired = _meta(service, admin, correction)
    assert (original["branch_state"], original["superseded_by"]) == ("active", None)
    assert retired["branch_state"] == "deprecated"
    assert retired["superseded_by"] == wrong
    assert retired["supersession_reason"] == "corrected"
    assert [m.id for m in service.store.superseded_by_any([wrong])] == [correction]


def test_undoing_a_correction_that_matched_a_recent_save_keeps_that_memory(
    service: MemoryService, admin: Access
) -> None:
    right = _save(service, admin, "The office opens at 9.", topic="office", origin="user_asserted")
    wrong = _save(service, admin, "The office opens at 10.", topic="office")

    result, undo = service.correct_undoable(
        admin, id=wrong, corrected_content="The office opens at 9."
    )
    assert result["item"]["id"] == right
    service.undo(admin, undo)

    assert _meta(service, admin, wrong)["branch_state"] == "active"
    assert _meta(service, admin, right)["branch_state"] == "active"


def test_an_undo_after_a_record_changed_again_is_refused_and_undoes_nothing(
    service: MemoryService, admin: Access
) -> None:
    first = _save(service, admin, "first")
    second = _save(service, admin, "second")
    undos = [service.deprecate_undoable(admin, id=memory_id)[1] for memory_id in (first, second)]
    undo = Undo.combine(undo for undo in undos if undo is not None)
    assert undo is not None
    service.move(admin, id=second, topic="elsewhere")  # someone changes it meanwhile

    with pytest.raises(Conflict, match=f"memory '{second}' changed after the deprecate"):
        service.undo(admin, undo)

    assert _meta(service, admin, first)["branch_state"] == "deprecated"
    assert _meta(service, admin, second)["branch_state"] == "deprecated"


def test_an_undo_is_refused_once_its_window_has_passed(
    service: MemoryService, admin: Access
) -> None:
    memory = _save(service, admin, "short-lived")
    _, undo = service.deprecate_undoable(admin, id=memory)
    assert undo is not None
    late = replace(undo, made_at=undo.made_at - UNDO_WINDOW - timedelta(seconds=1))

    with pytest.raises(FailedPrecondition, match="can be undone for 15 minutes"):
        service.undo(admin, late)

    assert _meta(service, admin, memory)["branch_state"] == "deprecated"


def test_an_undo_survives_a_round_trip_through_json(service: MemoryService, admin: Access) -> None:
    wrong = _save(service, admin, "The bus leaves at 8.", valid_until="2099-01-01T00:00:00Z")
    _, undo = service.correct_undoable(admin, id=wrong, corrected_content="The bus leaves at 7.")

    again = Undo.from_data(json.loads(json.dumps(undo.to_data())))

    assert again == undo
    service.undo(admin, again)
    assert _meta(service, admin, wrong)["valid_until"] == "2099-01-01T00:00:00.000Z"


def test_a_move_keeps_id_and_history_and_its_undo_moves_it_back(
    service: MemoryService, admin: Access
) -> None:
    old = _save(service, admin, "Standup is at 9:00.", topic="standups")
    memory = _save(service, admin, "Standup is at 9:30.", topic="standups")
    service.deprecate(admin, id=old, superseding_id=memory)

    result, undo = service.move(admin, id=memory, topic="team")

    assert result == {"item": {"id": memory, "topic": "team"}, "previous_topic": "standups"}
    assert _meta(service, admin, memory)["topic"] == "team"
    found = service.search(admin, query="standup", filter_topic="team")["matches"]
    assert [match["id"] for match in found] == [memory]
    assert [m.id for m in service.store.superseded_by_any([memory])] == [old]
    assert service.store.topic_counts()["team"] == {service.store.get(memory).branch_state: 1}  # type: ignore[union-attr]
    assert undo is not None
    service.undo(admin, undo)
    assert _meta(service, admin, memory)["topic"] == "standups"
    assert service.move(admin, id=memory, topic="standups")[1] is None


def test_a_retried_save_after_the_owner_moved_the_memory_returns_it_where_it_is_now(
    service: MemoryService, admin: Access
) -> None:
    """The dedupe window still holds: an agent's retry of the same save does not undo the
    owner's filing by writing the memory again in the topic it was moved from."""
    memory = _save(service, admin, "The car is due for service in May.", topic="car")
    service.move(admin, id=memory, topic="household")

    again = service.save(admin, content="The car is due for service in May.", topic="car")

    assert again["write_status"] == "duplicate"
    assert again["item"]["id"] == memory
    assert again["item"]["metadata"]["topic"] == "household"
