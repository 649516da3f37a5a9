"""What the store holds at a glance: topics with their counts, and the newest memories.

Behind the MCP resources ``memory://topics`` and ``memory://recent`` and the
``context`` prompt (``mcp_surface/resources.py``, ``mcp_surface/context_prompt.py``): what an
agent should know at the start of a session. Both read only what the caller's
``Access`` may read, as the tools do.
"""

from __future__ import annotations

from dataclasses import dataclass

from metacortex.access.rules import Access
from metacortex.domain import limits
from metacortex.domain.records import ALL_STATES, BranchState, Memory
from metacortex.errors import Forbidden
from metacortex.storage.base import MemoryFilter, MemoryStore


@dataclass(frozen=True, slots=True)
class TopicCount:
    topic: str
    counts: dict[BranchState, int]  # only readable states holding at least one record

    @property
    def total(self) -> int:
        return sum(self.counts.values())


@dataclass(frozen=True, slots=True)
class Recent:
    memories: list[Memory]  # newest first
    more: bool  # older ones exist beyond ``memories``


class Overview:
    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    def topics(self, access: Access, *, space: str | None = None) -> list[TopicCount]:
        """Every topic of one space holding records in a state the caller may read, with
        the count per readable state, by topic name; states it may not read are neither
        counted nor named (a topic holding only those is absent)."""
        space_key = access.space(space)
        readable = [state for state in ALL_STATES if state in access.readable_states]
        found: list[TopicCount] = []
        for topic, counts in sorted(self._store.topic_counts(space=space_key).items()):
            visible = {state: counts[state] for state in readable if counts.get(state)}
            if visible:
                found.append(TopicCount(topic, visible))
        return found

    def recent(
        self,
        access: Access,
        *,
        topic: str | None = None,
        limit: int,
        space: str | None = None,
    ) -> Recent:
        """The newest ``active`` memories of one space (of ``topic``, or of all), newest
        first: one store query. Forbidden when the caller may not read active memories."""
        space_key = access.space(space)
        if BranchState.ACTIVE not in access.readable_states:
            raise Forbidden("this endpoint may not read memories in state 'active'")
        count = limits.check_limit(limit, limits.MAX_LIST_LIMIT)
        where = MemoryFilter(
            states=(BranchState.ACTIVE,),
            topic=limits.check_topic(topic, "topic") if topic else None,
            space=space_key,
        )
        page = self._store.list_page(where, count + 1, None)
        return Recent(page[:count], more=len(page) > count)
