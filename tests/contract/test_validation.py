"""Input validation the service owns, on every store backend: instants and strings."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from metacortex.errors import InvalidArgument
from metacortex.service import Access, MemoryService

OUT_OF_RANGE = [
    "0001-01-01T00:00:00+14:00",  # before year 1 once in UTC
    "9999-12-31T23:59:59-12:00",  # after year 9999 once in UTC
]


def _calls(service: MemoryService, admin: Access) -> dict[str, Callable[[str], Any]]:
    return {
        "save valid_from": lambda t: service.save(admin, content="x", valid_from=t),
        "save valid_until": lambda t: service.save(admin, content="x", valid_until=t),
        "search valid_at": lambda t: service.search(admin, query="x", valid_at=t),
        "list created_after": lambda t: service.list_memories(admin, created_after=t),
        "list created_before": lambda t: service.list_memories(admin, created_before=t),
    }


@pytest.mark.parametrize("instant", OUT_OF_RANGE)
def test_out_of_range_instants_are_invalid_arguments_naming_the_field(
    service: MemoryService, admin: Access, instant: str
) -> None:
    for label, call in _calls(service, admin).items():
        field = label.split()[1]
        with pytest.raises(InvalidArgument, match=f"^{field} is outside the supported range"):
            call(instant)


def test_the_extreme_instants_in_range_are_stored_and_searched(
    service: MemoryService, admin: Access
) -> None:
    saved = service.save(
        admin,
        content="valid for all time",
        valid_from="0001-01-01T00:00:00Z",
        valid_until="9999-12-31T23:59:59.999Z",
    )["item"]
    meta = service.fetch(admin, id=saved["id"])["item"]["metadata"]
    assert (meta["valid_from"], meta["valid_until"]) == (
        "0001-01-01T00:00:00.000Z",
        "9999-12-31T23:59:59.999Z",
    )
    found = service.search(admin, query="valid for all time", valid_at="5000-06-01T00:00:00Z")
    assert [m["id"] for m in found["matches"]] == [saved["id"]]
    listed = service.list_memories(admin, created_after="0001-01-01T00:00:00Z")
    assert [i["id"] for i in listed["items"]] == [saved["id"]]


@pytest.mark.parametrize("bad", ["\x00", "\x07", "\x1b", "\x7f", "\x85", "\ud800"])
def test_control_characters_are_refused_in_every_string_field(
    service: MemoryService, admin: Access, bad: str
) -> None:
    saved = service.save(admin, content="a clean memory")["item"]["id"]
    other = service.save(admin, content="another clean memory")["item"]["id"]
    calls: dict[str, Callable[[str], Any]] = {
        "content": lambda s: service.save(admin, content=f"a{s}b"),
        "topic": lambda s: service.save(admin, content="x", topic=f"t{s}"),
        "source_session": lambda s: service.save(admin, content="x", source_session=f"s{s}"),
        "artifact_refs[0]": lambda s: service.save(
            admin, content="x", artifact_refs=[f"gs://b/{s}"]
        ),
        "valid_from": lambda s: service.save(admin, content="x", valid_from=f"2026-01-01{s}"),
        "query": lambda s: service.search(admin, query=f"q{s}"),
        "filter_topic": lambda s: service.search(admin, query="q", filter_topic=f"t{s}"),
        "valid_at": lambda s: service.search(admin, query="q", valid_at=f"2026-01-01{s}"),
        "created_after": lambda s: service.list_memories(admin, created_after=f"2026{s}"),
    }
    for field, call in calls.items():
        with pytest.raises(InvalidArgument, match=f"^{re.escape(field)} contains the disallowed"):
            call(bad)
    # Id-shaped fields are refused by their pattern.
    id_calls: list[Callable[[], Any]] = [
        lambda: service.fetch(admin, id=saved + bad),
        lambda: service.deprecate(admin, id=saved, superseding_id=other + bad),
        lambda: service.consolidate(admin, source_ids=[saved, other + bad]),
        lambda: service.save(admin, content="x", derived_from=[saved + bad]),
    ]
    for id_call in id_calls:
        with pytest.raises(InvalidArgument, match="is not a memory id"):
            id_call()


def test_trailing_newline_in_id_is_refused(service: MemoryService, admin: Access) -> None:
    saved = service.save(admin, content="a memory with an id")["item"]["id"]
    with pytest.raises(InvalidArgument, match=r"^id is not a memory id"):
        service.fetch(admin, id=saved + "\n")
    with pytest.raises(InvalidArgument, match=r"^derived_from\[0\] is not a memory id"):
        service.save(admin, content="x", derived_from=[saved + "\n"])


def test_tab_and_line_breaks_stay_allowed_in_text(service: MemoryService, admin: Access) -> None:
    item = service.save(admin, content="line one\n\tline two\r\n", source_session="s\t1")["item"]
    assert item["content"] == "line one\n\tline two"
    assert item["metadata"]["provenance"]["source_session"] == "s\t1"
