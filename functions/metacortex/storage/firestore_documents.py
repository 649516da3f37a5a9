"""Documents in the Firestore store: versions, text and bytes in parts, passages as records.

Collections (``memory_vectors`` stands for the configured collection; ``S`` a space other
than ``default``, whose collections sit under ``memory_vectors_spaces/S/`` as its
memories do, so nothing of one space is ever in another's collection):

- ``memory_vectors_documents``: one document per version (``firestore_document_codec``),
  with its text and bytes in its ``memory_vectors_document_parts`` subcollection (not
  in Cloud Storage: see docs/DOCUMENTS.md, "Where the bytes go");
- ``memory_vectors_document_keys``: ``<space>|h|<sha256>`` (the current document with
  those bytes) and ``<space>|s|<sha256 of the source>`` (the current version of a
  source), each ``{document_id, pending, pending_at}``: ``pending`` names a version being
  written, so two writes of one source or one content never run at once.

Writing a document (``add``) cannot be one transaction: a 20 MB file and 5,000 passages
are many times Firestore's 10 MiB request. So:

1. one transaction checks the keys (the same bytes: return that document; another
   version of the source being written: ``Conflict``), and writes the version marked
   ``ingesting`` with both keys ``pending`` on it;
2. batches (at most 500 writes and 3.5 MiB each) write the bytes' and text's parts
   and the new passages; for a new version of a source, the records it will change (kept
   passages, retired ones) and the stored relations it will change are first saved as
   they are in ``u`` parts, then changed; then the passages' relations (``part_of``,
   ``next``; the previous version's invalidated), each marked ``written_with`` the
   version;
3. one transaction marks the version ``ready``, the previous one superseded by it, and
   points the keys at it: from then on it is the current version.

Passages are searchable as their batch commits. Any failure before step 3 commits is
undone (``_undo``): the saved records and relations are put back, the new passages,
relations and parts deleted, the version deleted and the keys released, so a failed
document leaves no memories and no stored bytes. A crash (the process killed) leaves
the version ``ingesting`` and its keys pending: the next write of the same bytes or
source that finds it older than ``STALE_AFTER`` undoes it first, the same way; until
then the passages already written are found by searches and the version is not listed.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Executor
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Final, TypeVar

from google.api_core import exceptions as google_errors
from google.cloud import firestore
from google.cloud.firestore_v1.base_query import FieldFilter
from google.cloud.firestore_v1.collection import CollectionReference
from google.cloud.firestore_v1.document import DocumentReference
from google.cloud.firestore_v1.field_path import FieldPath
from google.cloud.firestore_v1.transaction import Transaction

from metacortex.domain.documents import Document, DocumentState
from metacortex.domain.records import DEFAULT_SPACE, Memory, utc_now
from metacortex.domain.relations import Relation
from metacortex.errors import Conflict
from metacortex.storage.base import (
    DocumentOutcome,
    DocumentWrite,
    MemoryFilter,
    PageKey,
    checked_relations,
)
from metacortex.storage.firestore_codec import (
    EMBEDDING,
    MEMORY_FIELDS,
    TERM_COUNT,
    TERM_FREQS,
    TERMS,
    decode_memory,
    encode_memory,
    fields_of,
    storable_id,
    term_index,
    to_stored_time,
)
from metacortex.storage.firestore_document_codec import (
    BYTES_PREFIX,
    PART_BYTES,
    TEXT_PREFIX,
    UNDO_PREFIX,
    byte_parts,
    decode_document,
    encode_document,
    part_id,
    text_parts,
)
from metacortex.storage.firestore_relations import ENDS
from metacortex.storage.firestore_relations import encode as encode_relation

if TYPE_CHECKING:
    pass

T = TypeVar("T")
Run = Callable[[Callable[[Transaction], T]], T]

DOCUMENTS_SUFFIX: Final = "_documents"
KEYS_SUFFIX: Final = "_document_keys"
PARTS_SUFFIX: Final = "_document_parts"
# A version still ``ingesting`` this long after it started was abandoned by a crash.
STALE_AFTER: Final = timedelta(minutes=30)
# Per commit: 500 writes (this store's batch) and 3.5 MiB. Firestore takes requests of
# up to 10 MiB, but the emulator (a Java gRPC server) refuses a message over 4 MiB
# ("gRPC message exceeds maximum size 4194304"), so batches stay under that for both.
BATCH_WRITES: Final = 500
BATCH_BYTES: Final = 3_670_016
_TERM_FIELDS: Final = frozenset({TERMS, TERM_FREQS, TERM_COUNT, EMBEDDING})
_CLAIM_ATTEMPTS: Final = 3
# On a relation a document's write made or changed: that version's id, so undoing the
# version finds them (one query; the automatic single-field index serves it).
WRITTEN_WITH: Final = "written_with"

logger = logging.getLogger(__name__)


def _record_bytes(memory: Memory, with_vector: int) -> int:
    """A generous estimate of a record's size on the wire (texts twice: content and
    retrieval text; the term index about twice the retrieval text; 10 bytes a float)."""
    text = len(memory.content.encode()) + 3 * len(memory.retrieval_text.encode())
    return text + 10 * with_vector + 1_000


def _relation_bytes(relation: Relation) -> int:
    return len(relation.source_summary.encode()) + len(relation.target_summary.encode()) + 600


class Batches:
    """Writes committed in batches of at most ``BATCH_WRITES`` writes and ``BATCH_BYTES``."""

    def __init__(self, client: firestore.Client) -> None:
        self._client = client
        self._batch: Any = None
        self._writes = 0
        self._bytes = 0
        self.commits = 0

    def _room(self, size: int) -> Any:
        if self._batch is not None and (
            self._writes >= BATCH_WRITES or self._bytes + size > BATCH_BYTES
        ):
            self.flush()
        if self._batch is None:
            self._batch = self._client.batch()
        self._writes += 1
        self._bytes += size
        return self._batch

    def set(self, reference: DocumentReference, data: Mapping[str, Any], size: int) -> None:
        self._room(size).set(reference, dict(data))

    def update(self, reference: DocumentReference, data: Mapping[str, Any], size: int) -> None:
        self._room(size).update(reference, dict(data))

    def delete(self, reference: DocumentReference) -> None:
        self._room(200).delete(reference)

    def flush(self) -> None:
        if self._batch is not None and self._writes:
            self._batch.commit()
            self.commits += 1
        self._batch = None
        self._writes = 0
        self._bytes = 0


class _Stale(Exception):
    """The keys name versions abandoned by a crash: undo them, then claim again."""

    def __init__(self, document_ids: list[str]) -> None:
        super().__init__(", ".join(document_ids))
        self.document_ids = document_ids


class FirestoreDocuments:
    """The document half of ``FirestoreStore`` (which passes its client, its collections
    of records and its transaction runner)."""

    def __init__(
        self,
        client: firestore.Client,
        collection: str,
        spaces: CollectionReference,
        memories: Callable[[str], CollectionReference],
        relations: Callable[[str], CollectionReference],
        run: Run[Any],
        executor: Executor,
    ) -> None:
        self._client = client
        self._relations = relations
        self._name = collection + DOCUMENTS_SUFFIX
        self._parts_name = collection + PARTS_SUFFIX
        self._spaces = spaces
        self._memories = memories
        self._run = run
        self._executor = executor
        self._keys = client.collection(collection + KEYS_SUFFIX)

    def documents(self, space: str) -> CollectionReference:
        if space == DEFAULT_SPACE:
            root: CollectionReference = self._client.collection(self._name)
            return root
        collection: CollectionReference = self._spaces.document(space).collection(self._name)
        return collection

    def _parts(self, document_id: str, space: str) -> CollectionReference:
        parts: CollectionReference = (
            self.documents(space).document(document_id).collection(self._parts_name)
        )
        return parts

    def _hash_key(self, space: str, sha256: str) -> DocumentReference:
        return self._keys.document(f"{space}|h|{sha256}")

    def _source_key(self, space: str, source: str) -> DocumentReference:
        digest = hashlib.sha256(source.encode("utf-8")).hexdigest()
        return self._keys.document(f"{space}|s|{digest}")

    def _key_refs(self, document: Document) -> list[DocumentReference]:
        keys = [self._hash_key(document.space, document.sha256)]
        if document.source is not None:
            keys.append(self._source_key(document.space, document.source))
        return keys

    # ----------------------------------------------------------------- reads
    def get(self, document_id: str, space: str) -> Document | None:
        if not storable_id(document_id):
            return None
        snapshot = self.documents(space).document(document_id).get()
        if not snapshot.exists:
            return None
        return decode_document(snapshot.id, fields_of(snapshot), space)

    def find(self, space: str, sha256: str | None, source: str | None) -> Document | None:
        if (sha256 is None) == (source is None):
            raise ValueError("find a document by sha256 or by source, one of them")
        key = (
            self._hash_key(space, sha256)
            if sha256 is not None
            else self._source_key(space, str(source))
        )
        data = fields_of(key.get())
        current = data.get("document_id")
        if not current:
            return None
        found = self.get(str(current), space)
        return found if found is not None and found.current else None

    def page(self, space: str, limit: int, after: PageKey | None) -> list[Document]:
        query = (
            self.documents(space)
            .where(filter=FieldFilter("state", "==", DocumentState.READY.value))
            .where(filter=FieldFilter("superseded_by", "==", None))
            .order_by("created_at", direction="DESCENDING")
            .order_by(FieldPath.document_id(), direction="DESCENDING")
        )
        if after is not None:
            query = query.start_after(
                {"created_at": to_stored_time(after.created_at), FieldPath.document_id(): after.id}
            )
        return [
            decode_document(snapshot.id, fields_of(snapshot), space)
            for snapshot in query.limit(limit).stream()
        ]

    def text(self, document_id: str, start: int, end: int, space: str) -> str:
        if end <= start or not storable_id(document_id):
            return ""
        snapshot = (
            self.documents(space).document(document_id).get(field_paths=["text_parts", "state"])
        )
        starts: list[int] = list(fields_of(snapshot).get("text_parts") or [])
        wanted = [
            (number, at)
            for number, at in enumerate(starts)
            if at < end and (number + 1 == len(starts) or starts[number + 1] > start)
        ]
        if not wanted:
            return ""
        parts = self._parts(document_id, space)
        refs = [parts.document(part_id(TEXT_PREFIX, number)) for number, _ in wanted]
        texts = {s.id: str(fields_of(s).get("text") or "") for s in self._client.get_all(refs)}
        joined = "".join(texts.get(part_id(TEXT_PREFIX, number), "") for number, _ in wanted)
        first = wanted[0][1]
        return joined[start - first : end - first]

    def data(self, document_id: str, space: str) -> bytes | None:
        if not storable_id(document_id):
            return None
        snapshot = self.documents(space).document(document_id).get(field_paths=["byte_parts"])
        if not snapshot.exists:
            return None
        count = int(fields_of(snapshot).get("byte_parts") or 0)
        parts = self._parts(document_id, space)
        refs = [parts.document(part_id(BYTES_PREFIX, number)) for number in range(count)]
        found = {s.id: bytes(fields_of(s).get("data") or b"") for s in self._client.get_all(refs)}
        return b"".join(found.get(ref.id, b"") for ref in refs)

    def passages(self, document_id: str, space: str) -> list[Memory]:
        query = (
            self._memories(space)
            .where(filter=FieldFilter("document_id", "==", document_id))
            .select(list(MEMORY_FIELDS))
        )
        found = [decode_memory(s.id, fields_of(s), space) for s in query.stream()]
        return sorted(found, key=lambda m: (m.document.start if m.document else 0, m.id))

    def beside(
        self, anchor: Memory, where: MemoryFilter, span: int, *, after: bool
    ) -> list[Memory]:
        """Passages of the anchor's document just before (or after) it, nearest first: the
        states and the document in the query (``firestore_queries``: ``passage_order``),
        the rest of ``where`` checked after, reading on until ``span`` passed."""
        ref = anchor.document
        if ref is None or span <= 0:
            return []
        states = [state.value for state in where.states]
        direction = "ASCENDING" if after else "DESCENDING"
        query = (
            self._memories(where.space)
            .where(
                filter=FieldFilter("branch_state", "==", states[0])
                if len(states) == 1
                else FieldFilter("branch_state", "in", states)
            )
            .where(filter=FieldFilter("document_id", "==", ref.id))
            .order_by("document_start", direction=direction)
            .order_by(FieldPath.document_id(), direction=direction)
            .select(list(MEMORY_FIELDS))
        )
        cursor: dict[str, Any] = {"document_start": ref.start, FieldPath.document_id(): anchor.id}
        found: list[Memory] = []
        batch = max(span, 10)
        while len(found) < span:
            snapshots = list(query.start_after(cursor).limit(batch).stream())
            for snapshot in snapshots:
                memory = decode_memory(snapshot.id, fields_of(snapshot), where.space)
                if where.matches(memory):
                    found.append(memory)
                    if len(found) == span:
                        break
            if len(snapshots) < batch:
                break
            last = snapshots[-1]
            cursor = {
                "document_start": fields_of(last).get("document_start"),
                FieldPath.document_id(): last.id,
            }
        return found

    # ---------------------------------------------------------------- writes
    def add(self, write: DocumentWrite) -> DocumentOutcome:
        document = write.document
        for attempt in range(_CLAIM_ATTEMPTS):
            try:
                existing = self._run(lambda txn: self._claim(txn, write))
            except _Stale as stale:
                if attempt + 1 == _CLAIM_ATTEMPTS:
                    raise Conflict(
                        "an earlier add of this document was cut short and could not be "
                        "cleaned up; try again"
                    ) from None
                for stale_id in stale.document_ids:
                    logger.warning("undoing document %s, abandoned while being written", stale_id)
                    self._undo(stale_id, document.space, self._key_refs(document))
                continue
            if existing is not None:
                return DocumentOutcome(existing, created=False)
            break
        try:
            self._write_content(write)
            self._run(lambda txn: self._publish(txn, write))
        except BaseException:
            try:
                self._undo(document.id, document.space, self._key_refs(document))
            except Exception as error:  # noqa: BLE001 - the first failure is what the caller sees
                logger.error(
                    "could not undo the partly written document %s (%s); the next add of the "
                    "same file or source undoes it",
                    document.id,
                    error,
                )
            raise
        if write.kept or write.retired or write.relations_before:
            self._forget_undo_log(document)
        return DocumentOutcome(document.with_changes(state=DocumentState.READY), created=True)

    def _claim(self, transaction: Transaction, write: DocumentWrite) -> Document | None:
        """Step 1: the same bytes already current (returned), or the version written as
        ``ingesting`` with the keys pending on it (None)."""
        document = write.document
        keys = self._key_refs(document)
        read = self._client.get_all(keys, transaction=transaction)
        snapshots = {snapshot.reference.path: fields_of(snapshot) for snapshot in read}
        hash_key = snapshots.get(keys[0].path, {})
        source_key = snapshots.get(keys[1].path, {}) if len(keys) > 1 else {}
        holder = hash_key.get("document_id")
        if holder:
            held = self.documents(document.space).document(str(holder)).get(transaction=transaction)
            if held.exists:
                existing = decode_document(held.id, fields_of(held), document.space)
                if existing.current:
                    return existing
        now = utc_now()
        stale = []
        for key in (hash_key, source_key):
            pending = key.get("pending")
            if not pending:
                continue
            started = key.get("pending_at")
            if isinstance(started, datetime) and now - started > STALE_AFTER:
                stale.append(str(pending))
            else:
                raise Conflict(
                    "this document (or another version of its source) is being added right "
                    "now; try again when that has finished"
                )
        if stale:
            raise _Stale(sorted(set(stale)))
        current = source_key.get("document_id") if document.source is not None else None
        expected = write.previous.id if write.previous is not None else None
        if current != expected:
            raise Conflict(
                f"another version of {document.source!r} was added meanwhile; add this one "
                "again to replace it"
            )
        texts = text_parts(write.text)
        ingesting = document.with_changes(state=DocumentState.INGESTING)
        transaction.set(
            self.documents(document.space).document(document.id),
            encode_document(ingesting, [at for at, _ in texts], len(byte_parts(write.data)))
            | {"ingest_started_at": to_stored_time(now)},
        )
        for reference, key in zip(keys, (hash_key, source_key), strict=False):
            transaction.set(
                reference,
                {
                    "document_id": key.get("document_id"),
                    "space": document.space,
                    "pending": document.id,
                    "pending_at": to_stored_time(now),
                },
            )
        return None

    def _write_content(self, write: DocumentWrite) -> None:
        """Step 2: parts, passages, and for a new version the undo log, then the changes."""
        document = write.document
        parts = self._parts(document.id, document.space)
        records = self._memories(document.space)
        batches = Batches(self._client)
        for number, piece in enumerate(byte_parts(write.data)):
            batches.set(parts.document(part_id(BYTES_PREFIX, number)), {"data": piece}, len(piece))
        for number, (_, text) in enumerate(text_parts(write.text)):
            size = len(text.encode("utf-8"))
            batches.set(parts.document(part_id(TEXT_PREFIX, number)), {"text": text}, size)
        for memory, vector in write.passages:
            document.check_passage(memory)
            batches.set(
                records.document(memory.id),
                encode_memory(memory, vector),
                _record_bytes(memory, len(vector)),
            )
        changed = [*write.kept, *write.retired]
        for memory in write.kept:
            document.check_passage(memory)
        for memory in write.retired:
            write.previous_version().check_passage(memory)
        if changed or write.relations_before:
            self._save_undo_log(batches, document, [m.id for m in changed], write.relations_before)
            for memory in changed:
                batches.update(
                    records.document(memory.id),
                    encode_memory(memory, None),
                    _record_bytes(memory, 0),
                )
        relations = self._relations(document.space)
        for relation in checked_relations(write):
            batches.set(
                relations.document(relation.id),
                encode_relation(relation) | {WRITTEN_WITH: document.id},
                _relation_bytes(relation),
            )
        batches.flush()

    def _save_undo_log(
        self,
        batches: Batches,
        document: Document,
        ids: list[str],
        relations: Sequence[Relation],
    ) -> None:
        """The records a new version changes, as stored now (without vector or term index),
        and the stored relations it changes, in ``u`` parts; committed before any of them
        changes."""
        stored = self._stored_fields(document.space, ids)
        parts = self._parts(document.id, document.space)
        number = 0
        for kind, items in (
            ("records", stored.items()),
            ("relations", ((r.id, encode_relation(r)) for r in relations)),
        ):
            entries: dict[str, Any] = {}
            size = 0
            for entry_id, fields in items:
                entry_size = sum(len(str(value)) for value in fields.values()) + 200
                if entries and size + entry_size > PART_BYTES // 2:
                    batches.set(parts.document(part_id(UNDO_PREFIX, number)), {kind: entries}, size)
                    entries, size, number = {}, 0, number + 1
                entries[entry_id] = fields
                size += entry_size
            if entries:
                batches.set(parts.document(part_id(UNDO_PREFIX, number)), {kind: entries}, size)
                number += 1
        batches.flush()

    def _stored_fields(self, space: str, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        records = self._memories(space)
        refs = [records.document(memory_id) for memory_id in ids]
        found: dict[str, dict[str, Any]] = {}
        for start in range(0, len(refs), BATCH_WRITES):
            for snapshot in self._client.get_all(
                refs[start : start + BATCH_WRITES], field_paths=list(MEMORY_FIELDS)
            ):
                if snapshot.exists:
                    found[snapshot.id] = dict(fields_of(snapshot))
        return found

    def _publish(self, transaction: Transaction, write: DocumentWrite) -> None:
        """Step 3: the version becomes the current one."""
        document = write.document
        reference = self.documents(document.space).document(document.id)
        keys = self._key_refs(document)
        previous_hash = (
            self._hash_key(document.space, write.previous.sha256)
            if write.previous is not None
            else None
        )
        reads = [reference, *keys, *([previous_hash] if previous_hash is not None else [])]
        snapshots = {
            s.reference.path: s for s in self._client.get_all(reads, transaction=transaction)
        }
        mine = snapshots[reference.path]
        if not mine.exists or fields_of(mine).get("state") != DocumentState.INGESTING.value:
            raise Conflict("the document was removed while it was being written; add it again")
        transaction.update(reference, {"state": DocumentState.READY.value})
        if write.previous is not None and previous_hash is not None:
            transaction.update(
                self.documents(document.space).document(write.previous.id),
                {"superseded_by": document.id},
            )
            held = snapshots[previous_hash.path]
            if held.exists and fields_of(held).get("document_id") == write.previous.id:
                transaction.delete(previous_hash)
        for key in keys:
            transaction.set(
                key,
                {
                    "document_id": document.id,
                    "space": document.space,
                    "pending": None,
                    "pending_at": None,
                },
            )

    def _forget_undo_log(self, document: Document) -> None:
        try:
            batches = Batches(self._client)
            for part in self._part_refs(document.id, document.space, UNDO_PREFIX):
                batches.delete(part)
            batches.flush()
        except google_errors.GoogleAPICallError as error:
            logger.warning("the undo log of document %s stays (%s)", document.id, error)

    def _part_refs(
        self, document_id: str, space: str, prefix: str | None = None
    ) -> list[DocumentReference]:
        return [
            snapshot.reference
            for snapshot in self._parts(document_id, space).select([]).stream()
            if prefix is None or snapshot.id.startswith(prefix)
        ]

    def _undo(self, document_id: str, space: str, keys: Iterable[DocumentReference]) -> None:
        """Take back a version that never became current: put back the records it changed,
        delete its passages, parts and record, release the keys pending on it. Safe to run
        again (a crash while undoing leaves it stale again)."""
        reference = self.documents(space).document(document_id)
        snapshot = reference.get(field_paths=["state"])
        if snapshot.exists and fields_of(snapshot).get("state") != DocumentState.INGESTING.value:
            return  # it became current: nothing to take back
        records = self._memories(space)
        batches = Batches(self._client)
        undo = [s for s in self._parts(document_id, space).stream() if s.id.startswith(UNDO_PREFIX)]
        saved: dict[str, dict[str, Any]] = {}
        saved_relations: dict[str, dict[str, Any]] = {}
        for part in undo:
            saved.update(fields_of(part).get("records") or {})
            saved_relations.update(fields_of(part).get("relations") or {})
        still = self._stored_fields(space, list(saved))  # an erased one stays erased
        for memory_id, fields in saved.items():
            if memory_id in still:
                restored = {k: v for k, v in fields.items() if k not in _TERM_FIELDS}
                text = str(restored.get("retrieval_text") or "")
                batches.update(
                    records.document(memory_id), restored | term_index(text), 4 * len(text)
                )
        batches.flush()
        passages = records.where(filter=FieldFilter("document_id", "==", document_id)).select([])
        for passage in passages.stream():
            batches.delete(passage.reference)
        self._undo_relations(batches, document_id, space, saved_relations, set(saved) - set(still))
        for part_ref in self._part_refs(document_id, space):
            batches.delete(part_ref)
        batches.delete(reference)
        batches.flush()
        self._run(lambda txn: self._release(txn, document_id, list(keys)))

    def _undo_relations(
        self,
        batches: Batches,
        document_id: str,
        space: str,
        saved: Mapping[str, Mapping[str, Any]],
        erased: set[str],
    ) -> None:
        """Delete the relations the version wrote; put back those it changed as they were
        (but none touching a passage erased meanwhile: erasing takes its relations)."""
        relations = self._relations(space)
        written = relations.where(filter=FieldFilter(WRITTEN_WITH, "==", document_id)).select([])
        for snapshot in written.stream():
            if snapshot.id not in saved:
                batches.delete(snapshot.reference)
        for relation_id, fields in saved.items():
            if erased.isdisjoint(fields.get(ENDS) or ()):
                batches.set(relations.document(relation_id), fields, 1_000)

    def _release(
        self, transaction: Transaction, document_id: str, keys: list[DocumentReference]
    ) -> None:
        for snapshot in self._client.get_all(keys, transaction=transaction):
            data = fields_of(snapshot)
            if not snapshot.exists or data.get("pending") != document_id:
                continue
            if data.get("document_id"):
                transaction.update(snapshot.reference, {"pending": None, "pending_at": None})
            else:
                transaction.delete(snapshot.reference)

    def versions(self, space: str, topic: str | None, erasing: bool) -> list[Document]:
        """Equality filters only (the automatic single-field indexes serve them), ordered
        here: a space's versions are few beside its records."""
        query: Any = self.documents(space)
        if topic is not None:
            query = query.where(filter=FieldFilter("topic", "==", topic))
        if erasing:
            query = query.where(filter=FieldFilter("state", "==", DocumentState.ERASING.value))
        found = [decode_document(s.id, fields_of(s), space) for s in query.stream()]
        return sorted(found, key=lambda document: (document.created_at, document.id))

    def count(self, space: str) -> int:
        collection: Any = self.documents(space)  # the client's stubs mistype count()
        return int(collection.count().get()[0][0].value)

    def mark_erasing(self, document_ids: Sequence[str], space: str) -> None:
        if not document_ids:
            return
        references = [self.documents(space).document(i) for i in document_ids if storable_id(i)]

        def body(transaction: Transaction) -> None:
            for snapshot in self._client.get_all(
                references, field_paths=["state"], transaction=transaction
            ):
                if snapshot.exists:
                    transaction.update(snapshot.reference, {"state": DocumentState.ERASING.value})

        self._run(body)

    def remove(self, document_id: str, space: str) -> bool:
        found = self.get(document_id, space)
        if found is None:
            return False
        batches = Batches(self._client)
        for part in self._part_refs(document_id, space):
            batches.delete(part)
        batches.delete(self.documents(space).document(document_id))
        batches.flush()
        self._run(lambda txn: self._drop_keys(txn, found))
        return True

    def _drop_keys(self, transaction: Transaction, document: Document) -> None:
        """Delete the keys naming the version; a key it was only pending on (another
        version still current) is released instead, as an undone write releases it."""
        keys = self._key_refs(document)
        for snapshot in self._client.get_all(keys, transaction=transaction):
            data = fields_of(snapshot)
            if not snapshot.exists:
                continue
            if data.get("document_id") == document.id:
                transaction.delete(snapshot.reference)
            elif data.get("pending") == document.id:
                transaction.update(snapshot.reference, {"pending": None, "pending_at": None})
