"""The filters of the browse and search pages: read from the query string, the topic
matched without regard to case, the topic names offered as suggestions."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Final

from starlette.requests import Request

from metacortex.console.listing import Author
from metacortex.console.present import match_topic
from metacortex.domain.records import ALL_STATES, BranchState, Origin
from metacortex.errors import InvalidArgument
from metacortex.storage.base import ListOrder

STATES: Final = tuple(state.value for state in ALL_STATES)
ORIGINS: Final = tuple(origin.value for origin in Origin)
FIELDS: Final = (
    "words",
    "topic",
    "state",
    "origin",
    "valid_at",
    "person",
    "client",
    "created_from",
    "created_until",
    "happened_from",
    "happened_until",
    "order",
)
# The memories page's filters the search page does not take (who wrote them, when, and
# the order).
LISTING_ONLY: Final = ("person", "client", "created_from", "created_until", "order")
# The memories page's orders: when they were saved, or when they happened.
ORDERS: Final[dict[str, ListOrder]] = {"saved": "created", "happened": "occurred"}
# Topic names offered in the filter's suggestion list (a <datalist>), most used first.
MAX_SUGGESTED: Final = 500


@dataclass(frozen=True, slots=True)
class Filters:
    """The filters as typed (``given``, for the form and links) and as applied."""

    given: dict[str, str]
    topic: str | None  # the stored topic the typed one names (None: no topic filter)
    unknown_topic: str | None = None  # typed, but names no stored topic
    suggestions: list[str] = field(default_factory=list)

    @property
    def words(self) -> str | None:
        """The memories page's keyword box: only memories containing these words."""
        return self.given.get("words")

    @property
    def state(self) -> list[str] | str:
        value = self.given.get("state")
        if value == "all":
            return list(STATES)
        return value or BranchState.ACTIVE.value

    @property
    def author(self) -> Author:
        """Who wrote the memories to list (matched on the records read: ``listing``)."""
        return Author(self.given.get("person"), self.given.get("client"))

    @property
    def order(self) -> ListOrder:
        """The listing's order: when memories were saved (the default) or happened."""
        value = self.given.get("order", "saved")
        if value not in ORDERS:
            raise InvalidArgument(f"order must be saved or happened; got {value!r}")
        return ORDERS[value]

    def service_arguments(self) -> dict[str, Any]:
        """Search's filters; when they happened from the start of the "from" day (UTC) to
        the end of the "until" day."""
        return {
            "filter_topic": self.topic,
            "filter_state": self.state,
            "filter_origin": self.given.get("origin"),
            "valid_at": self.given.get("valid_at"),
            "after": _day(self.given.get("happened_from"), "happened from", 0),
            "before": _day(self.given.get("happened_until"), "happened until", 1),
        }

    def store_arguments(self) -> dict[str, Any]:
        """``service_arguments`` and the creation dates, for ``reading.memory_filter``: a
        day from its start (UTC) to the end of the "until" day."""
        arguments = self.service_arguments()
        return {
            **{k: v for k, v in arguments.items() if k not in ("after", "before")},
            "occurred_after": arguments["after"],
            "occurred_before": arguments["before"],
            "created_after": _day(self.given.get("created_from"), "created from", 0),
            "created_before": _day(self.given.get("created_until"), "created until", 1),
        }

    def link_arguments(self) -> dict[str, str]:
        """The filters for a link to another page of the same listing (the topic as
        stored, so the next page needs no matching)."""
        out = dict(self.given)
        if self.topic is not None:
            out["topic"] = self.topic
        return out


def _day(value: str | None, name: str, after: int) -> datetime | None:
    """The start of the day ``value`` names (``after`` days later), UTC."""
    if value is None:
        return None
    try:
        day = date.fromisoformat(value)
    except ValueError:
        raise InvalidArgument(f"{name} must be a date (YYYY-MM-DD); got {value!r}") from None
    return datetime.combine(day + timedelta(days=after), time(), tzinfo=UTC)


def read_filters(request: Request, counts: Mapping[str, Mapping[BranchState, int]]) -> Filters:
    given = {
        name: value.strip()
        for name in FIELDS
        if (value := request.query_params.get(name, "")).strip()
    }
    typed = given.get("topic")
    if typed is None:
        return Filters(given, None)
    found = match_topic(typed, counts)
    if found.topic is None:
        return Filters(given, None, unknown_topic=typed, suggestions=found.suggestions)
    return Filters(given, found.topic)


def topic_names(counts: Mapping[str, Mapping[BranchState, int]]) -> list[str]:
    """Topic names for the suggestion list: the most memories first, then by name."""
    ranked = sorted(counts, key=lambda name: (-sum(counts[name].values()), name))
    return ranked[:MAX_SUGGESTED]


def state_totals(counts: Mapping[str, Mapping[BranchState, int]]) -> dict[str, int]:
    """Memories in each state over every topic."""
    return {
        state.value: sum(by_state.get(state, 0) for by_state in counts.values())
        for state in ALL_STATES
    }


def form_context(
    filters: Filters, counts: Mapping[str, Mapping[BranchState, int]]
) -> dict[str, Any]:
    """What ``_filters.html`` needs: the state menu says how many memories each state
    holds and leaves out "merged" while none is (consolidation deprecates its sources,
    so it is empty unless a tool set it) unless it is the state asked for."""
    totals = state_totals(counts)
    chosen = filters.given.get("state", BranchState.ACTIVE.value)
    return {
        "filters": filters.given,
        "states": [
            (state, totals[state])
            for state in STATES
            if totals[state] or state != BranchState.MERGED.value or state == chosen
        ],
        "every_state": sum(totals.values()),
        "origins": ORIGINS,
        "topic_names": topic_names(counts),
        "unknown_topic": filters.unknown_topic,
        "suggestions": filters.suggestions,
    }
