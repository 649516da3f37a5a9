"""The write fingerprint behind idempotent saves.

Two saves are the same write when their space, normalized content, topic, state,
image bytes, artifact refs (as a set), validity window and provenance agree.
Normalization: Unicode NFKC, every run of whitespace (including line breaks)
collapsed to one space, and the ends trimmed. Case is kept: "US" and "us" differ.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime

from metacortex.domain.records import DEFAULT_SPACE, BranchState, Provenance, to_wire_time

_WHITESPACE = re.compile(r"\s+")


def normalize_content(content: str) -> str:
    return _WHITESPACE.sub(" ", unicodedata.normalize("NFKC", content)).strip()


@dataclass(frozen=True, slots=True)
class WriteIdentity:
    content: str
    topic: str
    branch_state: BranchState
    image_sha256: str | None
    artifact_refs: tuple[str, ...]
    valid_from: datetime | None
    valid_until: datetime | None
    provenance: Provenance
    # Set when the writer may not read the state it writes: such a write is a
    # duplicate only of that writer's own earlier writes, so the answer can never
    # reveal another caller's record (docs/SERVER.md, "Dedupe never discloses").
    writer_scope: str | None = None
    # A write is a duplicate only inside its own space.
    space: str = DEFAULT_SPACE
    # When it happened, as the caller gave it (the same words said on another day are
    # another memory); what a text states follows from its content.
    occurred_at: str | None = None

    def fingerprint(self) -> str:
        canonical = {
            "content": normalize_content(self.content),
            "topic": self.topic,
            "state": self.branch_state.value,
            "image": self.image_sha256,
            "refs": sorted(set(self.artifact_refs)),
            "valid_from": to_wire_time(self.valid_from) if self.valid_from else None,
            "valid_until": to_wire_time(self.valid_until) if self.valid_until else None,
            "origin": self.provenance.origin.value if self.provenance.origin else None,
            "session": self.provenance.source_session,
            "derived_from": sorted(set(self.provenance.derived_from)),
            "confidence": self.provenance.confidence,
        }
        if self.writer_scope is not None:
            canonical["writer_scope"] = self.writer_scope
        if self.space != DEFAULT_SPACE:
            # Absent for the default space, so a retry across the upgrade still matches.
            canonical["space"] = self.space
        if self.occurred_at is not None:
            canonical["occurred_at"] = self.occurred_at
        encoded = json.dumps(canonical, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(encoded.encode("utf-8")).hexdigest()
