"""When memories happened (issue 39), on every store: ``occurred_at`` given, stated or
saved; search and list filtered by it, listed in its order; a question naming a time
raising the memories of that time; and each match's relevance."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from metacortex.documents.isolation import shut_down
from metacortex.errors import InvalidArgument
from metacortex.service import Access, MemoryService


@pytest.fixture(scope="module", autouse=True)
def _reader_hosts() -> Iterator[None]:
    """The document reader processes a test here starts end with the module."""
    yield
    shut_down()


def test_a_memory_shows_when_it_happened_and_where_that_came_from(
    service: MemoryService, admin: Access
) -> None:
    given = service.save(admin, content="Signed the lease", occurred_at="2024-03-01")["item"]
    stated = service.save(admin, content="On 3 March 2024 we shipped the importer.")["item"]
    saved = service.save(admin, content="The user prefers dark mode")["item"]

    shown = {
        item["id"]: (item["metadata"]["occurred_at"], item["metadata"]["occurred_at_source"])
        for item in service.list_memories(admin)["items"]
    }

    assert shown[given["id"]] == ("2024-03-01", "given")
    assert shown[stated["id"]] == ("2024-03-03", "stated")
    assert shown[saved["id"]] == (saved["metadata"]["created_at"], "saved")
    fetched = service.fetch(admin, id=stated["id"])["item"]["metadata"]
    assert (fetched["occurred_at"], fetched["occurred_at_source"]) == ("2024-03-03", "stated")


def test_a_given_time_overrides_what_the_text_states(service: MemoryService, admin: Access) -> None:
    item = service.save(
        admin, content="Notes of 8 May 2023: retro", occurred_at="2023-05-09T10:00:00Z"
    )["item"]

    assert item["metadata"]["occurred_at"] == "2023-05-09T10:00:00.000Z"
    assert item["metadata"]["occurred_at_source"] == "given"


def test_the_same_words_on_another_day_are_another_memory(
    service: MemoryService, admin: Access
) -> None:
    first = service.save(admin, content="Daily standup: nothing new", occurred_at="2024-03-01")
    again = service.save(admin, content="Daily standup: nothing new", occurred_at="2024-03-01")
    other = service.save(admin, content="Daily standup: nothing new", occurred_at="2024-03-02")

    assert again["write_status"] == "duplicate"
    assert other["write_status"] == "created"
    assert other["item"]["id"] != first["item"]["id"]


def test_a_bad_time_is_refused_and_nothing_is_saved(service: MemoryService, admin: Access) -> None:
    with pytest.raises(InvalidArgument, match="occurred_at"):
        service.save(admin, content="Lost?", occurred_at="the other day")
    with pytest.raises(InvalidArgument, match="after must be earlier than before"):
        service.search(admin, query="anything", after="2024-05", before="2024-04")

    assert service.list_memories(admin)["items"] == []


def _months(service: MemoryService, admin: Access, topic: str) -> dict[str, str]:
    """One memory a month, January to June 2024, saved in a shuffled order."""
    ids = {}
    for month in ("04", "03", "01", "06", "02", "05"):
        saved = service.save(
            admin,
            content=f"Monthly review of the billing service, part {month}",
            topic=topic,
            occurred_at=f"2024-{month}-15",
        )
        ids[month] = saved["item"]["id"]
    return ids


def test_list_orders_by_when_memories_happened_and_pages_through_every_one(
    service: MemoryService, admin: Access
) -> None:
    ids = _months(service, admin, "reviews")
    seen: list[str] = []
    cursor = None
    while True:
        page = service.list_memories(
            admin, filter_topic="reviews", order_by="occurred_at", limit=2, cursor=cursor
        )
        assert len(page["items"]) == 2 or page["next_cursor"] is None
        seen += [item["id"] for item in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break

    assert seen == [ids[m] for m in ("06", "05", "04", "03", "02", "01")]
    assert page["applied_filters"]["order_by"] == "occurred_at"


def test_a_cursor_of_one_order_is_refused_by_the_other(
    service: MemoryService, admin: Access
) -> None:
    _months(service, admin, "reviews")
    cursor = service.list_memories(admin, order_by="occurred_at", limit=2)["next_cursor"]

    with pytest.raises(InvalidArgument, match="other filters"):
        service.list_memories(admin, limit=2, cursor=cursor)


def test_after_and_before_keep_what_happened_between_in_list_and_search(
    service: MemoryService, admin: Access
) -> None:
    ids = _months(service, admin, "reviews")
    spring = {ids["03"], ids["04"]}

    listed = service.list_memories(admin, after="2024-03", before="2024-05")
    found = service.search(admin, query="billing review", after="2024-03", before="2024-05")

    assert {item["id"] for item in listed["items"]} == spring
    assert {match["id"] for match in found["matches"]} == spring
    assert found["applied_filters"]["after"] == "2024-03-01T00:00:00.000Z"
    assert found["applied_filters"]["before"] == "2024-05-01T00:00:00.000Z"


def test_after_filters_before_ranking_so_a_full_page_comes_back(
    service: MemoryService, admin: Access
) -> None:
    for index in range(30):
        service.save(admin, content=f"incident report {index}", occurred_at="2023-06-01")
    wanted = {
        service.save(admin, content=f"unrelated grocery note {i}", occurred_at="2024-06-01")[
            "item"
        ]["id"]
        for i in range(5)
    }

    found = service.search(admin, query="incident report", after="2024-01-01", limit=5)

    assert {match["id"] for match in found["matches"]} == wanted


def test_a_question_naming_a_time_raises_the_memories_of_that_time(
    service: MemoryService, admin: Access
) -> None:
    ids = _months(service, admin, "reviews")

    plain = service.search(admin, query="billing service review", limit=6)["matches"]
    timed = service.search(admin, query="billing service review in April 2024", limit=6)

    assert len({match["score"] for match in plain}) == 1  # nothing tells them apart
    assert timed["matches"][0]["id"] == ids["04"]
    assert timed["matches"][0]["score"] > timed["matches"][1]["score"]


def test_a_month_named_without_a_year_is_the_latest_one_memories_happened_in(
    service: MemoryService, admin: Access
) -> None:
    ids = _months(service, admin, "reviews")

    found = service.search(admin, query="billing service review in March", limit=6)

    assert found["matches"][0]["id"] == ids["03"]


def test_a_question_placed_before_a_dated_memory_raises_what_happened_before_it(
    service: MemoryService, admin: Access
) -> None:
    service.save(admin, content="The mobile app launch happened", occurred_at="2024-05-01")
    before = service.save(
        admin, content="Decided the pricing tiers for the app", occurred_at="2024-04-10"
    )["item"]["id"]
    service.save(admin, content="Decided the support rota for the app", occurred_at="2024-06-10")

    found = service.search(admin, query="what did we decide before the launch", limit=3)

    assert found["matches"][0]["id"] == before


def _relevance(result: dict[str, Any]) -> list[str]:
    return [match["relevance"] for match in result["matches"]]


def test_every_match_says_whether_its_own_evidence_is_strong(
    service: MemoryService, admin: Access
) -> None:
    service.save(admin, content="The staging database moved to db-staging-2")
    service.save(admin, content="Lunch is on Fridays at the corner cafe")

    answered = service.search(admin, query="staging database", limit=2)
    nonsense = service.search(admin, query="qzvx wrpltk", limit=2)

    assert _relevance(answered) == ["strong", "weak"]
    assert answered["nothing_relevant"] is False
    assert "note" not in answered
    assert _relevance(nonsense) == ["weak", "weak"]
    assert nonsense["nothing_relevant"] is True
    assert nonsense["note"].startswith("Nothing relevant found")


def test_words_nobody_mentioned_keep_a_half_matching_question_weak(
    service: MemoryService, admin: Access
) -> None:
    service.save(admin, content="Melanie painted a sunrise over the lake")

    asked = service.search(admin, query="What did Gina paint at the zorbly festival?", limit=1)

    assert _relevance(asked) == ["weak"]
    assert asked["nothing_relevant"] is True


def test_a_when_question_favours_a_memory_that_knows_when_it_happened(
    service: MemoryService, admin: Access
) -> None:
    dated = service.save(admin, content="Painted the garden fence", occurred_at="2024-05-03")
    service.save(admin, content="Painted the garden fence")

    plain = service.search(admin, query="painted the garden fence", limit=2)["matches"]
    when = service.search(admin, query="When did we paint the garden fence?", limit=2)["matches"]

    assert plain[0]["score"] == plain[1]["score"]  # nothing tells them apart
    assert when[0]["id"] == dated["item"]["id"]
    assert when[0]["score"] > when[1]["score"]


def test_a_document_s_passages_happened_when_the_document_says_else_when_saved(
    service: MemoryService, admin: Access
) -> None:
    text = "# Minutes\n\nOn 3 March 2024 the board met. " + "It agreed the budget. " * 80
    dated = service.create_document(
        admin, content=text, source="minutes.md", occurred_at="2024-03-03"
    )
    undated = service.create_document(admin, content=text + " Later notes.", source="b.md")

    for added, wanted in ((dated, ("2024-03-03", "given")), (undated, (None, "saved"))):
        _, passages = service.document_passages(admin, id=added["document"]["id"])
        assert len(passages) > 1
        for passage in passages:
            occurrence = passage.occurrence
            shown = occurrence.to_wire() if wanted[0] else None
            assert (shown, occurrence.source.value) == wanted
