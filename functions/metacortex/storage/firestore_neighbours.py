"""Neighbour look-ups that do not read again what the search already holds.

The conversational-context step asks for up to ``span`` records each side of
each of its anchors (the best 20 candidates). Most of those neighbours are
records the search has just read: other candidates, often other anchors. A
keyset query cannot skip them, but it can stop at them: the query for one side
of an anchor ends before a *bound*, a record already in hand that matches the
filter, and

- if the query fills ``span``, those records are the neighbours, as before;
- if it returns fewer, it read everything between the anchor and the bound, so
  the neighbours are those records, then the bound, then what follows the bound:
  either nothing more is needed (the bound is the ``span``-th record in hand on
  that side, so the records between are all there) or the bound is another
  anchor, whose own query on that side, issued in the same round trip, says what
  follows it.

The result is exactly what unbounded queries return (the contract suite checks
it against SQLite); only fewer documents are read. The bound is the first
anchor among the ``span`` nearest records in hand on that side, else the
``span``-th of them; with fewer in hand and no anchor among them, the query is
not bounded.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from metacortex.domain.records import Memory
from metacortex.storage.base import MemoryFilter

Side = bool  # True: newer records (oldest first from the anchor); False: older


def _order(memory: Memory) -> tuple[object, str]:
    return (memory.created_at, memory.id)


@dataclass(frozen=True, slots=True)
class SidePlan:
    """One keyset query: ``span`` records from ``anchor`` on one side, ending before ``bound``."""

    anchor: Memory
    newer: Side
    bound: Memory | None


def plan(
    anchors: Sequence[Memory], known: Sequence[Memory], where: MemoryFilter, span: int
) -> list[SidePlan]:
    """The two queries of each anchor, each bounded by a record in hand where one helps."""
    anchor_ids = {anchor.id for anchor in anchors}
    by_topic: dict[str, dict[str, Memory]] = {}
    for memory in (*anchors, *known):
        if memory.id in anchor_ids or where.matches(memory):
            by_topic.setdefault(memory.topic, {})[memory.id] = memory
    ordered = {topic: sorted(found.values(), key=_order) for topic, found in by_topic.items()}
    plans: list[SidePlan] = []
    for anchor in anchors:
        line = ordered[anchor.topic]
        at = next(i for i, m in enumerate(line) if m.id == anchor.id)
        for newer in (False, True):
            beyond = line[at + 1 : at + 1 + span] if newer else line[max(0, at - span) : at][::-1]
            bound = next((m for m in beyond if m.id in anchor_ids), None)
            if bound is None and len(beyond) == span:
                bound = beyond[-1]
            plans.append(SidePlan(anchor, newer, bound))
    return plans


def assemble(
    plans: Sequence[SidePlan], read: Mapping[tuple[str, Side], list[Memory]], span: int
) -> Callable[[Memory, Side], list[Memory]]:
    """``side(anchor, newer)``: the ``span`` nearest records on that side, from the
    bounded reads plus the records in hand they stopped at."""
    bounds = {(p.anchor.id, p.newer): p.bound for p in plans}
    done: dict[tuple[str, Side], list[Memory]] = {}

    def side(anchor: Memory, newer: Side) -> list[Memory]:
        key = (anchor.id, newer)
        if key in done:
            return done[key]
        records = list(read[key])
        bound = bounds[key]
        if len(records) < span and bound is not None:
            records.append(bound)
            if len(records) < span and (bound.id, newer) in bounds:  # the bound is an anchor
                records.extend(side(bound, newer)[: span - len(records)])
        done[key] = records[:span]
        return done[key]

    return side
