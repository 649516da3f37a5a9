"""Consolidation: merge sources into one record and retire them, idempotently."""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from typing import Any

from metacortex.access.model import Level
from metacortex.access.rules import Access, all_visible
from metacortex.domain import limits
from metacortex.domain.records import (
    DEFAULT_TOPIC,
    Attribution,
    BranchState,
    Initiator,
    Memory,
    Modality,
    Origin,
    Provenance,
    new_memory_id,
    utc_now,
)
from metacortex.domain.relations import RelationType
from metacortex.domain.text import summarize
from metacortex.errors import Conflict, FailedPrecondition, Forbidden, InvalidArgument
from metacortex.providers.base import Embedder, Merger
from metacortex.storage.base import MemoryFilter, MemoryStore, StoreTransaction
from metacortex.usecases.relations import between

# How many of a topic's newest agent-inferred active records are scanned for its last merge.
_RECENT_MERGES_SCANNED = 20


class Consolidation:
    """``consolidate_context`` and the console's preview of it."""

    def __init__(self, store: MemoryStore, embedder: Embedder, merger: Merger) -> None:
        self._store = store
        self._embedder = embedder
        self._merger = merger

    def consolidate(
        self,
        access: Access,
        *,
        topic: str | None = None,
        source_ids: Sequence[str] | None = None,
        merged_content: str | None = None,
        space: str | None = None,
    ) -> dict[str, Any]:
        """Merge the sources (``source_ids``, or the topic's drafts) into one active record.

        ``merged_content`` (the owner's console, never a tool): the text the owner wrote
        or edited after a preview, stored instead of the merge model's; the record then
        says so (``merge_method`` "<model>, edited by the owner", origin
        ``user_asserted``).

        A source someone else wrote is merged (the merged record derives from it) but
        not retired unless the caller is the owner: it stays as it is and its id is in
        ``contested_ids``."""
        space_key = access.space(space, Level.WRITE)
        topic_name = limits.check_topic(topic if topic is not None else DEFAULT_TOPIC)
        ids = _checked_ids(source_ids)
        owner_text = _owner_text(merged_content)
        sources = (
            all_visible(self._store, access, ids, space_key)
            if ids
            else self._wip_queue(access, topic_name, space_key)
        )
        kept = {m.id for m in sources if access.contested(m)}
        done = self._completed_consolidation(sources, kept, space_key)
        if done is None and not ids and not sources:
            # The queue is empty: a re-run (or a concurrent twin) after the merge
            # committed. Answer with that merge, as an idempotent call should.
            done = self._latest_consolidation(access, topic_name, space_key)
        if done is not None:
            return done
        _require_sources(sources, ids, topic_name)
        sources.sort(key=lambda m: (m.created_at, m.id))
        merged_text = (
            owner_text
            if owner_text is not None
            else _checked_text(self._merger.merge(topic_name, [m.content for m in sources]))
        )
        [vector] = self._embedder.embed_documents([merged_text])
        now = utc_now()
        refs = tuple(dict.fromkeys(ref for m in sources for ref in m.artifact_refs))
        merged = Memory(
            id=new_memory_id(),
            content=merged_text,
            retrieval_text=merged_text,
            topic=topic_name,
            branch_state=BranchState.ACTIVE,
            modality=Modality.TEXT,
            created_at=now,
            updated_at=now,
            artifact_refs=refs[: limits.MAX_ARTIFACT_REFS * limits.MAX_CONSOLIDATE_SOURCES],
            initiator=Initiator.AGENT if owner_text is None else Initiator.USER,
            provenance=Provenance(
                origin=Origin.AGENT_INFERRED if owner_text is None else Origin.USER_ASSERTED,
                derived_from=tuple(m.id for m in sources),
            ),
            merge_method=self._merger.method
            if owner_text is None
            else f"{self._merger.method}, edited by the owner",
            space=space_key,
            created_by=Attribution(access.person, access.principal),
        )
        source_ids_in_order = [m.id for m in sources]
        by = Attribution(access.person, access.principal)

        def apply(txn: StoreTransaction) -> dict[str, Any]:
            current = txn.get_many(source_ids_in_order)
            present = [m for m in current if m is not None]
            finished = (
                self._completed_in(txn, present, kept) if len(present) == len(current) else None
            )
            if finished is not None:
                return finished  # a concurrent identical call won; keep its record
            for memory in current:
                if memory is None:
                    raise Conflict("a source memory disappeared during consolidation; retry")
                _require_mergeable(memory)
            txn.put(merged, vector)
            for memory in present:
                if memory.id not in kept:
                    memory = memory.with_changes(
                        branch_state=BranchState.DEPRECATED,
                        superseded_by=merged.id,
                        updated_at=now,
                        changed_by=by,
                    )
                    txn.put(memory)
                txn.relate(between(merged, memory, RelationType.DERIVED_FROM, by))
            return _consolidation_result(merged, source_ids_in_order, kept)

        return self._store.transaction(apply, space=space_key)

    def preview_consolidation(
        self,
        access: Access,
        *,
        topic: str,
        source_ids: Sequence[str] | None = None,
        space: str | None = None,
    ) -> dict[str, Any]:
        """What ``consolidate`` would merge (``source_ids``, of any topic and active or
        draft, or else the topic's drafts) and into what text; nothing changes.

        Confirm by passing the previewed ``source_ids``, so exactly those are merged."""
        space_key = access.space(space, Level.WRITE)
        topic_name = limits.check_topic(topic)
        ids = _checked_ids(source_ids)
        sources = (
            all_visible(self._store, access, ids, space_key)
            if ids
            else self._wip_queue(access, topic_name, space_key)
        )
        _require_sources(sources, ids, topic_name)
        sources.sort(key=lambda m: (m.created_at, m.id))
        merged_text = _checked_text(self._merger.merge(topic_name, [m.content for m in sources]))
        return {
            "topic": topic_name,
            "source_ids": [m.id for m in sources],
            "sources": [
                {
                    "id": m.id,
                    "summary": summarize(m.content),
                    "topic": m.topic,
                    "branch_state": m.branch_state.value,
                }
                for m in sources
            ],
            "merged_content": merged_text,
            "merge_method": self._merger.method,
        }

    def _wip_queue(self, access: Access, topic: str, space: str) -> list[Memory]:
        """The topic's drafts, oldest first, as many as one consolidation takes."""
        if BranchState.WIP not in access.readable_states:
            raise Forbidden("this endpoint may not read memories in state 'wip'")
        return self._store.list_page(
            MemoryFilter(states=(BranchState.WIP,), topic=topic, space=space),
            limits.MAX_CONSOLIDATE_SOURCES,
            None,
            oldest_first=True,
        )

    def _latest_consolidation(
        self, access: Access, topic: str, space: str
    ) -> dict[str, Any] | None:
        """The topic's most recent merge, if every one of its sources is still folded into it."""
        if BranchState.ACTIVE not in access.readable_states:
            return None
        recent = self._store.list_page(
            MemoryFilter(
                states=(BranchState.ACTIVE,),
                topic=topic,
                origin=Origin.AGENT_INFERRED,
                space=space,
            ),
            _RECENT_MERGES_SCANNED,
            None,
        )
        merged = next((m for m in recent if m.merge_method and m.provenance.derived_from), None)
        if merged is None:
            return None
        source_ids = merged.provenance.derived_from

        def check(txn: StoreTransaction) -> dict[str, Any] | None:
            sources = [txn.get(source_id) for source_id in source_ids]
            present = [m for m in sources if m is not None]
            kept = {m.id for m in present if access.contested(m)}
            return self._completed_in(txn, present, kept) if len(present) == len(sources) else None

        return self._store.transaction(check, space=space)

    def _completed_consolidation(
        self, sources: list[Memory], kept: AbstractSet[str], space: str
    ) -> dict[str, Any] | None:
        if kept and len(kept) == len(sources) and len(sources) >= 2:
            # Nothing of the caller's to retire, so nothing marks an earlier merge: look
            # for a record derived from exactly these sources.
            return self._merge_of(sources, kept, space)
        if not _folded_into_one(sources, kept):
            return None  # nothing to look up: skip the transaction and its round trips
        return self._store.transaction(
            lambda txn: self._completed_in(txn, sources, kept), space=space
        )

    def _merge_of(
        self, sources: list[Memory], kept: AbstractSet[str], space: str
    ) -> dict[str, Any] | None:
        ids = {m.id for m in sources}
        for candidate in self._store.derived_from_any(sorted(ids), space=space):
            if (
                candidate.branch_state is BranchState.ACTIVE
                and set(candidate.provenance.derived_from) == ids
            ):
                return _consolidation_result(
                    candidate, list(candidate.provenance.derived_from), kept
                )
        return None

    @staticmethod
    def _completed_in(
        txn: StoreTransaction, sources: list[Memory], kept: AbstractSet[str]
    ) -> dict[str, Any] | None:
        """The earlier result when every source the caller may retire was already folded
        into one merged record derived from all of them (``kept``: the others')."""
        if not _folded_into_one(sources, kept):
            return None
        merged_id = next(m.superseded_by for m in sources if m.id not in kept)
        assert merged_id is not None
        merged = txn.get(merged_id)
        ids = [m.id for m in sorted(sources, key=lambda m: (m.created_at, m.id))]
        if merged is None or set(merged.provenance.derived_from) != set(ids):
            return None
        return _consolidation_result(merged, list(merged.provenance.derived_from), kept)


def _folded_into_one(sources: Sequence[Memory], kept: AbstractSet[str] = frozenset()) -> bool:
    """Whether at least two sources are there and every one the caller may retire (not
    in ``kept``) is deprecated and superseded by one record."""
    retired = [m for m in sources if m.id not in kept]
    if len(sources) < 2 or not retired:
        return False
    targets = {m.superseded_by for m in retired}
    return (
        len(targets) == 1
        and None not in targets
        and all(m.branch_state is BranchState.DEPRECATED for m in retired)
    )


def _checked_ids(source_ids: Sequence[str] | None) -> list[str]:
    ids = [limits.check_id(v, f"source_ids[{i}]") for i, v in enumerate(source_ids or ())]
    if len(set(ids)) != len(ids):
        raise InvalidArgument("source_ids must be unique")
    if len(ids) > limits.MAX_CONSOLIDATE_SOURCES:
        raise InvalidArgument(
            f"source_ids has {len(ids)} ids; the limit is {limits.MAX_CONSOLIDATE_SOURCES}"
        )
    return ids


def _require_sources(sources: list[Memory], ids: list[str], topic: str) -> None:
    # As the original: named sources merge whatever their topic (the merged record
    # takes the call's topic); only sources already retired are refused.
    for source in sources:
        _require_mergeable(source)
    if len(sources) < 2:
        where = "source_ids" if ids else f"the wip queue of topic {topic!r}"
        raise FailedPrecondition(
            f"consolidation needs at least two sources; {where} has {len(sources)}"
        )


def _owner_text(text: str | None) -> str | None:
    if text is None:
        return None
    text = limits.check_content(text, "merged_content").strip()
    if not text:
        raise InvalidArgument(
            "merged_content is empty; write the merged memory, or keep the preview's"
        )
    return text


def _checked_text(text: str) -> str:
    """A merged text as stored: stripped, not empty, within the content limit."""
    text = text.strip()
    if not text:
        raise FailedPrecondition("the merge produced no text; the sources were left as they are")
    if len(text) > limits.MAX_CONTENT_CHARS:
        raise FailedPrecondition(
            f"the merged memory would be {len(text)} characters, over the "
            f"{limits.MAX_CONTENT_CHARS} limit; consolidate fewer sources at a time"
        )
    return text


def _require_mergeable(memory: Memory) -> None:
    if memory.branch_state not in (BranchState.WIP, BranchState.ACTIVE):
        detail = f" (superseded by {memory.superseded_by!r})" if memory.superseded_by else ""
        raise Conflict(
            f"source {memory.id!r} is {memory.branch_state.value}{detail}; "
            "only wip or active memories can be consolidated"
        )


def _consolidation_result(
    merged: Memory,
    source_ids: list[str],
    kept: AbstractSet[str] = frozenset(),
) -> dict[str, Any]:
    result: dict[str, Any] = {
        "item": {
            "merged_id": merged.id,
            "merged_content": merged.content,
            "topic": merged.topic,
            "branch_state": merged.branch_state.value,
        },
        "deprecated_ids": [i for i in source_ids if i not in kept],
        "source_count": len(source_ids),
    }
    if kept:
        contested_ids = [i for i in source_ids if i in kept]
        result["contested_ids"] = contested_ids
        result["message"] = (
            f"{len(contested_ids)} of the merged memories were written by someone else, so "
            "they stay as they were (the merged memory derives from them); their authors "
            "or the owner can retire them"
        )
    return result
