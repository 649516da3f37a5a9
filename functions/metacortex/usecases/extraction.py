"""Fact extraction on ``save_context``, where a generation model is configured.

The text is saved whole first, exactly as without extraction (the saved item is what
the caller wrote). Then one model call splits it into atomic facts and relates each to
at most one of ``CANDIDATES`` similar memories of the same space (found with the
vector the save already computed: one vector search per save):

- a text of one fact stays one memory; its relation starts at the saved memory;
- a text of several facts also gets one memory per fact (``agent_inferred``, derived
  from the saved memory, linked to it by ``derived_from``), all embedded in one call;
- a relation to an id outside the candidates (hallucinated, another space's) is
  dropped, the fact kept; an answer that is not the JSON asked for is dropped whole;
- an ``updates`` of another person's memory follows the spaces' contested rule: the
  relation is recorded, the memory stays active, its id is in ``contested_ids``.
  Extraction never retires a memory, the caller's own included: a model's reading is
  a proposal (``deprecate_context`` retires), and a credential that may only save
  must not retire anything through it.

Extraction failing (the model unreachable, its answer unusable) or off leaves the text
saved whole with no relations, as before. Every save with extraction on reports
``extraction``: its status, why when it did not run, and what it cost (model calls,
prompt and output tokens), which the tool's event records.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Final

from metacortex.access.rules import Access
from metacortex.domain.fingerprint import WriteIdentity, normalize_content
from metacortex.domain.records import (
    Attribution,
    BranchState,
    Memory,
    Modality,
    Origin,
    Provenance,
    new_memory_id,
    utc_now,
)
from metacortex.domain.relations import (
    CALLER_TYPES,
    MAX_NOTE_CHARS,
    RELATED_PER_RESULT,
    Relation,
    RelationType,
)
from metacortex.domain.text import summarize
from metacortex.errors import Unavailable
from metacortex.providers.base import (
    Candidate,
    Embedder,
    ExtractedFact,
    Extractor,
    ExtractorAnswer,
    ModelUsage,
)
from metacortex.storage.base import MemoryFilter, MemoryStore
from metacortex.usecases.relations import between

if TYPE_CHECKING:
    from metacortex.storage.base import Vector

# Similar memories each saved text is compared with (the model sees their summaries).
CANDIDATES: Final = 5
FACT_NOTE: Final = "a fact extracted from it"


class FactExtraction:
    """What extraction adds to a save's result (``Saving`` calls ``extend``)."""

    def __init__(
        self,
        store: MemoryStore,
        embedder: Embedder,
        extractor: Extractor,
        dedupe_window: timedelta,
    ) -> None:
        self._store = store
        self._embedder = embedder
        self._extractor = extractor
        self._window = dedupe_window

    def extend(
        self,
        access: Access,
        result: dict[str, Any],
        created: Memory | None,
        vector: Vector | None,
    ) -> dict[str, Any]:
        """``result`` of a save, with ``extraction`` (and, when it ran, ``facts`` and
        ``relations``). ``created``: the memory the save wrote, None for a duplicate."""
        if created is None:
            return result | self._report("skipped", reason="nothing new was saved (a duplicate)")
        if created.branch_state is not BranchState.ACTIVE:
            return result | self._report(
                "skipped", reason="drafts are not split: consolidation merges them"
            )
        if created.modality is Modality.IMAGE or vector is None:
            return result | self._report("skipped", reason="no text to split")
        candidates = self._candidates(access, created, vector)
        shown = [Candidate(memory.id, summarize(memory.content)) for memory in candidates]
        try:
            answer = self._extractor.extract(created.content, shown)
        except Unavailable as failure:
            return result | self._report("failed", ModelUsage(calls=1), reason=failure.message)
        if answer.unusable is not None:
            return result | self._report("failed", answer.usage, reason=answer.unusable)
        try:
            return self._apply(access, result, created, candidates, answer)
        except Unavailable as failure:  # embedding the facts failed: nothing was added
            return result | self._report("failed", answer.usage, reason=failure.message)

    def _candidates(self, access: Access, created: Memory, vector: Vector) -> list[Memory]:
        """Up to ``CANDIDATES`` active memories of the saved one's space, most similar
        first (one vector search, with the vector the save computed)."""
        if BranchState.ACTIVE not in access.readable_states:
            return []
        where = MemoryFilter(states=(BranchState.ACTIVE,), space=created.space)
        hits = self._store.vector_search(vector, where, CANDIDATES + 1)
        return [hit.memory for hit in hits if hit.memory.id != created.id][:CANDIDATES]

    def _apply(
        self,
        access: Access,
        result: dict[str, Any],
        created: Memory,
        candidates: Sequence[Memory],
        answer: ExtractorAnswer,
    ) -> dict[str, Any]:
        by_id = {memory.id: memory for memory in candidates}
        whole = normalize_content(created.content)
        alone = len(answer.facts) <= 1
        separate = list(
            dict.fromkeys(
                fact.text
                for fact in answer.facts
                if not alone and normalize_content(fact.text) != whole
            )
        )
        saved = dict(zip(separate, self._save_facts(created, separate), strict=True))
        by = Attribution(access.person, access.principal)
        derived = [
            between(fact, created, RelationType.DERIVED_FROM, by, FACT_NOTE)
            for fact in saved.values()
        ]
        proposed: list[Relation] = []
        dropped = 0
        contested_ids: list[str] = []
        for fact in answer.facts:
            source = saved.get(fact.text, created)
            relation = _checked(fact, by_id)
            if relation is None:
                dropped += fact.relation is not None
                continue
            target, type_, note = relation
            proposed.append(between(source, target, type_, by, note))
            if type_ is RelationType.UPDATES and access.contested(target):
                contested_ids.append(target.id)
        if derived or proposed:
            self._store.relate([*derived, *proposed])
        item = result["item"]
        touching = [r.seen_from(created.id) for r in [*proposed, *derived] if r.touches(created.id)]
        related = [*(item.get("related") or []), *touching][:RELATED_PER_RESULT]
        extended = {
            **result,
            "item": item | {"related": related},
            "facts": [{"id": m.id, "content": m.content} for m in saved.values()],
            "relations": [_shown(relation) for relation in proposed],
        }
        extended |= self._report(
            "ran",
            answer.usage,
            facts=len(answer.facts),
            saved_facts=len(derived),
            relations=len(proposed),
            dropped_relations=dropped,
        )
        if contested_ids:
            unique = list(dict.fromkeys(contested_ids))
            extended["contested_ids"] = unique
            extended["message"] = (
                f"this text updates {', '.join(repr(i) for i in unique)}, written by someone "
                "else: the relation is recorded and the memory stays active; its author or "
                "the owner can retire it"
            )
        return extended

    def _save_facts(self, created: Memory, texts: list[str]) -> list[Memory]:
        """One memory per fact, embedded in one call (a fact saved again within the
        dedupe window, e.g. by a retried save, is the earlier record)."""
        if not texts:
            return []
        vectors = self._embedder.embed_documents(texts)
        now = utc_now()
        memories: list[Memory] = []
        for text, vector in zip(texts, vectors, strict=True):
            memory = _fact_memory(created, text, now)
            identity = WriteIdentity(
                content=text,
                topic=memory.topic,
                branch_state=memory.branch_state,
                image_sha256=None,
                artifact_refs=(),
                valid_from=memory.valid_from,
                valid_until=memory.valid_until,
                provenance=memory.provenance,
                space=memory.space,
            )
            outcome = self._store.insert(memory, vector, identity.fingerprint(), now - self._window)
            memories.append(outcome.memory)
        return memories

    def _report(
        self,
        status: str,
        usage: ModelUsage | None = None,
        *,
        reason: str | None = None,
        **counts: int,
    ) -> dict[str, Any]:
        spent = usage or ModelUsage()
        report: dict[str, Any] = {
            "status": status,
            "model": self._extractor.method,
            "model_calls": spent.calls,
            "prompt_tokens": spent.prompt_tokens,
            "output_tokens": spent.output_tokens,
            **counts,
        }
        if reason is not None:
            report["reason"] = reason
        return {"extraction": report}


def _checked(
    fact: ExtractedFact, candidates: dict[str, Memory]
) -> tuple[Memory, RelationType, str] | None:
    """The fact's relation when it names one of the candidates with a caller's type;
    None otherwise (no relation, or one to drop)."""
    proposed = fact.relation
    if proposed is None or proposed.id not in candidates:
        return None
    try:
        type_ = RelationType(proposed.type)
    except ValueError:
        return None
    if type_ not in CALLER_TYPES:
        return None
    return candidates[proposed.id], type_, proposed.note[:MAX_NOTE_CHARS]


def _fact_memory(whole: Memory, text: str, now: datetime) -> Memory:
    return Memory(
        id=new_memory_id(),
        content=text,
        retrieval_text=text,
        topic=whole.topic,
        branch_state=BranchState.ACTIVE,
        modality=Modality.TEXT,
        created_at=now,
        updated_at=now,
        valid_from=whole.valid_from,
        valid_until=whole.valid_until,
        provenance=Provenance(
            origin=Origin.AGENT_INFERRED,
            source_session=whole.provenance.source_session,
            derived_from=(whole.id,),
        ),
        space=whole.space,
        created_by=whole.created_by,
        occurred=whole.occurred,  # a fact happened when the text it comes from did
    )


def _shown(relation: Relation) -> dict[str, str]:
    return {
        "source": relation.source,
        "target": relation.target,
        "type": relation.type.value,
        "note": relation.note,
    }
