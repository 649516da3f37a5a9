"""The six memory use cases, independent of MCP and HTTP.

Every rule of the spec's §1–2 lives here or in ``domain``; stores provide
atomicity and filtering, providers the models, the server only translation.
Methods are synchronous (stores and models are); the async edge runs them in
worker threads.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from metacortex.domain import limits
from metacortex.domain.fingerprint import WriteIdentity
from metacortex.domain.images import ImagePayload, decode_image
from metacortex.domain.records import (
    DEFAULT_TOPIC,
    BranchState,
    Initiator,
    Memory,
    Modality,
    Origin,
    Provenance,
    SupersessionReason,
    new_memory_id,
    utc_now,
)
from metacortex.domain.text import summarize
from metacortex.errors import (
    Conflict,
    FailedPrecondition,
    Forbidden,
    InvalidArgument,
    NotFound,
)
from metacortex.providers.base import Embedder, ImageDescriber, Merger
from metacortex.retrieval.context import with_context
from metacortex.retrieval.fusion import fuse, keyword_weights
from metacortex.retrieval.text import query_terms
from metacortex.storage.base import MemoryFilter, MemoryStore, StoreTransaction
from metacortex.usecases.access import Access, all_visible, parse_enum, visible
from metacortex.usecases.cursors import decode_cursor, encode_cursor
from metacortex.usecases.filters import applied_filters, read_states, reported
from metacortex.usecases.options import ServiceOptions

__all__ = ["Access", "MemoryService", "ServiceOptions"]

# How many candidates each retriever contributes before fusion.
CANDIDATE_POOL = 100
_MAX_CHAIN_HOPS = 1_000
# How many of a topic's newest agent-inferred active records are scanned for its last merge.
_RECENT_MERGES_SCANNED = 20


def _match(memory: Memory, score: float, similarity: float | None) -> dict[str, Any]:
    return {
        "id": memory.id,
        "summary": summarize(memory.content),
        "score": round(score, 6),
        "similarity": None if similarity is None else round(similarity, 6),
        "metadata": memory.metadata(),
    }


class MemoryService:
    def __init__(
        self,
        store: MemoryStore,
        embedder: Embedder,
        *,
        merger: Merger,
        describer: ImageDescriber | None = None,
        options: ServiceOptions | None = None,
    ) -> None:
        self._store = store
        self._embedder = embedder
        self._merger = merger
        self._describer = describer
        self._options = options or ServiceOptions()
        store.bind_embedding(embedder.identity)

    @property
    def store(self) -> MemoryStore:
        return self._store

    @property
    def embedding_key(self) -> str:
        """``model:dimension`` of the embedder (what a portable backup names as its source)."""
        return self._embedder.identity.key()

    # ------------------------------------------------------------------ save
    def save(
        self,
        access: Access,
        *,
        content: str | None = None,
        topic: str | None = None,
        draft: bool | None = None,
        branch_state: str | None = None,
        valid_from: str | datetime | None = None,
        valid_until: str | datetime | None = None,
        origin: str | None = None,
        source_session: str | None = None,
        derived_from: Sequence[str] | None = None,
        confidence: float | None = None,
        image_base64: str | None = None,
        image_mime_type: str | None = None,
        artifact_refs: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        text = limits.check_content(content or "")
        has_text = bool(text.strip())
        if not has_text and not image_base64:
            raise InvalidArgument("content or image_base64 is required")
        if image_mime_type and not image_base64:
            raise InvalidArgument("image_mime_type was given without image_base64")
        image: ImagePayload | None = (
            decode_image(image_base64, image_mime_type) if image_base64 else None
        )
        state = self._write_state(access, draft, branch_state)
        from_at = limits.parse_instant(valid_from, "valid_from")
        until_at = limits.parse_instant(valid_until, "valid_until")
        limits.check_validity(from_at, until_at)
        provenance = self._provenance(origin, source_session, derived_from, confidence)
        refs = limits.check_artifact_refs(list(artifact_refs or ()))
        topic_name = limits.check_topic(topic if topic is not None else DEFAULT_TOPIC)

        identity = WriteIdentity(
            content=text,
            topic=topic_name,
            branch_state=state,
            image_sha256=image.sha256 if image else None,
            artifact_refs=refs,
            valid_from=from_at,
            valid_until=until_at,
            provenance=provenance,
            writer_scope=None if state in access.readable_states else access.principal,
        )
        fingerprint = identity.fingerprint()
        now = utc_now()
        not_before = now - self._options.dedupe_window
        # Dedupe before any model call: a retried write costs nothing.
        existing = self._store.find_duplicate(fingerprint, not_before)
        if existing is not None and existing.branch_state is state:
            return {"item": existing.to_item(), "write_status": "duplicate"}

        retrieval_text = text.strip()
        if image is not None:
            if self._describer is None:
                raise FailedPrecondition(
                    "image writes need an image-description model, and none is configured: "
                    "set METACORTEX_USE_GEMINI_GENERATION=true and GEMINI_API_KEY "
                    "(or run on Google Cloud), or save the image's description as content"
                )
            description = self._describer.describe(image.data, image.mime_type).strip()
            retrieval_text = (
                f"{retrieval_text}\n\n[Image] {description}" if has_text else description
            )
        modality = (
            Modality.TEXT if image is None else (Modality.MIXED if has_text else Modality.IMAGE)
        )
        memory = Memory(
            id=new_memory_id(),
            content=text.strip() if has_text else retrieval_text,
            retrieval_text=retrieval_text,
            topic=topic_name,
            branch_state=state,
            modality=modality,
            created_at=now,
            updated_at=now,
            artifact_refs=refs,
            valid_from=from_at,
            valid_until=until_at,
            provenance=provenance,
        )
        [vector] = self._embedder.embed_documents([retrieval_text])
        outcome = self._store.insert(memory, vector, fingerprint, not_before)
        return {
            "item": outcome.memory.to_item(),
            "write_status": "created" if outcome.created else "duplicate",
        }

    def _write_state(
        self, access: Access, draft: bool | None, branch_state: str | None
    ) -> BranchState:
        if draft is not None and branch_state is not None:
            raise InvalidArgument("give either draft or branch_state, not both")
        if branch_state is not None:
            state = parse_enum(BranchState, branch_state, "branch_state")
            assert state is not None
            if not access.may_write_lifecycle:
                raise Forbidden(
                    "this endpoint may not set branch_state; use draft=true for a work-in-progress "
                    "memory or omit it for an active one"
                )
            return state
        return BranchState.WIP if draft else BranchState.ACTIVE

    @staticmethod
    def _provenance(
        origin: str | None,
        source_session: str | None,
        derived_from: Sequence[str] | None,
        confidence: float | None,
    ) -> Provenance:
        derived = list(derived_from or ())
        if len(derived) > limits.MAX_DERIVED_FROM:
            raise InvalidArgument(
                f"derived_from has {len(derived)} ids; the limit is {limits.MAX_DERIVED_FROM}"
            )
        for index, value in enumerate(derived):
            limits.check_id(value, f"derived_from[{index}]")
        return Provenance(
            origin=parse_enum(Origin, origin, "origin"),
            source_session=limits.check_source_session(source_session),
            derived_from=tuple(dict.fromkeys(derived)),
            confidence=limits.check_confidence(confidence),
        )

    # ---------------------------------------------------------------- search
    def search(
        self,
        access: Access,
        *,
        query: str,
        filter_topic: str | None = None,
        filter_state: str | Sequence[str] | None = None,
        limit: int | None = None,
        valid_at: str | datetime | None = None,
        filter_origin: str | None = None,
        explain: bool = False,
    ) -> dict[str, Any]:
        """Hybrid search. ``explain`` adds each match's ``breakdown``: the parts of its
        score from semantic similarity, keywords and conversational context (the owner's
        console shows them; the ranking is the same either way)."""
        query = limits.check_query(query)
        count = limits.check_limit(
            limit if limit is not None else self._options.search_result_limit,
            limits.MAX_SEARCH_LIMIT,
        )
        where = MemoryFilter(
            states=read_states(access, filter_state),
            topic=limits.check_topic(filter_topic, "filter_topic") if filter_topic else None,
            origin=parse_enum(Origin, filter_origin, "filter_origin"),
            valid_at=limits.parse_instant(valid_at, "valid_at"),
        )
        vector = self._embedder.embed_query(query)
        pool = max(CANDIDATE_POOL, count)
        terms = query_terms(query)
        dense, lexical = self._store.hybrid_search(vector, terms, where, pool)
        fused = fuse(dense, lexical, self._options.dense_weight)
        if self._options.conversational_context:
            fused = with_context(self._store, fused, where, keyword_weights(terms, lexical))
        ranked = fused[:count]
        # The raw cosine similarity, for clients that thresholded the original's score.
        cosine = {hit.memory.id: hit.score for hit in dense}
        matches = [_match(r.memory, r.score, cosine.get(r.memory.id)) for r in ranked]
        if explain:
            for match, r in zip(matches, ranked, strict=True):
                match["breakdown"] = {
                    "semantic": round(r.semantic, 6),
                    "keyword": round(r.keyword, 6),
                    "context": round(r.context, 6),
                }
        return {
            "matches": matches,
            "applied_filters": reported(applied_filters(where), where, count),
        }

    # ----------------------------------------------------------------- fetch
    def fetch(
        self, access: Access, *, id: str | None = None, document_id: str | None = None
    ) -> dict[str, Any]:
        if id is not None and document_id is not None and id != document_id:
            raise InvalidArgument("id and document_id name different memories; give one")
        memory_id = id if id is not None else document_id
        if memory_id is None:
            raise InvalidArgument("id is required")
        memory = visible(self._store, access, limits.check_id(memory_id))
        return {"item": memory.to_item()}

    def memory(self, access: Access, memory_id: str) -> Memory:
        """The whole record (with its retrieval text), as ``fetch`` would find it."""
        return visible(self._store, access, limits.check_id(memory_id))

    # ------------------------------------------------------------------ list
    def list_memories(
        self,
        access: Access,
        *,
        filter_topic: str | None = None,
        filter_state: str | Sequence[str] | None = None,
        filter_origin: str | None = None,
        created_after: str | datetime | None = None,
        created_before: str | datetime | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        valid_at: str | datetime | None = None,
    ) -> dict[str, Any]:
        count = limits.check_limit(
            limit if limit is not None else limits.DEFAULT_LIST_LIMIT, limits.MAX_LIST_LIMIT
        )
        where = MemoryFilter(
            states=read_states(access, filter_state),
            topic=limits.check_topic(filter_topic, "filter_topic") if filter_topic else None,
            origin=parse_enum(Origin, filter_origin, "filter_origin"),
            created_after=limits.parse_instant(created_after, "created_after"),
            created_before=limits.parse_instant(created_before, "created_before"),
            valid_at=limits.parse_instant(valid_at, "valid_at"),
        )
        if (
            where.created_after is not None
            and where.created_before is not None
            and where.created_after >= where.created_before
        ):
            raise InvalidArgument("created_after must be earlier than created_before")
        applied = applied_filters(where)
        after = decode_cursor(cursor, applied) if cursor else None
        page = self._store.list_page(where, count + 1, after)
        more = len(page) > count
        page = page[:count]
        next_cursor = encode_cursor(page[-1], applied) if more and page else None
        return {
            "items": [
                {"id": m.id, "summary": summarize(m.content), "metadata": m.metadata()}
                for m in page
            ],
            "next_cursor": next_cursor,
            "applied_filters": reported(applied, where, count),
        }

    # ------------------------------------------------------------- deprecate
    def deprecate(
        self,
        access: Access,
        *,
        id: str,
        superseding_id: str | None = None,
        supersession_reason: str | None = None,
        initiator: str | None = None,
    ) -> dict[str, Any]:
        target_id = limits.check_id(id)
        replacement_id = (
            limits.check_id(superseding_id, "superseding_id") if superseding_id else None
        )
        reason = parse_enum(SupersessionReason, supersession_reason, "supersession_reason")
        reason = reason or SupersessionReason.CHANGED
        who = parse_enum(Initiator, initiator, "initiator")
        if replacement_id == target_id:
            raise InvalidArgument("a memory cannot supersede itself")

        def apply(txn: StoreTransaction) -> dict[str, Any]:
            # Both records in one read; the chain beyond the replacement only when it has one.
            target, replacement = txn.get_many([target_id, replacement_id or target_id])
            if target is None or target.branch_state not in access.readable_states:
                raise NotFound(f"no memory with id {target_id!r}")
            if replacement_id is not None:
                if replacement is None or replacement.branch_state not in access.readable_states:
                    raise NotFound(f"superseding memory {replacement_id!r} does not exist")
                _refuse_cycle(txn, target_id, replacement)
            if target.branch_state is BranchState.DEPRECATED:
                if (target.superseded_by, target.supersession_reason) == (replacement_id, reason):
                    return _deprecation_result(target, BranchState.DEPRECATED)
                raise Conflict(
                    f"memory {target_id!r} is already deprecated "
                    f"(superseded_by={target.superseded_by!r}, reason="
                    f"{target.supersession_reason.value if target.supersession_reason else None!r})"
                    "; deprecating it differently is not allowed"
                )
            now = utc_now()
            valid_until = target.valid_until
            if reason is SupersessionReason.CHANGED and (valid_until is None or valid_until > now):
                valid_until = now
                if target.valid_from is not None and target.valid_from > now:
                    valid_until = target.valid_from
            updated = target.with_changes(
                branch_state=BranchState.DEPRECATED,
                superseded_by=replacement_id,
                supersession_reason=reason,
                initiator=who or target.initiator,
                valid_until=valid_until,
                updated_at=now,
            )
            txn.put(updated)
            return _deprecation_result(updated, target.branch_state)

        return self._store.transaction(apply)

    # ------------------------------------------------------- promote, correct
    def promote(self, access: Access, *, id: str) -> dict[str, Any]:
        """A draft (``wip``) becomes ``active``; promoting an active record changes nothing."""
        target_id = limits.check_id(id)
        if not access.may_write_lifecycle:
            raise Forbidden("this endpoint may not change a memory's branch_state")

        def apply(txn: StoreTransaction) -> dict[str, Any]:
            target = txn.get(target_id)
            if target is None or target.branch_state not in access.readable_states:
                raise NotFound(f"no memory with id {target_id!r}")
            previous = target.branch_state
            if previous is BranchState.WIP:
                target = target.with_changes(branch_state=BranchState.ACTIVE, updated_at=utc_now())
                txn.put(target)
            elif previous is not BranchState.ACTIVE:
                raise FailedPrecondition(
                    f"memory {target_id!r} is {previous.value!r}; only a draft (wip) is promoted"
                )
            return {
                "item": {"id": target.id, "branch_state": target.branch_state.value},
                "previous_state": previous.value,
            }

        return self._store.transaction(apply)

    def correct(
        self,
        access: Access,
        *,
        id: str,
        corrected_content: str,
        topic: str | None = None,
        valid_from: str | datetime | None = None,
        valid_until: str | datetime | None = None,
    ) -> dict[str, Any]:
        """The ``correct_memory`` flow: save the right memory (user-asserted), then deprecate
        the wrong one with reason ``corrected`` and the new one as its replacement."""
        wrong = visible(self._store, access, limits.check_id(id))
        if wrong.branch_state is BranchState.DEPRECATED:
            raise Conflict(f"memory {wrong.id!r} is already deprecated; correct its replacement")
        if not corrected_content.strip():
            raise InvalidArgument("corrected_content is required")
        saved = self.save(
            access,
            content=corrected_content,
            topic=topic or wrong.topic,
            valid_from=valid_from,
            valid_until=valid_until,
            origin=Origin.USER_ASSERTED.value,
        )
        new_id = str(saved["item"]["id"])
        deprecated = self.deprecate(
            access,
            id=wrong.id,
            superseding_id=new_id,
            supersession_reason=SupersessionReason.CORRECTED.value,
            initiator=Initiator.USER.value,
        )
        return {
            "item": saved["item"],
            "write_status": saved["write_status"],
            "deprecated": deprecated,
        }

    # ----------------------------------------------------------- consolidate
    def consolidate(
        self,
        access: Access,
        *,
        topic: str | None = None,
        source_ids: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        topic_name = limits.check_topic(topic if topic is not None else DEFAULT_TOPIC)
        ids = [limits.check_id(v, f"source_ids[{i}]") for i, v in enumerate(source_ids or ())]
        if len(set(ids)) != len(ids):
            raise InvalidArgument("source_ids must be unique")
        if len(ids) > limits.MAX_CONSOLIDATE_SOURCES:
            raise InvalidArgument(
                f"source_ids has {len(ids)} ids; the limit is {limits.MAX_CONSOLIDATE_SOURCES}"
            )
        if ids:
            sources = all_visible(self._store, access, ids)
        else:
            if BranchState.WIP not in access.readable_states:
                raise Forbidden("this endpoint may not read memories in state 'wip'")
            sources = self._store.list_page(
                MemoryFilter(states=(BranchState.WIP,), topic=topic_name),
                limits.MAX_CONSOLIDATE_SOURCES,
                None,
                oldest_first=True,
            )
        done = self._completed_consolidation(sources)
        if done is None and not ids and not sources:
            # The queue is empty: a re-run (or a concurrent twin) after the merge
            # committed. Answer with that merge, as an idempotent call should.
            done = self._latest_consolidation(access, topic_name)
        if done is not None:
            return done
        # As the original: named sources merge whatever their topic (the merged record
        # takes the call's topic); only sources already retired are refused.
        for source in sources:
            _require_mergeable(source)
        if len(sources) < 2:
            where = "source_ids" if ids else f"the wip queue of topic {topic_name!r}"
            raise FailedPrecondition(
                f"consolidation needs at least two sources; {where} has {len(sources)}"
            )
        sources.sort(key=lambda m: (m.created_at, m.id))
        merged_text = self._merger.merge(topic_name, [m.content for m in sources]).strip()
        if not merged_text:
            raise FailedPrecondition(
                "the merge produced no text; the sources were left as they are"
            )
        if len(merged_text) > limits.MAX_CONTENT_CHARS:
            raise FailedPrecondition(
                f"the merged memory would be {len(merged_text)} characters, over the "
                f"{limits.MAX_CONTENT_CHARS} limit; consolidate fewer sources at a time"
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
            initiator=Initiator.AGENT,
            provenance=Provenance(
                origin=Origin.AGENT_INFERRED,
                derived_from=tuple(m.id for m in sources),
            ),
            merge_method=self._merger.method,
        )
        source_ids_in_order = [m.id for m in sources]

        def apply(txn: StoreTransaction) -> dict[str, Any]:
            current = txn.get_many(source_ids_in_order)
            present = [m for m in current if m is not None]
            finished = self._completed_in(txn, present) if len(present) == len(current) else None
            if finished is not None:
                return finished  # a concurrent identical call won; keep its record
            for memory in current:
                if memory is None:
                    raise Conflict("a source memory disappeared during consolidation; retry")
                _require_mergeable(memory)
            txn.put(merged, vector)
            for memory in present:
                txn.put(
                    memory.with_changes(
                        branch_state=BranchState.DEPRECATED,
                        superseded_by=merged.id,
                        updated_at=now,
                    )
                )
            return _consolidation_result(merged, source_ids_in_order)

        return self._store.transaction(apply)

    def preview_consolidation(self, access: Access, *, topic: str) -> dict[str, Any]:
        """What ``consolidate(topic=...)`` would merge and into what text; nothing changes.

        Confirm by passing the previewed ``source_ids``, so exactly those are merged."""
        topic_name = limits.check_topic(topic)
        if BranchState.WIP not in access.readable_states:
            raise Forbidden("this endpoint may not read memories in state 'wip'")
        sources = self._store.list_page(
            MemoryFilter(states=(BranchState.WIP,), topic=topic_name),
            limits.MAX_CONSOLIDATE_SOURCES,
            None,
            oldest_first=True,
        )
        if len(sources) < 2:
            raise FailedPrecondition(
                "consolidation needs at least two sources; "
                f"the wip queue of topic {topic_name!r} has {len(sources)}"
            )
        for source in sources:
            _require_mergeable(source)
        merged_text = self._merger.merge(topic_name, [m.content for m in sources]).strip()
        return {
            "topic": topic_name,
            "source_ids": [m.id for m in sources],
            "sources": [{"id": m.id, "summary": summarize(m.content)} for m in sources],
            "merged_content": merged_text,
            "merge_method": self._merger.method,
        }

    def _latest_consolidation(self, access: Access, topic: str) -> dict[str, Any] | None:
        """The topic's most recent merge, if every one of its sources is still folded into it."""
        if BranchState.ACTIVE not in access.readable_states:
            return None
        recent = self._store.list_page(
            MemoryFilter(states=(BranchState.ACTIVE,), topic=topic, origin=Origin.AGENT_INFERRED),
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
            return self._completed_in(txn, present) if len(present) == len(sources) else None

        return self._store.transaction(check)

    def _completed_consolidation(self, sources: list[Memory]) -> dict[str, Any] | None:
        if not _folded_into_one(sources):
            return None  # nothing to look up: skip the transaction and its round trips
        return self._store.transaction(lambda txn: self._completed_in(txn, sources))

    @staticmethod
    def _completed_in(txn: StoreTransaction, sources: list[Memory]) -> dict[str, Any] | None:
        """The earlier result when every source was already folded into one merged record."""
        if not _folded_into_one(sources):
            return None
        merged_id = sources[0].superseded_by
        assert merged_id is not None
        merged = txn.get(merged_id)
        ids = [m.id for m in sorted(sources, key=lambda m: (m.created_at, m.id))]
        if merged is None or set(merged.provenance.derived_from) != set(ids):
            return None
        return _consolidation_result(merged, list(merged.provenance.derived_from))


def _folded_into_one(sources: Sequence[Memory]) -> bool:
    """Whether at least two sources are all deprecated and superseded by one record."""
    if len(sources) < 2:
        return False
    targets = {m.superseded_by for m in sources}
    return (
        len(targets) == 1
        and None not in targets
        and all(m.branch_state is BranchState.DEPRECATED for m in sources)
    )


def _require_mergeable(memory: Memory) -> None:
    if memory.branch_state not in (BranchState.WIP, BranchState.ACTIVE):
        detail = f" (superseded by {memory.superseded_by!r})" if memory.superseded_by else ""
        raise Conflict(
            f"source {memory.id!r} is {memory.branch_state.value}{detail}; "
            "only wip or active memories can be consolidated"
        )


def _refuse_cycle(txn: StoreTransaction, target_id: str, replacement: Memory) -> None:
    current: Memory | None = replacement
    hops = 0
    while current is not None and current.superseded_by is not None:
        if current.superseded_by == target_id:
            raise Conflict(
                f"superseding {target_id!r} with {replacement.id!r} would make a loop: "
                f"{replacement.id!r} is already superseded (directly or through a chain) "
                f"by {target_id!r}"
            )
        hops += 1
        if hops > _MAX_CHAIN_HOPS:
            raise Conflict("supersession chain is too long to check")
        current = txn.get(current.superseded_by)


def _deprecation_result(memory: Memory, previous: BranchState) -> dict[str, Any]:
    return {
        "item": {
            "id": memory.id,
            "branch_state": memory.branch_state.value,
            "superseded_by": memory.superseded_by,
            "supersession_reason": (
                memory.supersession_reason.value if memory.supersession_reason else None
            ),
        },
        "previous_state": previous.value,
    }


def _consolidation_result(merged: Memory, source_ids: list[str]) -> dict[str, Any]:
    return {
        "item": {
            "merged_id": merged.id,
            "merged_content": merged.content,
            "topic": merged.topic,
            "branch_state": merged.branch_state.value,
        },
        "deprecated_ids": source_ids,
        "source_count": len(source_ids),
    }
