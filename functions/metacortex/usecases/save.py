"""Saving a memory: validation, the write fingerprint, the image description, the vector."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from metacortex.access.model import Level
from metacortex.access.rules import Access, all_visible
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
from metacortex.domain.relations import RELATED_PER_RESULT, Relation, RelationType
from metacortex.errors import FailedPrecondition, Forbidden, InvalidArgument
from metacortex.providers.base import Embedder, ImageDescriber
from metacortex.storage.base import MemoryStore
from metacortex.timeline.stated import stated_time
from metacortex.usecases.arguments import parse_enum
from metacortex.usecases.relations import between, requested

if TYPE_CHECKING:
    from metacortex.storage.base import Vector
    from metacortex.timeline.reader import TimeReader


class AfterSave(Protocol):
    """A step that runs after each ``save_context``: fact extraction
    (``usecases/extraction.py``) where a generation model is configured."""

    def extend(
        self,
        access: Access,
        result: dict[str, Any],
        created: Memory | None,
        vector: Vector | None,
    ) -> dict[str, Any]:
        """``result`` of the save with what the step adds. ``created``: the memory the save
        wrote (None: it found a duplicate); ``vector``: that memory's embedding."""
        ...


@dataclass(frozen=True, slots=True)
class _Written:
    """What one save wrote: its result, the memory it created and that memory's vector
    (both None when it found a duplicate)."""

    result: dict[str, Any]
    created: Memory | None = None
    vector: Vector | None = None


class Saving:
    """``save_context``: dedupe before any model call, then describe, embed and insert;
    then the after-save step, where there is one."""

    def __init__(
        self,
        store: MemoryStore,
        embedder: Embedder,
        describer: ImageDescriber | None,
        dedupe_window: timedelta,
        after_save: AfterSave | None = None,
        times: TimeReader | None = None,
    ) -> None:
        self._store = store
        self._embedder = embedder
        self._describer = describer
        self._dedupe_window = dedupe_window
        self._after_save = after_save
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
        written = self._write(
            access,
            content=content,
            topic=topic,
            draft=draft,
            branch_state=branch_state,
            valid_from=valid_from,
            valid_until=valid_until,
            origin=origin,
            source_session=source_session,
            derived_from=derived_from,
            confidence=confidence,
            image_base64=image_base64,
            image_mime_type=image_mime_type,
            artifact_refs=artifact_refs,
            space=space,
            relations=relations,
            occurred_at=occurred_at,
        )
        if self._after_save is None:
            return written.result
        return self._after_save.extend(access, written.result, written.created, written.vector)

    def save_as_given(
        self,
        access: Access,
        *,
        content: str,
        topic: str,
        valid_from: str | datetime | None,
        valid_until: str | datetime | None,
        origin: str,
        space: str,
    ) -> dict[str, Any]:
        """A memory saved as given, without the after-save step: the lifecycle's own save
        (a correction's text is the owner's, never split into facts)."""
        return self._write(
            access,
            content=content,
            topic=topic,
            valid_from=valid_from,
            valid_until=valid_until,
            origin=origin,
            space=space,
        ).result

    def _write(
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
    ) -> _Written:
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
        # Checked before anything is saved: each a memory the caller reads in this space
        # (derived_from's ids too, refused as relations' are: "not granted" is "missing").
        linked = requested(self._store, access, space_key, relations)
        if provenance.derived_from:
            all_visible(self._store, access, provenance.derived_from, space_key)

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
            return _Written({"item": item, "write_status": "duplicate"})

        retrieval_text = text.strip()
        if image is not None:
            if self._describer is None:
                raise FailedPrecondition(
                    "image writes need OCR or an image-description model, and neither is "
                    'configured: install OCR (pip install "metacortex[ocr]"), or configure a '
                    "vision model (OPENAI_VISION_MODEL, or METACORTEX_USE_GEMINI_GENERATION=true "
                    "and GEMINI_API_KEY), or save the image's description as content"
                )
            description = self._describer.describe(image.data, image.mime_type).strip()
            if not description and not has_text:
                raise InvalidArgument(
                    "no text could be read in the image and no model describes images here: "
                    "give content that says what it shows"
                )
            if description:
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
        # The memory and the relations it asserts are written in one transaction.
        asserted = _relations(memory, linked, access)
        outcome = self._store.insert(memory, vector, fingerprint, not_before, asserted)
        if outcome.created:
            related = [r.seen_from(memory.id) for r in asserted[:RELATED_PER_RESULT]]
        else:  # the same save landed meanwhile: its relations again, as for any duplicate
            related = self._relate(outcome.memory, linked, access)
        result = {
            "item": outcome.memory.to_item(access.names) | {"related": related},
            "write_status": "created" if outcome.created else "duplicate",
        }
        if not outcome.created:
            return _Written(result)
        return _Written(result, outcome.memory, vector)

    def _occurred(self, text: str, now: datetime) -> Occurrence:
        """When a memory given no time happened: the time its text states (read against
        ``now``, ``timeline/stated.py``), else ``now``."""
        if self._times is not None and text.strip():
            found = stated_time(self._times, text, now)
            if found is not None:
                return found
        return Occurrence(now, Precision.INSTANT, TimeSource.SAVED)

    def _relate(
        self, memory: Memory, linked: list[tuple[Memory, RelationType, str]], access: Access
    ) -> list[dict[str, Any]]:
        """The caller's relations from the saved memory (again, for a duplicate: one
        relation per source, type and target, so a retry adds nothing), as the saved
        item's ``related`` shows them (no read: they are what this call asserted)."""
        relations = _relations(memory, linked, access)
        if relations:
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


def _relations(
    memory: Memory, linked: Sequence[tuple[Memory, RelationType, str]], access: Access
) -> list[Relation]:
    """The caller's relations from ``memory`` (one per source, type and target: written
    again, they replace themselves)."""
    by = Attribution(access.person, access.principal)
    return [between(memory, target, type_, by, note) for target, type_, note in linked]
