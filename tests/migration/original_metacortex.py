"""The TypeScript MetaCortex's writes, rebuilt from its public source for fixtures.

Counterpart: github.com/chrishonson/Metacortex, ``functions/src`` at commit 6096b49
(the fetched snapshot's HEAD), and its portable archive code, which that snapshot
lacks, at commit 36afd74 (``functions/src/archive.ts``,
``functions/src/archiveFirestore.ts``, ``functions/scripts/backup-memories.ts``).
Every field, type and collection below is written the way the cited line writes
it; nothing here is our reading of the spec. Where the source says ``number`` the
value is an integer of epoch milliseconds (``Date.now()``), which the Node Admin
SDK stores as a Firestore integer, as the Python client stores an ``int``; a
``Date`` becomes a Timestamp, ``FieldValue.vector`` a ``Vector``.

Collections the original writes:

- ``memory_vectors`` (config.ts:301 ``MEMORY_COLLECTION`` default), one document
  per memory with a Firestore auto-id (memoryRepository.ts:109 ``.doc()``):
  ``content`` str, ``retrieval_text`` str, ``embedding`` Vector, ``metadata`` map,
  ``media`` map only for images (memoryRepository.ts:110-116). ``metadata``
  (types.ts:45-58, built in service.ts:69-85): ``module_name`` str,
  ``branch_state`` "active"|"merged"|"deprecated"|"wip" (types.ts:10-15),
  ``created_at`` and ``updated_at`` epoch ms, ``modality`` "text"|"image"|"mixed"
  (types.ts:21-25), and only when set: ``artifact_refs`` [str] (service.ts:75-77),
  ``valid_from``/``valid_until`` epoch ms (service.ts:78-83), ``superseded_by`` str,
  ``supersession_reason`` "changed"|"corrected", ``initiator`` "user"|"agent"
  (written by deprecate, memoryRepository.ts:199-212), and ``provenance`` map
  (service.ts:62-67, always written since aa236db): ``origin``
  "user_asserted"|"agent_inferred"|"legacy_import" (default "agent_inferred",
  service.ts:63), ``source_session`` str, ``derived_from`` [str], ``confidence``
  number. ``media``: ``kind`` "inline_image", ``mime_type`` str (types.ts:33-36,
  embeddings.ts:180-183). Its first releases wrote ``metadata.timestamp`` instead
  of ``created_at``/``updated_at``, an ``artifact_type`` ("SPEC"|"DECISION"|
  "PATTERN"|"REQUIREMENT") and ``modality`` "text"|"text_image" (types.ts at
  0bfe9dd and 2c6a2fb; no modality at all at a1e05eb).
- ``memory_vectors_write_fingerprints`` (memoryRepository.ts:76), id = sha256 of
  the write (service.ts:440-463): ``id`` str, ``dedupe_expires_at`` epoch ms (+15
  min), ``expires_at`` Timestamp (+30 days), ``updated_at`` epoch ms
  (memoryRepository.ts:117-122).
- ``memory_events`` (observability.ts:7), id = ``event_id`` (observability.ts:210-213),
  flat: a tool call (observability.ts:128-143) has ``event_id``, ``event_type``
  "tool_call", ``timestamp`` epoch ms, ``expires_at`` Timestamp (+90 days),
  ``client_id``, ``tool_name``, ``status`` "success"|"error", ``latency_ms``,
  ``request`` and ``response`` maps (search: mcpServer.ts:345-353 and 367-372;
  fetch: 505-508 and 528-534), ``error`` map on failure.
- ``retrieval_query_events`` (observability.ts:8), only with
  RETRIEVAL_EVENT_LOGGING_ENABLED (default false, config.ts:302-306), flat
  (observability.ts:150-162): ``event_id``, ``tool_event_id``, ``client_id``,
  ``status``, ``timestamp`` epoch ms, ``expires_at`` Timestamp, ``latency_ms``,
  ``event_type`` "search" with ``memory_collection``, ``query``, ``filter_topic``
  (absent when none: undefined is stripped, observability.ts:240-263),
  ``filter_state``, ``limit``, ``result_count``, ``results`` [{``id``, ``rank``,
  ``score``}] (mcpServer.ts:375-397); or "fetch" with ``memory_collection``,
  ``memory_id``, ``found`` (mcpServer.ts:537-542).
- ``retrieval_eval_cases`` (retrievalEvaluation.ts:6), id = ``case_id``
  (retrievalEvaluation.ts:71-74): ``schema_version`` 1, ``case_id``,
  ``target_mode`` "isolated"|"production", ``source``
  "synthetic_flow"|"observed_events", ``query``, ``filters`` {``filter_topic``
  str|null, ``filter_state``}, ``limit``, ``memory_collection``, ``positive_ids``
  [str], ``label_source`` "implicit_fetch", ``created_at``/``updated_at`` epoch ms
  (retrievalEvaluation.ts:12-28, observed cases built at 199-216). No ``saved_at``.

The portable archive (archive.ts at 36afd74): a folder with ``memories.ndjson``
and ``manifest.json`` (backup-memories.ts ``archivePath``/``manifestPath``). One
record per line, sorted by id (``serializeArchive``), keys in a fixed order,
``null`` and absent values dropped (``orderKeys``): ``id``, ``content``,
``retrieval_text``, ``metadata`` (the Firestore map as read, times in epoch ms),
``media``. Manifest (``ArchiveManifest``): ``generated_at`` epoch ms,
``project_id``, ``collection``, ``document_count``, ``state_histogram``,
``embedding_model``, ``embedding_dimensions``, ``schema_version`` 1; written with
``JSON.stringify(manifest, null, 2)`` and a newline.

The default embedding model is ``text-embedding-004`` (config.ts:290) at 768
dimensions (config.ts:296-300); backup-memories.ts records the same defaults.
"""

from __future__ import annotations

import hashlib
import json
import random
import string
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final

from google.cloud import firestore
from google.cloud.firestore_v1.vector import Vector

MEMORY_COLLECTION: Final = "memory_vectors"
FINGERPRINTS: Final = MEMORY_COLLECTION + "_write_fingerprints"
MEMORY_EVENTS: Final = "memory_events"
RETRIEVAL_EVENTS: Final = "retrieval_query_events"
EVAL_CASES: Final = "retrieval_eval_cases"
EMBEDDING_MODEL: Final = "text-embedding-004"
EMBEDDING_DIMENSIONS: Final = 768
ADMIN_CLIENT: Final = "default"  # config.ts:266-279, the admin profile's id

_DAY_MS: Final = 24 * 60 * 60 * 1000
_FINGERPRINT_WINDOW_MS: Final = 15 * 60 * 1000  # memoryRepository.ts:66
_FINGERPRINT_TTL_MS: Final = 30 * _DAY_MS  # memoryRepository.ts:67
_EVENT_TTL_MS: Final = 90 * _DAY_MS  # observability.ts:9
_AUTO_ID_CHARS: Final = string.ascii_letters + string.digits  # Firestore autoId()
# archive.ts METADATA_KEY_ORDER, PROVENANCE_KEY_ORDER, MEDIA_KEY_ORDER, MEMORY_KEY_ORDER
_ARCHIVE_METADATA_KEYS: Final = (
    "module_name",
    "branch_state",
    "created_at",
    "updated_at",
    "modality",
    "artifact_refs",
    "superseded_by",
    "valid_from",
    "valid_until",
    "supersession_reason",
    "initiator",
    "provenance",
)
_ARCHIVE_PROVENANCE_KEYS: Final = ("origin", "source_session", "derived_from", "confidence")


def date(epoch_ms: int) -> datetime:
    """A JS ``new Date(ms)`` as the Python client writes and reads it."""
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=epoch_ms)


def iso(epoch_ms: int) -> str:
    """``new Date(ms).toISOString()``: what the original's tools showed (service.ts:491-498)."""
    return date(epoch_ms).strftime("%Y-%m-%dT%H:%M:%S.") + f"{epoch_ms % 1000:03d}Z"


@dataclass
class OriginalMetaCortex:
    """The original's service and repository writes, against a real Firestore client.

    ``embed`` stands in for Gemini ``text-embedding-004`` (768 numbers per text);
    ``now_ms`` is its clock, advanced by ``tick``.
    """

    client: firestore.Client
    embed: Callable[[str], list[float]]
    now_ms: int = 1_767_225_600_000  # 2026-01-01T00:00:00Z
    collection: str = MEMORY_COLLECTION
    rng: random.Random = field(default_factory=lambda: random.Random(20))

    def tick(self, ms: int = 60_000) -> int:
        self.now_ms += ms
        return self.now_ms

    def auto_id(self) -> str:
        return "".join(self.rng.choice(_AUTO_ID_CHARS) for _ in range(20))

    # --------------------------------------------------- service.ts rememberContext
    def remember(
        self,
        content: str,
        topic: str | None = None,
        *,
        draft: bool | None = None,
        branch_state: str | None = None,
        artifact_refs: Sequence[str] = (),
        valid_from: int | None = None,
        valid_until: int | None = None,
        origin: str | None = None,
        source_session: str | None = None,
        derived_from: Sequence[str] = (),
        confidence: float | None = None,
        image_mime_type: str | None = None,
        image_summary: str | None = None,
    ) -> str:
        module_name = (topic or "").strip() or "general"  # service.ts:114
        state = branch_state or ("wip" if draft else "active")  # service.ts:426-438
        refs = list(dict.fromkeys(r.strip() for r in artifact_refs if r.strip()))  # :465-471
        text = content.strip()
        if image_mime_type is None:  # embeddings.ts:128-134
            retrieval_text, modality, media = text, "text", None
        else:  # embeddings.ts:172-184
            sections = [text, f"Visual memory summary:\n{image_summary}"]
            retrieval_text = "\n\n".join(s for s in sections if s)
            modality = "mixed" if text else "image"
            media = {"kind": "inline_image", "mime_type": image_mime_type}
        now = self.tick()
        provenance: dict[str, Any] = {"origin": origin or "agent_inferred"}  # service.ts:62-67
        if source_session:
            provenance["source_session"] = source_session
        if derived_from:
            provenance["derived_from"] = list(derived_from)
        if confidence is not None:
            provenance["confidence"] = confidence
        metadata: dict[str, Any] = {  # service.ts:69-85
            "module_name": module_name,
            "branch_state": state,
            "created_at": now,
            "updated_at": now,
            "modality": modality,
        }
        if refs:
            metadata["artifact_refs"] = refs
        if valid_from is not None:
            metadata["valid_from"] = valid_from
        if valid_until is not None:
            metadata["valid_until"] = valid_until
        metadata["provenance"] = provenance
        fingerprint = hashlib.sha256(  # service.ts:440-463 (JSON.stringify key order)
            json.dumps(
                {
                    "version": 2,
                    "module_name": module_name,
                    "branch_state": state,
                    "content": text or None,
                    "image_mime_type": image_mime_type,
                    "image_sha256": None,
                    "artifact_refs": refs,
                },
                separators=(",", ":"),
                ensure_ascii=False,
            ).encode()
        ).hexdigest()
        document_id = self.auto_id()  # memoryRepository.ts:109
        document: dict[str, Any] = {  # memoryRepository.ts:110-116
            "content": text or (image_summary or ""),
            "retrieval_text": retrieval_text,
            "embedding": Vector(self.embed(retrieval_text)),
            "metadata": metadata,
        }
        if media is not None:
            document["media"] = media
        batch = self.client.batch()
        batch.set(self.client.collection(self.collection).document(document_id), document)
        batch.set(  # memoryRepository.ts:117-122
            self.client.collection(self.collection + "_write_fingerprints").document(fingerprint),
            {
                "id": document_id,
                "dedupe_expires_at": now + _FINGERPRINT_WINDOW_MS,
                "expires_at": date(now + _FINGERPRINT_TTL_MS),
                "updated_at": now,
            },
        )
        batch.commit()
        return document_id

    # ------------------------------------------------- memoryRepository.ts deprecate
    def deprecate(
        self,
        document_id: str,
        superseding_id: str,
        *,
        reason: str | None = None,
        initiator: str | None = None,
    ) -> None:
        now = self.tick()
        resolved = reason or "changed"  # memoryRepository.ts:197
        updates: dict[str, Any] = {  # memoryRepository.ts:199-204
            "metadata.branch_state": "deprecated",
            "metadata.superseded_by": superseding_id,
            "metadata.updated_at": now,
            "metadata.supersession_reason": resolved,
        }
        if resolved == "changed":  # :206-208
            updates["metadata.valid_until"] = now
        if initiator:  # :210-212
            updates["metadata.initiator"] = initiator
        self.client.collection(self.collection).document(document_id).update(updates)

    # ------------------------------------------------ service.ts consolidateContext
    def consolidate(self, topic: str, source_ids: Sequence[str], merged_content: str) -> str:
        """service.ts:255-309: the merged record is a plain active write (origin
        agent_inferred, no derived_from), then each source is deprecated by it."""
        merged = self.remember(merged_content, topic, branch_state="active")
        for source in source_ids:
            self.deprecate(source, merged)
        return merged

    # ------------------------------------------------------------ observability.ts
    def tool_call(
        self,
        tool_name: str,
        request: dict[str, Any],
        response: dict[str, Any],
        *,
        client_id: str = ADMIN_CLIENT,
        retrieval: dict[str, Any] | None = None,
    ) -> str:
        """observability.ts:127-174: one memory_events document, and one
        retrieval_query_events document when retrieval logging is on."""
        timestamp = self.now_ms
        event_id = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
        event = {
            "event_id": event_id,
            "event_type": "tool_call",
            "timestamp": timestamp,
            "expires_at": date(timestamp + _EVENT_TTL_MS),
            "client_id": client_id,
            "tool_name": tool_name,
            "status": "success",
            "latency_ms": 42,
            "request": _strip_none(request),
            "response": _strip_none(response),
        }
        self.client.collection(MEMORY_EVENTS).document(event_id).set(event)
        if retrieval is not None:
            retrieval_id = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
            self.client.collection(RETRIEVAL_EVENTS).document(retrieval_id).set(
                {
                    "event_id": retrieval_id,
                    "tool_event_id": event_id,
                    "client_id": client_id,
                    "status": "success",
                    "timestamp": timestamp,
                    "expires_at": date(timestamp + _EVENT_TTL_MS),
                    "latency_ms": 42,
                    **_strip_none(retrieval),
                }
            )
        return event_id

    def search_call(
        self,
        query: str,
        result_ids: Sequence[str],
        *,
        filter_topic: str | None = None,
        filter_state: str = "active",
        limit: int | None = None,
        client_id: str = ADMIN_CLIENT,
        retrieval_logging: bool = True,
    ) -> None:
        """A search_context call as mcpServer.ts:341-400 records it."""
        self.tick(1_000)
        request = {  # mcpServer.ts:345-353 (truncateText at 749-757)
            "query_preview": query.strip()[:160] + ("..." if len(query.strip()) > 160 else ""),
            "query_length": len(query.strip()),
            "filter_topic": filter_topic,
            "filter_state": filter_state,
            "limit": limit,
        }
        response = {  # mcpServer.ts:367-372
            "result_count": len(result_ids),
            "result_ids": list(result_ids),
            "filter_state": filter_state,
            "filter_topic": filter_topic,
        }
        retrieval = {  # mcpServer.ts:375-397
            "event_type": "search",
            "memory_collection": self.collection,
            "query": query.strip(),
            "filter_topic": filter_topic,
            "filter_state": filter_state,
            "limit": limit or 5,
            "result_count": len(result_ids),
            "results": [
                {"id": rid, "rank": rank, "score": round(0.9 - rank / 100, 6)}
                for rank, rid in enumerate(result_ids, start=1)
            ],
        }
        self.tool_call(
            "search_context",
            request,
            response,
            client_id=client_id,
            retrieval=retrieval if retrieval_logging else None,
        )

    def fetch_call(
        self, memory_id: str, *, client_id: str = ADMIN_CLIENT, retrieval_logging: bool = True
    ) -> None:
        """A fetch_context call as mcpServer.ts:504-545 records it."""
        self.tick(1_000)
        metadata = self.client.collection(self.collection).document(memory_id).get().get("metadata")
        retrieval = {  # mcpServer.ts:537-542
            "event_type": "fetch",
            "memory_collection": self.collection,
            "memory_id": memory_id,
            "found": True,
        }
        self.tool_call(
            "fetch_context",
            {"id": memory_id, "used_document_id_alias": False},  # :505-508
            {  # mcpServer.ts:528-534
                "id": memory_id,
                "topic": metadata["module_name"],
                "branch_state": metadata["branch_state"],
                "modality": metadata["modality"],
                "artifact_ref_count": len(metadata.get("artifact_refs") or []),
            },
            client_id=client_id,
            retrieval=retrieval if retrieval_logging else None,
        )

    # ------------------------------------------------------ retrievalEvaluation.ts
    def eval_case(
        self,
        case_id: str,
        query: str,
        positive_ids: Sequence[str],
        *,
        filter_topic: str | None = None,
        filter_state: str = "active",
        source: str = "observed_events",
        target_mode: str = "production",
    ) -> None:
        """retrievalEvaluation.ts:12-28 (built at 199-216), written at 71-74."""
        self.client.collection(EVAL_CASES).document(case_id).set(
            {
                "schema_version": 1,
                "case_id": case_id,
                "target_mode": target_mode,
                "source": source,
                "query": query,
                "filters": {"filter_topic": filter_topic, "filter_state": filter_state},
                "limit": 5,
                "memory_collection": self.collection,
                "positive_ids": list(positive_ids),
                "label_source": "implicit_fetch",
                "created_at": self.now_ms,
                "updated_at": self.now_ms,
            }
        )

    # ------------------------------------------------------ archive.ts (36afd74)
    def export_archive(self, directory: Path) -> None:
        """backup-memories.ts: read the collection (archiveFirestore.ts
        ``readMemoriesForArchive``), write memories.ndjson and manifest.json."""
        records = []
        for snapshot in self.client.collection(self.collection).stream():
            data = snapshot.to_dict() or {}
            content = data["content"] if isinstance(data.get("content"), str) else ""
            records.append(  # archiveFirestore.ts toArchivedMemory
                {
                    "id": snapshot.id,
                    "content": content,
                    "retrieval_text": data.get("retrieval_text")
                    if isinstance(data.get("retrieval_text"), str)
                    else content,
                    "metadata": data.get("metadata"),
                    **({"media": data["media"]} if data.get("media") else {}),
                }
            )
        write_archive(directory, records, generated_at=self.now_ms)


def canonical_archive_line(record: dict[str, Any]) -> str:
    """archive.ts ``canonicalizeArchivedMemory`` + ``JSON.stringify``."""
    metadata = _ordered(record["metadata"], _ARCHIVE_METADATA_KEYS)
    if record["metadata"].get("provenance"):
        metadata["provenance"] = _ordered(
            record["metadata"]["provenance"], _ARCHIVE_PROVENANCE_KEYS
        )
    canonical = _ordered(record, ("id", "content", "retrieval_text", "metadata", "media"))
    canonical["metadata"] = metadata
    if record.get("media"):
        canonical["media"] = _ordered(record["media"], ("kind", "mime_type"))
    return json.dumps(canonical, separators=(",", ":"), ensure_ascii=False)


def write_archive(
    directory: Path,
    records: Sequence[dict[str, Any]],
    *,
    generated_at: int,
    document_count: int | None = None,
) -> None:
    """archive.ts ``serializeArchive`` and ``buildManifest``, as backup-memories.ts writes them."""
    directory.mkdir(parents=True, exist_ok=True)
    ordered = sorted(records, key=lambda r: r["id"])
    (directory / "memories.ndjson").write_text(
        "".join(canonical_archive_line(r) + "\n" for r in ordered), encoding="utf-8"
    )
    histogram: dict[str, int] = {}
    for record in records:
        state = record["metadata"]["branch_state"]
        histogram[state] = histogram.get(state, 0) + 1
    manifest = {
        "generated_at": generated_at,
        "project_id": "my-brain-88870",
        "collection": MEMORY_COLLECTION,
        "document_count": len(records) if document_count is None else document_count,
        "state_histogram": dict(sorted(histogram.items())),
        "embedding_model": EMBEDDING_MODEL,
        "embedding_dimensions": EMBEDDING_DIMENSIONS,
        "schema_version": 1,
    }
    (directory / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")


def _ordered(source: dict[str, Any], keys: Sequence[str]) -> dict[str, Any]:
    """archive.ts ``orderKeys``: the listed keys in order, undefined and null dropped."""
    return {key: source[key] for key in keys if source.get(key) is not None}


def _strip_none(value: dict[str, Any]) -> dict[str, Any]:
    """observability.ts ``stripUndefined`` (JS undefined is Python None here)."""
    return {key: item for key, item in value.items() if item is not None}


def first_release_document(
    embed: Callable[[str], list[float]],
    content: str,
    topic: str,
    *,
    branch_state: str = "active",
    timestamp: int,
    artifact_type: str = "DECISION",
    modality: str = "text",
) -> dict[str, Any]:
    """A memory as the original's first releases stored it: service.ts at 0bfe9dd lines
    38-44 (``artifact_type``, ``module_name``, ``branch_state``, ``timestamp`` epoch ms,
    ``modality`` "text"|"text_image"), written by memoryRepository.ts ``add()`` at
    d892274 (``content``, ``embedding``, ``metadata``; no ``retrieval_text`` yet)."""
    return {
        "content": content,
        "embedding": Vector(embed(content)),
        "metadata": {
            "artifact_type": artifact_type,
            "module_name": topic,
            "branch_state": branch_state,
            "timestamp": timestamp,
            "modality": modality,
        },
    }
