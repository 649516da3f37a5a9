"""Saving a memory: validation, the write fingerprint, the image description, the vector."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from metacortex.domain import limits
from metacortex.domain.fingerprint import WriteIdentity
from metacortex.domain.images import ImagePayload, decode_image
from metacortex.domain.occurrence import Occurrence, Precision, TimeSource, parse_occurred
from metacortex.domain.records import (
    DEFAULT_TOPIC,
    Attribution,
    BranchState,
    Memory,
    Modality,
    Origin,
    Provenance,
    new_memory_id,
    utc_now,
)
from metacortex.domain.relations import RELATED_PER_RESULT, RelationType
from metacortex.errors import FailedPrecondition, Forbidden, InvalidArgument
from metacortex.providers.base import Embedder, ImageDescriber
from metacortex.spaces.model import Level
from metacortex.storage.base import MemoryStore
from metacortex.timeline.stated import stated_time
from metacortex.usecases.access import Access, parse_enum
from metacortex.usecases.relations import between, requested

if TYPE_CHECKING:
    from metacortex.storage.base import Vector
    from metacortex.timeline.reader import TimeReader
    from metacortex.usecases.extraction import FactExtraction


class Saving:
    """``save_context``: dedupe before any model call, then describe, embed and insert;
    then, where it is on, fact extraction (``usecases/extraction.py``)."""

    def __init__(
        self,
        store: MemoryStore,
        embedder: Embedder,
        describer: ImageDescriber | None,
        dedupe_window: timedelta,
        extraction: FactExtraction | None = None,
        times: TimeReader | None = None,
    ) -> None:
        self._store = store
        self._embedder = embedder
        self._describer = describer
        self._dedupe_window = dedupe_window
        self._extraction = extraction
        self._times = times

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
        space: str | None = None,
        relations: Sequence[Mapping[str, Any]] | None = None,
        occurred_at: str | datetime | None = None,
    ) -> dict[str, Any]:
        space_key = access.space(space, Level.WRITE)
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
        given = parse_occurred(occurred_at) if occurred_at is not None else None
        provenance = self._provenance(origin, source_session, derived_from, confidence)
        refs = limits.check_artifact_refs(list(artifact_refs or ()))
        topic_name = limits.check_topic(topic if topic is not None else DEFAULT_TOPIC)
        # Checked before anything is saved: each a memory the caller reads in this space.
        linked = requested(self._store, access, space_key, relations)

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
            space=space_key,
            occurred_at=given.to_wire() if given is not None else None,
        )
        fingerprint = identity.fingerprint()
        now = utc_now()
        not_before = now - self._dedupe_window
        # Dedupe before any model call: a retried write costs nothing.
        existing = self._store.find_duplicate(fingerprint, not_before)
        if existing is not None and existing.branch_state is state:
            item = existing.to_item(access.names) | {
                "related": self._relate(existing, linked, access)
            }
            return self._extracted(access, {"item": item, "write_status": "duplicate"}, None, None)

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
            space=space_key,
            created_by=Attribution(access.person, access.principal),
            occurred=given or self._occurred(text, now),
        )
        [vector] = self._embedder.embed_documents([retrieval_text])
        outcome = self._store.insert(memory, vector, fingerprint, not_before)
        related = self._relate(outcome.memory, linked, access)
        result = {
            "item": outcome.memory.to_item(access.names) | {"related": related},
            "write_status": "created" if outcome.created else "duplicate",
        }
        return self._extracted(access, result, outcome.memory if outcome.created else None, vector)

    def _occurred(self, text: str, now: datetime) -> Occurrence:
        """When a memory given no time happened: the time its text states (read against
        ``now``, ``timeline/stated.py``), else ``now``."""
        if self._times is not None and text.strip():
            found = stated_time(self._times, text, now)
            if found is not None:
                return found
        return Occurrence(now, Precision.INSTANT, TimeSource.SAVED)

    def _extracted(
        self,
        access: Access,
        result: dict[str, Any],
        created: Memory | None,
        vector: Vector | None,
    ) -> dict[str, Any]:
        """``result``, plus what extraction added when it is on (``created``: the memory
        this call wrote, None when it wrote nothing new)."""
        if self._extraction is None:
            return result
        return self._extraction.extend(access, result, created, vector)

    def _relate(
        self, memory: Memory, linked: list[tuple[Memory, RelationType, str]], access: Access
    ) -> list[dict[str, Any]]:
        """The caller's relations from the saved memory (again, for a duplicate: one
        relation per source, type and target, so a retry adds nothing), as the saved
        item's ``related`` shows them (no read: they are what this call asserted)."""
        if not linked:
            return []
        by = Attribution(access.person, access.principal)
        relations = [between(memory, target, type_, by, note) for target, type_, note in linked]
        self._store.relate(relations)
        return [relation.seen_from(memory.id) for relation in relations[:RELATED_PER_RESULT]]

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
        if origin == Origin.DOCUMENT.value:
            raise InvalidArgument(
                "origin 'document' belongs to the passages create_document cuts from a "
                "document; save a memory as user_asserted or agent_inferred"
            )
        return Provenance(
            origin=parse_enum(Origin, origin, "origin"),
            source_session=limits.check_source_session(source_session),
            derived_from=tuple(dict.fromkeys(derived)),
            confidence=limits.check_confidence(confidence),
        )
