"""A whole stored record checked by the rules the tools apply to what they write.

``save_context``, ``deprecate_context`` and ``consolidate_context`` check each
argument as it arrives (``limits``). Records that arrive another way (a restored
archive, a migrated Firestore corpus) never went through a tool, so they are
checked here by the same functions, field by field, before they are written: a
record a tool would have refused would otherwise be stored and then be
unreachable (an id with a space cannot be fetched) or break a rule the tools
keep (a supersession loop).

``check_record`` raises ``InvalidArgument`` naming the first field at fault and
returns the record as the tools would have stored it (topic and artifact refs
trimmed, duplicate refs dropped). ``supersession_loops`` finds records whose
``superseded_by`` chain comes back to them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Final

from metacortex.domain import limits
from metacortex.domain.records import Memory
from metacortex.errors import InvalidArgument

# An image memory's retrieval text is its content plus the image's description.
MAX_RETRIEVAL_TEXT_CHARS: Final = 2 * limits.MAX_CONTENT_CHARS
# A consolidated record carries the union of its sources' refs.
MAX_RECORD_ARTIFACT_REFS: Final = limits.MAX_ARTIFACT_REFS * limits.MAX_CONSOLIDATE_SOURCES
_MAX_CHAIN: Final = 10_000


def check_record(memory: Memory) -> Memory:
    """``memory`` as the tools would have stored it, or ``InvalidArgument`` saying why not."""
    limits.check_id(memory.id)
    if not memory.content.strip():
        raise InvalidArgument("content is empty")
    limits.check_content(memory.content)
    limits.check_string(memory.retrieval_text, "retrieval_text")
    if len(memory.retrieval_text) > MAX_RETRIEVAL_TEXT_CHARS:
        raise InvalidArgument(
            f"retrieval_text is {len(memory.retrieval_text)} characters; the limit is "
            f"{MAX_RETRIEVAL_TEXT_CHARS}"
        )
    topic = limits.check_topic(memory.topic)
    refs = _artifact_refs(memory.artifact_refs)
    limits.check_validity(memory.valid_from, memory.valid_until)
    if memory.superseded_by is not None:
        limits.check_id(memory.superseded_by, "superseded_by")
        if memory.superseded_by == memory.id:
            raise InvalidArgument("superseded_by names the record itself")
    provenance = memory.provenance
    limits.check_source_session(provenance.source_session)
    if len(provenance.derived_from) > limits.MAX_DERIVED_FROM:
        raise InvalidArgument(
            f"derived_from has {len(provenance.derived_from)} ids; "
            f"the limit is {limits.MAX_DERIVED_FROM}"
        )
    for index, value in enumerate(provenance.derived_from):
        limits.check_id(value, f"derived_from[{index}]")
    if provenance.confidence is not None and not math.isfinite(provenance.confidence):
        raise InvalidArgument(f"confidence must be between 0 and 1, got {provenance.confidence}")
    limits.check_confidence(provenance.confidence)
    if memory.merge_method is not None:
        limits.check_string(memory.merge_method, "merge_method")
    return memory.with_changes(
        topic=topic,
        artifact_refs=refs,
        provenance=replace(provenance, derived_from=tuple(dict.fromkeys(provenance.derived_from))),
    )


def _artifact_refs(refs: tuple[str, ...]) -> tuple[str, ...]:
    if len(refs) > MAX_RECORD_ARTIFACT_REFS:
        raise InvalidArgument(
            f"artifact_refs has {len(refs)} entries; the limit is {MAX_RECORD_ARTIFACT_REFS}"
        )
    cleaned: list[str] = []
    for index, ref in enumerate(refs):
        try:
            [checked] = limits.check_artifact_refs([ref])
        except InvalidArgument as error:
            raise InvalidArgument(error.message.replace("[0]", f"[{index}]", 1)) from None
        cleaned.append(checked)
    return tuple(dict.fromkeys(cleaned))


def supersession_loops(
    links: Mapping[str, str | None], elsewhere: Callable[[str], str | None] = lambda _id: None
) -> dict[str, list[str]]:
    """Every id in ``links`` whose ``superseded_by`` chain returns to it, with that loop.

    ``links`` maps an id to its ``superseded_by``; ``elsewhere`` answers the same for
    ids outside ``links`` (records already stored), or None.
    """

    def successor(memory_id: str) -> str | None:
        return links[memory_id] if memory_id in links else elsewhere(memory_id)

    looping: dict[str, list[str]] = {}
    settled: set[str] = set()  # ids known to end in a record with no successor
    for start in links:
        if start in settled or start in looping:
            continue
        path: list[str] = []
        seen: dict[str, int] = {}
        current: str | None = start
        while current is not None and current not in settled and len(path) < _MAX_CHAIN:
            if current in looping:
                break
            if current in seen:
                loop = path[seen[current] :]
                for member in loop:
                    looping[member] = loop
                break
            seen[current] = len(path)
            path.append(current)
            current = successor(current)
        settled.update(member for member in path if member not in looping)
    return {memory_id: loop for memory_id, loop in looping.items() if memory_id in links}
