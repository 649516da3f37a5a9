"""search_context's ``keyword``: a literal match (ticket numbers, versions, codes) apart
from ``query``, alone or beside it, on every store (issue 40 §4).

The clients of the .NET memory server search "keyword" apart from "semantic"; here a
keyword filters what the query finds, or finds alone what holds it as written.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from metacortex.errors import InvalidArgument
from metacortex.service import Access, MemoryService


def _ids(result: dict[str, object]) -> list[str]:
    matches = result["matches"]
    assert isinstance(matches, list)
    return [match["id"] for match in matches]


def _seed(service: MemoryService, admin: Access) -> dict[str, str]:
    notes = {
        "incident": "INC-4821: the checkout service timed out after the deploy",
        "neighbour": "INC-48210 was a different checkout outage, months later",
        "spaced": "inc 4821 written with a space is not the ticket as written",
        "release": "Released v2.3.1 of the checkout service on Monday",
        "later": "Released v2.3.10 with a fix for the checkout cache",
        "lowercase": "the rollback of inc-4821 took ten minutes",
    }
    for index in range(20):
        service.save(admin, content=f"Routine checkout note {index} about the service")
    return {name: service.save(admin, content=text)["item"]["id"] for name, text in notes.items()}


def test_a_keyword_alone_finds_every_memory_holding_it_as_written_letter_case_aside(
    service: MemoryService, admin: Access
) -> None:
    ids = _seed(service, admin)

    found = service.search(admin, keyword="INC-4821", limit=10)

    assert set(_ids(found)) == {ids["incident"], ids["lowercase"]}
    assert found["applied_filters"]["keyword"] == "INC-4821"
    assert all(match["relevance"] == "strong" for match in found["matches"])


def test_a_version_is_not_found_inside_a_longer_one(service: MemoryService, admin: Access) -> None:
    ids = _seed(service, admin)

    assert _ids(service.search(admin, keyword="v2.3.1")) == [ids["release"]]
    assert set(_ids(service.search(admin, keyword="v2.3"))) == {ids["release"], ids["later"]}


def test_a_keyword_beside_a_query_keeps_only_what_holds_it(
    service: MemoryService, admin: Access
) -> None:
    ids = _seed(service, admin)

    plain = _ids(service.search(admin, query="checkout outage", limit=20))
    narrowed = _ids(service.search(admin, query="checkout outage", keyword="inc-4821", limit=20))

    assert len(plain) > 2
    assert set(narrowed) == {ids["incident"], ids["lowercase"]}


def test_a_keyword_nothing_holds_finds_nothing_and_is_no_error(
    service: MemoryService, admin: Access
) -> None:
    _seed(service, admin)

    found = service.search(admin, keyword="INC-9999")

    assert found["matches"] == []
    assert found["nothing_relevant"] is True


def test_a_keyword_respects_the_other_filters(service: MemoryService, admin: Access) -> None:
    ids = _seed(service, admin)
    tagged = service.save(admin, content="INC-4821 postmortem notes", topic="postmortems")

    found = service.search(admin, keyword="INC-4821", filter_topic="postmortems")

    assert _ids(found) == [tagged["item"]["id"]]
    assert ids["incident"] not in _ids(found)


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({}, "give query"),
        ({"keyword": "   "}, "keyword must not be empty"),
        ({"keyword": "the of"}, "holds no word the search can look up"),
        ({"keyword": "x" * 201}, "keyword is 201 characters; the limit is 200"),
        ({"keyword": "bad\x00key"}, "keyword contains the disallowed character U+0000"),
    ],
)
def test_a_search_without_query_or_with_an_unusable_keyword_is_refused_by_name(
    service: MemoryService, admin: Access, arguments: dict[str, Any], expected: str
) -> None:
    with pytest.raises(InvalidArgument, match=re.escape(expected)):
        service.search(admin, **arguments)
