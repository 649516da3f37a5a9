"""Input validation the service owns, on every store backend: instants and strings."""

from __future__ import annotations

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
