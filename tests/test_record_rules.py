"""``record_rules``: whole records checked by the tools' rules; supersession loops found."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from metacortex.domain.record_rules import check_record, supersession_loops
from metacortex.domain.records import BranchState, Memory, Modality, Provenance
from metacortex.errors import InvalidArgument

AT = datetime(2026, 1, 1, tzinfo=UTC)


def _memory(**changes: object) -> Memory:
    memory = Memory(
        id="m1",
        content="The boiler is serviced in June.",
        retrieval_text="The boiler is serviced in June.",
        topic="house",
        branch_state=BranchState.ACTIVE,
        modality=Modality.TEXT,
        created_at=AT,
        updated_at=AT,
    )
    return memory.with_changes(**changes)


def test_a_record_is_stored_as_the_tools_would_store_it() -> None:
    checked = check_record(
        _memory(
            topic=" house ",
            artifact_refs=("gs://b/a.png", " gs://b/a.png"),
            provenance=Provenance(derived_from=("m0", "m0")),
        )
    )
    assert (checked.topic, checked.artifact_refs) == ("house", ("gs://b/a.png",))
    assert checked.provenance.derived_from == ("m0",)


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"id": "has space"}, "id is not a memory id"),
        ({"content": "a\x00b"}, "U+0000"),
        ({"content": " "}, "content is empty"),
        ({"topic": "two words"}, "topic 'two words'"),
        ({"superseded_by": "m1"}, "names the record itself"),
        ({"artifact_refs": ("notes.md",)}, "artifact_refs[0] must be a URI"),
        ({"provenance": Provenance(confidence=float("nan"))}, "confidence"),
        ({"valid_from": AT, "valid_until": AT}, "valid_from must be earlier"),
    ],
)
def test_a_record_a_tool_would_refuse_is_refused_naming_the_field(
    changes: dict[str, object], named: str
) -> None:
    with pytest.raises(InvalidArgument, match=re.escape(named)):
        check_record(_memory(**changes))


def test_loops_are_found_also_through_records_already_stored() -> None:
    stored = {"s1": "a", "s2": None}
    links = {"a": "b", "b": "s1", "c": "s2", "d": "d2", "d2": "d", "e": "a"}
    loops = supersession_loops(links, stored.get)
    assert set(loops) == {"a", "b", "d", "d2"}
    assert loops["a"] == ["a", "b", "s1"]
