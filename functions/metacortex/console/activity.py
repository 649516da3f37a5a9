"""Activity from the events (``memory_events``) of whichever store the app runs on: the
share of searches that found something relevant, charts of the last 14 days (calls by
client, by space and by person), the numbers as tables; on a new install, what will
appear there.

The page shows every space's events unless the switcher names one (``?space=KEY``), and
everyone's unless ``?person=ID`` names one; refusals name no space or person, so a
filtered page leaves them out. Last use (the clients page) is never filtered."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import date, timedelta
from typing import Any, Final

from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import Response

from metacortex.access.model import Directory
from metacortex.clients.grants import client_labels, label_of, list_grants
from metacortex.console import charts
from metacortex.console.base import ConsoleBase, access_for
from metacortex.console.switcher import ALL_SPACES, carried_space, space_labels
from metacortex.console.words import refusal
from metacortex.domain.records import utc_now
from metacortex.kernel.events import MEMORY_EVENTS
from metacortex.owner import Session

DAYS: Final = 14
# Events read for the charts (newest days first matter; the window bounds the read).
MAX_EVENTS: Final = 50_000
SEARCH_TOOLS: Final = frozenset({"search_context", "search"})
# What makes a new memory: the tool, and the console's "Add a memory" (an owner action).
SAVING: Final = frozenset({"save_context", "add_memory"})
# The largest topics the growth chart names.
TOP_TOPICS: Final = 10
TOP_CLIENTS: Final = 6
# A search "found something relevant" when one of its matches was judged strong (the
# ``strong_count`` of its event; retrieval/relevance.py). Events recorded before searches
# judged their matches are judged by their best result's fused score (``top_score``)
# reaching this floor instead. Chosen by bench/relevance_floor.py on LoCoMo with the
# embedded default: the lowest score no nonsense query reached (docs/CONSOLE.md).
RELEVANCE_FLOOR: Final = 0.40


@dataclass(frozen=True, slots=True)
class Activity:
    days: list[str]
    calls_by_client: dict[str, list[int]]
    calls_by_space: dict[str, list[int]]
    calls_by_person: dict[str, list[int]]
    calls_per_day: list[int]
    zero_rate: list[float]  # percent per day; -1 when no search that day
    searches: list[int]
    zero_results: list[int]
    judged: list[int]  # searches whose event says how good the best result was
    relevant: list[int]  # of those, searches whose best result cleared RELEVANCE_FLOOR
    relevant_rate: list[float]  # percent of judged per day; -1 when none
    p50: list[float]  # ms per day; -1 when no call that day
    p95: list[float]
    refusals: dict[str, int]
    total_calls: int
    last_use: dict[str, str]
    # New memories per day: saved by a tool or added in the console, duplicates left out.
    saved: list[int] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Only:
    """The events an activity counts: of one space, of one person (None: any)."""

    space: str | None = None
    person: str | None = None

    def keeps(self, event: Mapping[str, Any]) -> bool:
        return (self.space is None or event.get("space") == self.space) and (
            self.person is None or event.get("person") == self.person
        )


def _top(calls: Mapping[str, list[int]], days: int, rest: str) -> dict[str, list[int]]:
    """The ``TOP_CLIENTS`` busiest series, the others summed under ``rest``."""
    ranked = sorted(calls, key=lambda name: -sum(calls[name]))
    shown = {name: calls[name] for name in ranked[:TOP_CLIENTS]}
    if len(ranked) > TOP_CLIENTS:
        shown[rest] = [sum(calls[name][d] for name in ranked[TOP_CLIENTS:]) for d in range(days)]
    return shown


def summarize(
    events: Iterable[Mapping[str, Any]], today: date, days: int = DAYS, only: Only = Only()
) -> Activity:
    """The numbers behind the charts, from ``memory_events`` rows (oldest first); only
    those ``only`` keeps (last use counts every event)."""
    labels = [(today - timedelta(days=days - 1 - i)).isoformat() for i in range(days)]
    index = {label: i for i, label in enumerate(labels)}
    calls: dict[str, list[int]] = defaultdict(lambda: [0] * days)
    by_space: dict[str, list[int]] = defaultdict(lambda: [0] * days)
    by_person: dict[str, list[int]] = defaultdict(lambda: [0] * days)
    latencies: list[list[float]] = [[] for _ in range(days)]
    searches = [0] * days
    zero = [0] * days
    judged = [0] * days
    relevant = [0] * days
    refusals: Counter[str] = Counter()
    saved = [0] * days
    last_use: dict[str, str] = {}
    total = 0
    for event in events:
        stamp = str(event.get("timestamp") or "")
        kind = event.get("event_type")
        client = str(event.get("client_id") or "unknown")
        if kind == "tool_call":
            last_use[client] = max(last_use.get(client, ""), stamp)
        day = index.get(stamp[:10])
        if day is None or not only.keeps(event):
            continue
        response = event.get("response") or {}
        if event.get("tool_name") in SAVING and event.get("status") == "ok":
            saved[day] += response.get("write_status") not in (None, "duplicate")
        if kind == "tool_call":
            total += 1
            calls[client][day] += 1
            by_space[str(event.get("space") or "no space")][day] += 1
            by_person[str(event.get("person") or "unattributed")][day] += 1
            latency = event.get("latency_ms")
            if isinstance(latency, int | float):
                latencies[day].append(float(latency))
            if event.get("tool_name") in SEARCH_TOOLS and "result_count" in response:
                searches[day] += 1
                found = response["result_count"]
                zero[day] += found == 0
                top = response.get("top_score")
                strong = response.get("strong_count")
                if found == 0:
                    judged[day] += 1
                elif isinstance(strong, int):
                    # The search's own judgement (retrieval/relevance.py), since issue 39.
                    judged[day] += 1
                    relevant[day] += strong > 0
                elif isinstance(top, int | float):
                    judged[day] += 1
                    relevant[day] += top >= RELEVANCE_FLOOR
        elif kind == "request_rejected":
            refusals[str(event.get("reason") or "unknown")] += 1
        elif kind == "requests_rejected_aggregate":
            refusals["over the event budget"] += int(event.get("count") or 0)

    import numpy as np  # here: building the app at a cold start needs no numpy

    def percentile(values: list[float], q: float) -> float:
        return round(float(np.percentile(values, q)), 1) if values else -1.0

    return Activity(
        days=labels,
        calls_by_client=_top(calls, days, "other clients"),
        calls_by_space=_top(by_space, days, "other spaces"),
        calls_by_person=_top(by_person, days, "other people"),
        calls_per_day=[sum(calls[name][d] for name in calls) for d in range(days)],
        zero_rate=[
            round(100 * z / s, 1) if s else -1.0 for z, s in zip(zero, searches, strict=True)
        ],
        searches=searches,
        zero_results=zero,
        judged=judged,
        relevant=relevant,
        relevant_rate=[
            round(100 * r / j, 1) if j else -1.0 for r, j in zip(relevant, judged, strict=True)
        ],
        p50=[percentile(values, 50) for values in latencies],
        p95=[percentile(values, 95) for values in latencies],
        refusals=dict(refusals),
        total_calls=total,
        last_use=last_use,
        saved=saved,
    )


async def read_activity(console: ConsoleBase, days: int = DAYS, only: Only = Only()) -> Activity:
    today = utc_now().date()
    since = utc_now() - timedelta(days=days)
    store = console.service.store
    events = await console.call(
        store.read_events, collection=MEMORY_EVENTS, limit=MAX_EVENTS, since=since
    )
    return summarize(events, today, days, only)


async def named_activity(
    console: ConsoleBase, directory: Directory, days: int = DAYS, only: Only = Only()
) -> Activity:
    """The activity with each client named as the clients page names it (an OAuth
    grant by its application and redirect host, not ``oauth-<grant id>``), each space
    and person by name."""
    activity = await read_activity(console, days, only)
    grants = await console.call(list_grants, store=console.service.store)
    names = client_labels((profile.id for profile in console.runtime.profiles.all()), grants)
    calls = {label_of(client, names): v for client, v in activity.calls_by_client.items()}
    spaces = space_labels(directory, sorted(directory.spaces))
    names = directory.names()
    return replace(
        activity,
        calls_by_client=calls,
        calls_by_space={spaces.get(k, k): v for k, v in activity.calls_by_space.items()},
        calls_by_person={names.get(k, k): v for k, v in activity.calls_by_person.items()},
    )


async def _stored(
    console: ConsoleBase, request: Request, space: str | None
) -> tuple[dict[str, int], dict[str, int]]:
    """How many memories each space holds now (``space``: that one only), and the largest
    topics across them, from the store's topic counts."""
    access = access_for(request)
    keys = [space] if space is not None else sorted(access.levels)
    labels = space_labels(access.directory, keys)
    by_space: dict[str, int] = {}
    topics: Counter[str] = Counter()
    for key in keys:
        counts = await console.call(console.service.store.topic_counts, space=key)
        by_space[labels[key]] = sum(sum(states.values()) for states in counts.values())
        for topic, states in counts.items():
            topics[topic] += sum(states.values())
    return by_space, dict(topics.most_common(TOP_TOPICS))


async def activity_page(console: ConsoleBase, request: Request, session: Session) -> Response:
    access = access_for(request)
    directory = access.directory
    chosen = carried_space(request)
    person = request.query_params.get("person") or None
    only = Only(None if chosen in (None, ALL_SPACES) else access.space(), person)
    activity = await named_activity(console, directory, only=only)
    people = sorted(directory.people.values(), key=lambda p: (not p.is_owner, p.name.casefold()))
    shown = {
        "title": "Activity",
        "activity": activity,
        "only_space": space_labels(directory, [only.space])[only.space] if only.space else None,
        "only_person": directory.names().get(person, person) if person else None,
        "people_choices": [(p.id, p.name) for p in people],
        "person": person,
    }
    if activity.total_calls == 0 and not activity.refusals:
        return console.render(request, session, "activity.html", {**shown, "empty": True})
    refusals = {refusal(reason): count for reason, count in activity.refusals.items()}
    short = [day[5:] for day in activity.days]
    clients = list(activity.calls_by_client)
    chart_calls: Markup = charts.stacked_bars(
        "chart-calls",
        "Tool calls per day by client",
        short,
        [charts.Series(name, values) for name, values in activity.calls_by_client.items()],
    )
    chart_spaces = charts.stacked_bars(
        "chart-spaces",
        "Tool calls per day by space",
        short,
        [charts.Series(name, values) for name, values in activity.calls_by_space.items()],
    )
    chart_people = charts.stacked_bars(
        "chart-people",
        "Tool calls per day by person",
        short,
        [charts.Series(name, values) for name, values in activity.calls_by_person.items()],
    )
    chart_relevant = charts.lines(
        "chart-relevant",
        "Searches whose best result cleared the relevance floor (% per day)",
        short,
        [charts.Series("with a relevant result", activity.relevant_rate)],
        unit="%",
        top=100.0,
    )
    chart_latency = charts.lines(
        "chart-latency",
        "Tool call latency per day (ms)",
        short,
        [charts.Series("p50", activity.p50), charts.Series("p95", activity.p95)],
        unit=" ms",
    )
    chart_refusals = charts.horizontal_bars(
        "chart-refusals", "Refused requests by reason", refusals
    )
    by_space, by_topic = await _stored(console, request, only.space)
    chart_saved = charts.stacked_bars(
        "chart-saved",
        "New memories per day",
        short,
        [charts.Series("new memories", activity.saved)],
    )
    chart_by_space = charts.horizontal_bars(
        "chart-by-space", "Memories by space (every state)", by_space, ("memories", "spaces")
    )
    chart_by_topic = charts.horizontal_bars(
        "chart-by-topic",
        f"The {TOP_TOPICS} largest topics (every state)",
        by_topic,
        ("memories", "topics"),
    )
    searches = sum(activity.searches)
    judged = sum(activity.judged)
    relevant = sum(activity.relevant)
    return console.render(
        request,
        session,
        "activity.html",
        {
            **shown,
            "empty": False,
            "refusals": refusals,
            "floor": RELEVANCE_FLOOR,
            "searches": searches,
            "judged": judged,
            "relevant": relevant,
            "relevant_share": round(100 * relevant / judged) if judged else None,
            "zero": sum(activity.zero_results),
            "charts": [
                ("Tool calls per day by client", chart_calls, charts.legend(clients)),
                (
                    "Tool calls per day by space",
                    chart_spaces,
                    charts.legend(list(activity.calls_by_space)),
                ),
                (
                    "Tool calls per day by person",
                    chart_people,
                    charts.legend(list(activity.calls_by_person)),
                ),
                (
                    "Searches with a relevant result (% per day)",
                    chart_relevant,
                    charts.legend(["with a relevant result"]),
                ),
                (
                    "Tool call latency per day: p50 and p95",
                    chart_latency,
                    charts.legend(["p50", "p95"]),
                ),
                ("Refused requests by reason", chart_refusals, []),
                ("New memories per day", chart_saved, charts.legend(["new memories"])),
                ("Memories by space, now", chart_by_space, []),
                (f"The {TOP_TOPICS} largest topics, now", chart_by_topic, []),
            ],
            "growth": {"by_space": by_space, "by_topic": by_topic, "saved": activity.saved},
        },
    )
