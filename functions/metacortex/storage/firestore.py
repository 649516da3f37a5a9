"""The production store: Firestore (native mode) through the synchronous Admin client.

Collections (``memory_vectors`` stands for the configured ``MEMORY_COLLECTION``):

- ``memory_vectors``: one document per memory of the space ``default``, id = memory
  id (``firestore_codec``); every other space ``S`` keeps its memories in
  ``memory_vectors_spaces/S/memory_vectors``, a subcollection with the same
  collection id, so the same composite and vector indexes serve it (an index of
  query scope COLLECTION applies to every collection with its id), queries never
  cross a space (a space is a path, not a filter), and a store from before
  spaces needs no migration (docs/firestore.md, "Spaces");
- ``memory_vectors_write_fingerprints``: fingerprint -> memory id, its space,
  ``written_at``, ``expires_at`` (TTL); a fingerprint hashes the space too;
- ``memory_vectors_meta/identity``: the embedding model and dimension of the vectors;
- ``memory_events`` and ``retrieval_query_events``: whatever ``Event.collection`` names;
- ``memory_vectors_auth_state``: OAuth and owner sign-in records, id ``kind:key``,
  with ``expires_at`` (TTL);
- ``memory_vectors_erased``: the tombstone of each erased memory (id = memory id,
  its space, ``erased_at``, ``erased_by``, the ``branch_state`` it was in); erasing
  deletes the record's document (content, embedding, term index) and its write
  fingerprints, and the name of a topic no space holds any more from
  ``memory_events``.

Dedupe and lifecycle changes run in Firestore transactions (reads lock, writes
are buffered and committed together; contention re-runs the function). Dense
search is ``find_nearest`` (COSINE) with the filter as prefilter in the same
query; keyword search is BM25 over a term index (``firestore_lexical``). Every
query shape is listed in ``firestore_queries`` with the index it needs.
"""

from __future__ import annotations

import functools
import json
import logging
import secrets
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Final, ParamSpec, TypeVar

from google.api_core import exceptions as google_errors
from google.api_core.exceptions import RetryError
from google.auth.exceptions import GoogleAuthError
from google.cloud import firestore
from google.cloud.firestore_v1.base_query import FieldFilter
from google.cloud.firestore_v1.collection import CollectionReference
from google.cloud.firestore_v1.field_path import FieldPath
from google.cloud.firestore_v1.transaction import Transaction

from metacortex.domain.documents import Document
from metacortex.domain.records import (
    DEFAULT_SPACE,
    Attribution,
    BranchState,
    Memory,
    Tombstone,
    new_memory_id,
    utc_now,
)
from metacortex.domain.relations import Relation
from metacortex.errors import ConfigurationError, FailedPrecondition, Unavailable
from metacortex.retrieval.text import forget_texts
from metacortex.storage.base import (
    MAX_ERASE_BATCH,
    DocumentOutcome,
    DocumentWrite,
    EmbeddingIdentity,
    Event,
    InsertOutcome,
    ListOrder,
    MemoryFilter,
    Neighbours,
    PageKey,
    Scored,
)
from metacortex.storage.firestore_codec import (
    FILTER_FIELDS,
    MEMORY_FIELDS,
    OCCURRED_AT,
    SCHEMA_VERSION,
    TERM_COUNT,
    TERM_FREQS,
    decode_event,
    decode_memory,
    decode_record,
    decode_tombstone,
    encode_event,
    encode_fingerprint,
    encode_memory,
    encode_tombstone,
    fields_of,
    storable_id,
    to_stored_time,
    tombstone_space,
)
from metacortex.storage.firestore_documents import FirestoreDocuments
from metacortex.storage.firestore_event_topics import scrub_event_topics
from metacortex.storage.firestore_lexical import (
    COMMON_BUDGET,
    RARE_BUDGET,
    CorpusStats,
    LexicalIndex,
)
from metacortex.storage.firestore_neighbours import assemble, plan
from metacortex.storage.firestore_queries import (
    MAX_DISJUNCTIONS,
    MAX_NEAREST,
    filtered,
    native_filters,
    needs_post_filter,
)
from metacortex.storage.firestore_relations import RELATIONS_SUFFIX, RelationIndex
from metacortex.storage.firestore_relations import encode as encode_relation
from metacortex.storage.firestore_relations import invalidation as relation_invalidation
from metacortex.storage.firestore_vectors import VectorIndex

if TYPE_CHECKING:
    from metacortex.config import Settings
    from metacortex.storage.base import Vector

T = TypeVar("T")
P = ParamSpec("P")

FINGERPRINTS_SUFFIX: Final = "_write_fingerprints"
SPACES_SUFFIX: Final = "_spaces"
META_SUFFIX: Final = "_meta"
AUTH_STATE_SUFFIX: Final = "_auth_state"
ERASED_SUFFIX: Final = "_erased"
# Search fans out up to 2 x context.SOURCES list queries at once over the one channel.
_WORKERS: Final = 48

# Contention: attempts per transaction and the jittered backoff between them (see _run).
_TRANSACTION_ATTEMPTS: Final = 12
_BACKOFF_BASE_S: Final = 0.05
_BACKOFF_CAP_S: Final = 2.0
_BATCH_WRITES: Final = 500

logger = logging.getLogger(__name__)


def _translated(method: Callable[P, T]) -> Callable[P, T]:
    """Firestore failures become domain errors the edge can show safely."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return method(*args, **kwargs)
        except google_errors.FailedPrecondition as error:
            logger.error("Firestore refused a query: %s", error.message)
            if "index" in str(error.message).lower():
                raise FailedPrecondition(
                    "Firestore needs an index that is not deployed or still building; "
                    "deploy firestore.indexes.json and wait until every index is READY"
                ) from None
            raise FailedPrecondition(f"Firestore refused the request: {error.message}") from None
        except (google_errors.PermissionDenied, google_errors.Unauthenticated) as error:
            logger.error(
                "Firestore refused the service's credentials (%s): grant the function's "
                "service account roles/datastore.user on the project (docs/DEPLOYMENT.md)",
                error.message,
            )
            raise Unavailable(
                f"the memory store (Firestore) refused this service's credentials: {error.message}"
            ) from None
        except (google_errors.GoogleAPICallError, RetryError) as error:
            logger.warning("Firestore call failed: %r", error)
            raise Unavailable(f"the memory store (Firestore) is unavailable: {error}") from None

    return wrapper


def _underlying(error: ValueError) -> Exception | None:
    """The Firestore failure behind the transaction wrapper's ValueError, if any.

    The wrapper raises ValueError in two cases that are really Firestore errors:
    attempts exhausted (the last Aborted commit is its ``__cause__``), and a
    transaction that never began (BeginTransaction refused, e.g. PERMISSION_DENIED,
    or unreachable after the client's retries): its rollback then fails with "no
    transaction ID", and the real error is only the ``__context__``.
    """
    for linked in (error.__cause__, error.__context__):
        if isinstance(linked, google_errors.GoogleAPICallError | RetryError):
            return linked
    return None


class _Transaction:
    """``StoreTransaction`` over a Firestore transaction: reads lock, writes wait for commit."""

    def __init__(self, store: FirestoreStore, transaction: Transaction, space: str) -> None:
        self._store = store
        self._transaction = transaction
        self._space = space
        self._read: dict[str, Memory | None] = {}
        self._pending: dict[str, tuple[Memory, Vector | None]] = {}
        self._relations: dict[str, Relation] = {}
        self._invalidations: dict[str, dict[str, Any]] = {}
        self._restated: dict[str, dict[str, Any]] = {}

    def get(self, memory_id: str) -> Memory | None:
        pending = self._pending.get(memory_id)
        if pending is not None:
            return pending[0]
        if memory_id not in self._read:
            self._read[memory_id] = self._store._read_one(memory_id, self._space, self._transaction)
        return self._read[memory_id]

    def get_many(self, memory_ids: Sequence[str]) -> list[Memory | None]:
        """One BatchGetDocuments inside the transaction for every id not read yet."""
        missing = [
            i for i in dict.fromkeys(memory_ids) if i not in self._pending and i not in self._read
        ]
        if missing:
            found = self._store._read_many(missing, self._space, self._transaction)
            for memory_id in missing:
                self._read[memory_id] = found.get(memory_id)
        return [self.get(memory_id) for memory_id in memory_ids]

    def put(self, memory: Memory, embedding: Vector | None = None) -> None:
        if memory.space != self._space:
            raise ValueError(f"a transaction in space {self._space!r} wrote to {memory.space!r}")
        if not storable_id(memory.id):
            raise ValueError(f"{memory.id!r} cannot be a Firestore document id")
        if embedding is None and memory.id not in self._pending and self.get(memory.id) is None:
            raise ValueError(f"a new memory ({memory.id}) needs an embedding")
        previous = self._pending.get(memory.id)
        if embedding is None and previous is not None:
            embedding = previous[1]
        self._pending[memory.id] = (memory, embedding)

    def _restate(self) -> None:
        """Keep the relations' copy of each changed memory's state current: readers
        filter neighbours on it. One query per 30 changed memories, all at once, read
        before any write is buffered (Firestore reads nothing after a write)."""
        changed = {
            memory.id: memory.branch_state.value
            for memory, _ in self._pending.values()
            if (before := self._read.get(memory.id)) is not None
            and before.branch_state is not memory.branch_state
        }
        if not changed:
            return
        for relation, reference in self._store.relations.touching(
            self._space, list(changed), True, self._transaction
        ):
            updates = self._restated.setdefault(reference.id, {})
            if relation.source in changed:
                updates["source_state"] = changed[relation.source]
            if relation.target in changed:
                updates["target_state"] = changed[relation.target]

    def relate(self, relation: Relation) -> None:
        if relation.space != self._space:
            raise ValueError(f"a transaction in space {self._space!r} related {relation.space!r}")
        self._relations[relation.id] = relation

    def invalidate_relation(self, relation_id: str, at: datetime, by: Attribution | None) -> None:
        """Read now (a transaction reads before it writes), written at commit if valid."""
        reference = self._store.relations.collection(self._space).document(relation_id)
        snapshot = reference.get(transaction=self._transaction)
        data = snapshot.to_dict() if snapshot.exists else None
        if data and data.get("invalid_at") is None:
            self._invalidations[relation_id] = relation_invalidation(at, by)

    def apply(self) -> None:
        self._restate()
        for memory, embedding in self._pending.values():
            reference = self._store.memories(memory.space).document(memory.id)
            if embedding is None:
                # update() replaces each named top-level field and keeps `embedding`.
                self._transaction.update(reference, encode_memory(memory, None))
            else:
                self._transaction.set(reference, encode_memory(memory, embedding))
        relations = self._store.relations.collection(self._space)
        for relation in self._relations.values():
            self._transaction.set(relations.document(relation.id), encode_relation(relation))
        for relation_id, changes in self._invalidations.items():
            self._transaction.update(relations.document(relation_id), changes)
        for relation_id, changes in self._restated.items():
            if relation_id in self._relations:
                continue  # written whole above, with the states of this transaction
            self._transaction.update(relations.document(relation_id), changes)


def open_client(settings: Settings) -> firestore.Client:
    """The configured project's client, or a ConfigurationError saying what to set."""
    try:
        return firestore.Client(
            project=settings.google_cloud_project, database=settings.firestore_database
        )
    except (GoogleAuthError, OSError, ValueError) as error:  # no credentials or project
        raise ConfigurationError(
            f"cannot open Firestore: {str(error).rstrip('.')}. Set GOOGLE_CLOUD_PROJECT "
            "and application default credentials (or FIRESTORE_EMULATOR_HOST for the "
            "emulator)."
        ) from error


class FirestoreStore:
    """``MemoryStore`` on Firestore. Thread-safe: the client is, and nothing else is shared."""

    def __init__(
        self,
        client: firestore.Client,
        collection: str = "memory_vectors",
        *,
        nearest_limit: int = MAX_NEAREST,
        lexical_budget: int = RARE_BUDGET,
        common_budget: int = COMMON_BUDGET,
    ) -> None:
        self._client = client
        self._collection = collection
        self._memories = client.collection(collection)
        self._spaces = client.collection(collection + SPACES_SUFFIX)
        self._fingerprints = client.collection(collection + FINGERPRINTS_SUFFIX)
        self._identity_ref = client.collection(collection + META_SUFFIX).document("identity")
        self._auth_state = client.collection(collection + AUTH_STATE_SUFFIX)
        self._erased = client.collection(collection + ERASED_SUFFIX)
        self._executor = ThreadPoolExecutor(
            max_workers=_WORKERS, thread_name_prefix="firestore-store"
        )
        self._lexical = LexicalIndex(self.memories, self._executor, lexical_budget, common_budget)
        self._vectors = VectorIndex(self.memories, self._read_many, nearest_limit)
        self._documents = FirestoreDocuments(
            client,
            collection,
            self._spaces,
            self.memories,
            self._relations_collection,
            self._run,
            self._executor,
        )
        self.relations = RelationIndex(self._relations_collection, self._executor)

    @classmethod
    def from_settings(cls, settings: Settings) -> FirestoreStore:
        client = open_client(settings)
        return cls(client, settings.memory_collection)

    @property
    def collection(self) -> str:
        return self._collection

    def _relations_collection(self, space: str) -> CollectionReference:
        """The collection holding one space's relations (beside its memories)."""
        name = self._collection + RELATIONS_SUFFIX
        if space == DEFAULT_SPACE:
            return self._client.collection(name)
        collection: CollectionReference = self._spaces.document(space).collection(name)
        return collection

    def memories(self, space: str) -> CollectionReference:
        """The collection holding one space's memories (the root one for ``default``)."""
        if space == DEFAULT_SPACE:
            return self._memories
        collection: CollectionReference = self._spaces.document(space).collection(self._collection)
        return collection

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
        # Client.close() releases only the HTTP session; the gRPC channel lives in the
        # lazily built GAPIC client, whose transport has a public close().
        api = getattr(self._client, "_firestore_api_internal", None)
        if api is not None:
            api.transport.close()
        self._client.close()  # type: ignore[no-untyped-call]

    # ----------------------------------------------------------- transactions
    def _run(self, body: Callable[[Transaction], T]) -> T:
        """Run ``body`` in a transaction, again on contention, with jittered backoff.

        Trigger: concurrent transactions that read the same documents and then
        write them (two identical saves, two consolidations of the same sources).
        Why: reads take locks, so such transactions wait on each other until one
        is aborted; the client library retries at once, which lets identical
        contenders collide again in lockstep (the emulator was seen livelocking
        for minutes). Outcome: one attempt per transaction, and a random pause
        that grows with each retry so one contender gets through.
        """
        for attempt in range(_TRANSACTION_ATTEMPTS):
            transaction = self._client.transaction(max_attempts=1)
            try:
                result: T = firestore.transactional(body)(transaction)
                return result
            except google_errors.Aborted as error:  # a read lost a lock conflict
                logger.debug("transaction aborted on read: %s", error)
            except ValueError as error:
                failure = _underlying(error)
                if failure is None:
                    raise
                if not isinstance(failure, google_errors.Aborted):
                    raise failure from None
                logger.debug("transaction aborted: %s", failure)
            ceiling = min(_BACKOFF_CAP_S, _BACKOFF_BASE_S * 2**attempt)
            time.sleep(ceiling * secrets.randbelow(1001) / 1000)
        raise Unavailable(
            "the memory store is busy with concurrent changes to the same records; retry"
        )

    @_translated
    def transaction(self, fn: Callable[[_Transaction], T], *, space: str = DEFAULT_SPACE) -> T:
        def body(transaction: Transaction) -> T:
            adapter = _Transaction(self, transaction, space)
            result = fn(adapter)
            adapter.apply()
            return result

        return self._run(body)

    # -------------------------------------------------------------- identity
    @_translated
    def bind_embedding(self, identity: EmbeddingIdentity, *, replace: bool = False) -> None:
        reference = self._identity_ref

        def body(transaction: Transaction) -> None:
            snapshot = reference.get(transaction=transaction)
            data = snapshot.to_dict() if snapshot.exists else None
            if replace or not data:
                transaction.set(
                    reference,
                    {
                        "model": identity.model,
                        "dimension": identity.dimension,
                        "key": identity.key(),
                        "updated_at": to_stored_time(utc_now()),
                        "schema_version": SCHEMA_VERSION,
                    },
                )
                return
            stored = EmbeddingIdentity(str(data["model"]), int(data["dimension"]))
            if stored != identity:
                raise FailedPrecondition(
                    f"the Firestore collection {self._collection!r} (project "
                    f"{self._client.project!r}) holds vectors from {stored.key()}, but this "
                    f"server is configured for {identity.key()}. Configure {stored.key()} "
                    f"again, or run `metacortex reembed` to re-embed every memory with "
                    f"{identity.key()}."
                )

        self._run(body)

    @_translated
    def recorded_embedding(self) -> EmbeddingIdentity | None:
        snapshot = self._identity_ref.get()
        data = snapshot.to_dict() if snapshot.exists else None
        if not data:
            return None
        return EmbeddingIdentity(str(data["model"]), int(data["dimension"]))

    # ----------------------------------------------------------------- reads
    def _read_one(
        self, memory_id: str, space: str, transaction: Transaction | None = None
    ) -> Memory | None:
        if not storable_id(memory_id):
            return None
        snapshot = (
            self.memories(space)
            .document(memory_id)
            .get(field_paths=MEMORY_FIELDS, transaction=transaction)
        )
        if not snapshot.exists:
            return None
        return decode_record(snapshot.id, snapshot.to_dict() or {}, space)

    def _read_many(
        self, memory_ids: Iterable[str], space: str, transaction: Transaction | None = None
    ) -> dict[str, Memory]:
        """One BatchGetDocuments (in ``transaction`` when given, which locks them)."""
        collection = self.memories(space)
        references = [collection.document(i) for i in dict.fromkeys(memory_ids) if storable_id(i)]
        if not references:
            return {}
        found: dict[str, Memory] = {}
        snapshots = self._client.get_all(
            references, field_paths=MEMORY_FIELDS, transaction=transaction
        )
        for snapshot in snapshots:
            if snapshot.exists:
                found[snapshot.id] = decode_record(snapshot.id, fields_of(snapshot), space)
        return found

    @_translated
    def get(self, memory_id: str, *, space: str = DEFAULT_SPACE) -> Memory | None:
        return self._read_one(memory_id, space)

    @_translated
    def get_many(
        self, memory_ids: Sequence[str], *, space: str = DEFAULT_SPACE
    ) -> list[Memory | None]:
        found = self._read_many(memory_ids, space)
        return [found.get(memory_id) for memory_id in memory_ids]

    @_translated
    def find_duplicate(self, fingerprint: str, not_before: datetime) -> Memory | None:
        snapshot = self._fingerprints.document(fingerprint).get()
        data = snapshot.to_dict() if snapshot.exists else None
        if not data or data["written_at"] <= to_stored_time(not_before):
            return None
        return self._read_one(str(data["memory_id"]), str(data.get("space") or DEFAULT_SPACE))

    # ---------------------------------------------------------------- writes
    @_translated
    def insert(
        self,
        memory: Memory,
        embedding: Vector,
        fingerprint: str,
        not_before: datetime,
        relations: Sequence[Relation] = (),
    ) -> InsertOutcome:
        fingerprint_ref = self._fingerprints.document(fingerprint)
        memory_ref = self.memories(memory.space).document(memory.id)
        cutoff = to_stored_time(not_before)
        # The fingerprint can match only until the window has passed; TTL removes it after.
        expires_at = memory.created_at + max(memory.created_at - not_before, timedelta(0))

        def body(transaction: Transaction) -> InsertOutcome:
            snapshot = fingerprint_ref.get(transaction=transaction)
            data = snapshot.to_dict() if snapshot.exists else None
            if data and data["written_at"] > cutoff:
                existing = self._read_one(
                    str(data["memory_id"]), str(data.get("space") or DEFAULT_SPACE), transaction
                )
                if existing is not None and existing.branch_state is memory.branch_state:
                    return InsertOutcome(existing, created=False)
            transaction.set(memory_ref, encode_memory(memory, embedding))
            for relation in relations:
                reference = self.relations.collection(relation.space).document(relation.id)
                transaction.set(reference, encode_relation(relation))
            transaction.set(
                fingerprint_ref,
                encode_fingerprint(memory.id, memory.created_at, expires_at, memory.space),
            )
            return InsertOutcome(memory, created=True)

        return self._run(body)

    # ---------------------------------------------------------------- search
    @_translated
    def vector_search(self, vector: Vector, where: MemoryFilter, limit: int) -> list[Scored]:
        return self._vectors.search(vector, where, limit)

    @_translated
    def lexical_search(self, terms: Sequence[str], where: MemoryFilter, limit: int) -> list[Scored]:
        return self._lexical.search(terms, where, limit)

    @_translated
    def hybrid_search(
        self,
        vector: Vector,
        terms: Sequence[str],
        where: MemoryFilter,
        limit: int,
        *,
        typos: bool = False,
    ) -> tuple[list[Scored], list[Scored]]:
        """The nearest-neighbour query runs while the term statistics are read; it
        also reads the query terms' frequencies, so that the keyword search need not
        read again the records it already returned (``LexicalIndex.search``). With
        ``typos`` it reads each record's whole term map instead: the vocabulary a
        term no record of the space holds is expanded from (same documents read)."""
        wanted = list(dict.fromkeys(term for term in terms if term))
        frequencies = (
            [TERM_FREQS] if typos else [FieldPath(TERM_FREQS, t).to_api_repr() for t in wanted]
        )
        extra = [TERM_COUNT, *frequencies]
        fields: dict[str, Mapping[str, Any]] = {}
        dense = self._executor.submit(self._vectors.search, vector, where, limit, extra, fields)

        def held() -> Mapping[str, Mapping[str, Any]]:
            dense.result()
            return fields

        lexical = self._lexical.search(wanted, where, limit, held, typos=typos) if wanted else []
        return dense.result(), lexical

    def spelling_corrections(
        self,
        terms: Sequence[str],
        space: str,
        meant: Callable[[str], Mapping[str, int]] | None = None,
    ) -> dict[str, str]:
        """None: Firestore holds no term list to correct a word against before the query
        is embedded (a second embedding and vector query per misspelled search would be
        the price); typos are forgiven on the keyword side only, by expansion from the
        semantic candidates' terms."""
        return {}

    @_translated
    def neighbours(
        self,
        anchors: Sequence[Memory],
        where: MemoryFilter,
        span: int,
        known: Sequence[Memory] = (),
    ) -> dict[str, Neighbours]:
        """Two keyset queries per anchor (older, newer), all in flight at once, each
        ending at a record already in hand where that saves reads
        (``firestore_neighbours``)."""
        unique = list({anchor.id: anchor for anchor in anchors}.values())
        plans = plan(unique, known, where, span)
        jobs = {
            (side.anchor.id, side.newer): self._executor.submit(
                self._page,
                replace(where, topic=side.anchor.topic),
                span,
                PageKey(side.anchor.created_at, side.anchor.id),
                side.newer,
                PageKey(side.bound.created_at, side.bound.id) if side.bound else None,
            )
            for side in plans
        }
        side_of = assemble(plans, {key: job.result() for key, job in jobs.items()}, span)
        return {
            anchor.id: Neighbours(older=side_of(anchor, False), newer=side_of(anchor, True))
            for anchor in unique
        }

    @_translated
    def corpus_statistics(self, terms: Sequence[str], space: str = DEFAULT_SPACE) -> CorpusStats:
        """The BM25 corpus statistics of one space for ``terms``, as stored now (for
        tests and operators)."""
        return self._lexical.statistics(list(dict.fromkeys(terms)), space)

    @_translated
    def list_page(
        self,
        where: MemoryFilter,
        limit: int,
        after: PageKey | None,
        *,
        oldest_first: bool = False,
        order: ListOrder = "created",
    ) -> list[Memory]:
        return self._page(where, limit, after, oldest_first, order=order)

    def _page(
        self,
        where: MemoryFilter,
        limit: int,
        after: PageKey | None,
        oldest_first: bool,
        until: PageKey | None = None,
        order: ListOrder = "created",
    ) -> list[Memory]:
        """Keyset pages on (created_at, document id), strictly between ``after`` and
        ``until`` when given; filters run in the query except ``valid_at``, which is
        checked after it while more pages are read until ``limit`` records passed
        or none remain. ``order`` = ``occurred``: on (occurred_at, document id), the
        occurrence range in the query and the creation range checked after (records
        written before memories kept ``occurred_at`` have no such field: Firestore
        leaves them out of this order)."""
        if limit <= 0:
            return []
        by_occurrence = order == "occurred"
        key = OCCURRED_AT if by_occurrence else "created_at"
        direction = "ASCENDING" if oldest_first else "DESCENDING"
        native = native_filters(
            where, created_range=not by_occurrence, occurred_range=by_occurrence
        )
        query = (
            filtered(self.memories(where.space), native)
            .order_by(key, direction=direction)
            .order_by(FieldPath.document_id(), direction=direction)
            .select(list(MEMORY_FIELDS))
        )
        if until is not None:
            query = query.end_before(
                {key: to_stored_time(until.created_at), FieldPath.document_id(): until.id}
            )
        post_filter = needs_post_filter(
            where, created_range=not by_occurrence, occurred_range=by_occurrence
        )
        batch = max(limit, 50) if post_filter else limit
        cursor: tuple[datetime, str] | None = (
            (to_stored_time(after.created_at), after.id) if after is not None else None
        )
        page: list[Memory] = []
        while len(page) < limit:
            current = query
            if cursor is not None:
                current = current.start_after({key: cursor[0], FieldPath.document_id(): cursor[1]})
            snapshots = list(current.limit(batch).stream())
            for snapshot in snapshots:
                memory = decode_memory(snapshot.id, fields_of(snapshot), where.space)
                if not post_filter or where.matches(memory):
                    page.append(memory)
                    if len(page) == limit:
                        break
            if len(snapshots) < batch:
                break
            last = snapshots[-1]
            cursor = ((last.to_dict() or {})[key], last.id)
        return page

    # ---------------------------------------------------------------- events
    @_translated
    def record_events(self, events: Sequence[Event]) -> None:
        for start in range(0, len(events), _BATCH_WRITES):
            batch = self._client.batch()
            for event in events[start : start + _BATCH_WRITES]:
                # Ids from new_memory_id sort by recording time (strictly, within a process).
                reference = self._client.collection(event.collection).document(new_memory_id())
                batch.set(reference, encode_event(event))
            batch.commit()

    @_translated
    def read_events(
        self, collection: str, limit: int = 1000, *, since: datetime | None = None
    ) -> list[dict[str, Any]]:
        events = self._client.collection(collection)
        if since is None:
            query = events.order_by(FieldPath.document_id()).limit(limit)
        else:
            # Single-field range and order on one field: Firestore's automatic index.
            query = (
                events.where(filter=FieldFilter("timestamp", ">=", to_stored_time(since)))
                .order_by("timestamp")
                .limit(limit)
            )
        return [decode_event(snapshot.to_dict() or {}) for snapshot in query.stream()]

    @_translated
    def topic_counts(self, *, space: str = DEFAULT_SPACE) -> dict[str, dict[BranchState, int]]:
        # A projection of two small fields: the owner's console reads it, not the tools.
        counts: dict[str, dict[BranchState, int]] = {}
        fields = ["module_name", "branch_state"]
        for snapshot in self.memories(space).select(fields).stream():
            data = snapshot.to_dict() or {}
            state = BranchState(data.get("branch_state") or BranchState.ACTIVE.value)
            by_state = counts.setdefault(str(data.get("module_name") or ""), {})
            by_state[state] = by_state.get(state, 0) + 1
        return dict(sorted(counts.items()))

    @_translated
    def count_memories(self, where: MemoryFilter) -> int:
        """A count aggregation (one round trip); with ``valid_at``, which Firestore cannot
        express, a projection of the filter fields of every candidate instead."""
        query = filtered(self.memories(where.space), native_filters(where, created_range=True))
        if not needs_post_filter(where, created_range=True):
            aggregation: Any = query.count()  # the client's stubs mistype count()
            return int(aggregation.get()[0][0].value)
        return sum(
            where.matches(decode_memory(snapshot.id, fields_of(snapshot), where.space))
            for snapshot in query.select(list(FILTER_FIELDS)).stream()
        )

    @_translated
    def superseded_by_any(
        self, memory_ids: Sequence[str], *, space: str = DEFAULT_SPACE
    ) -> list[Memory]:
        """One ``in`` query per 30 ids, all at once (the single-field index serves it)."""
        wanted = [memory_id for memory_id in dict.fromkeys(memory_ids) if storable_id(memory_id)]
        return self._records_naming("superseded_by", "in", wanted, space)

    def _records_naming(
        self, field: str, operator: str, ids: list[str], space: str
    ) -> list[Memory]:
        """The records of a space whose ``field`` names one of ``ids`` (``operator``:
        ``in`` or ``array_contains_any``), one query per 30 ids, all at once; by
        (created_at, id)."""
        collection = self.memories(space)
        queries = [
            collection.where(filter=FieldFilter(field, operator, chunk)).select(list(MEMORY_FIELDS))
            for chunk in _chunks(ids, MAX_DISJUNCTIONS)
        ]
        found: dict[str, Memory] = {}
        for snapshots in self._executor.map(lambda q: list(q.stream()), queries):
            for snapshot in snapshots:
                found[snapshot.id] = decode_memory(snapshot.id, fields_of(snapshot), space)
        return sorted(found.values(), key=lambda m: (m.created_at, m.id))

    # ----------------------------------------------------------------- erase
    @_translated
    def erase(
        self,
        memory_ids: Sequence[str],
        erased_by: str,
        erased_at: datetime,
        *,
        space: str = DEFAULT_SPACE,
    ) -> list[str]:
        """One transaction: the records and the fingerprints pointing at them are read
        together (one round trip), then deleted with the tombstones written at commit."""
        wanted = list(dict.fromkeys(memory_ids))
        if len(wanted) > MAX_ERASE_BATCH:
            raise ValueError(f"erase takes at most {MAX_ERASE_BATCH} ids at a time")
        wanted = [memory_id for memory_id in wanted if storable_id(memory_id)]
        if not wanted:
            return []
        collection = self.memories(space)
        records = [collection.document(memory_id) for memory_id in wanted]
        topics: set[str] = set()

        def body(transaction: Transaction) -> list[str]:
            pointing = [
                self._executor.submit(self._fingerprints_of, chunk, transaction)
                for chunk in _chunks(wanted, MAX_DISJUNCTIONS)
            ]
            # Relations touching an erased memory hold its summary: they go with it
            # (asked at once with the rest; those of ids not stored touch nothing).
            linked = self._executor.submit(
                self.relations.touching, space, wanted, True, transaction
            )
            present = {
                snapshot.id: snapshot.to_dict() or {}
                for snapshot in self._client.get_all(
                    records, field_paths=["branch_state", "module_name"], transaction=transaction
                )
                if snapshot.exists
            }
            fingerprints = [ref for future in pointing for ref in future.result()]
            erased = [memory_id for memory_id in wanted if memory_id in present]
            touching = linked.result()
            topics.clear()
            for memory_id in erased:
                fields = present[memory_id]
                topics.add(str(fields.get("module_name") or ""))
                tombstone = encode_tombstone(
                    erased_by, erased_at, fields.get("branch_state"), space
                )
                transaction.delete(collection.document(memory_id))
                transaction.set(self._erased.document(memory_id), tombstone)
            for memory_id, reference in fingerprints:
                if memory_id in present:
                    transaction.delete(reference)
            for _, reference in touching:
                transaction.delete(reference)
            return erased

        erased = self._run(body)
        forget_texts()  # this instance's copies of their words; others keep theirs
        # After the commit (a query inside would lock every event it reads): the names
        # of the topics this erase emptied leave memory_events (storage/event_topics.py).
        ordered = sorted(topics)
        held = self._executor.map(self._holds_topic, ordered)
        emptied = [topic for topic, holds in zip(ordered, held, strict=True) if not holds]
        scrub_event_topics(self._client, emptied, self._executor)
        return erased

    def _holds_topic(self, topic: str) -> bool:
        """Whether any space still holds a memory of ``topic`` (its name then stays in
        the events: the store shows it anyway): one collection-group query over every
        space's collection (they share the collection id)."""
        query = (
            self._client.collection_group(self._collection)
            .where(filter=FieldFilter("module_name", "==", topic))
            .limit(1)
        )
        return any(True for _ in query.select([]).stream())

    def _fingerprints_of(
        self, memory_ids: Sequence[str], transaction: Transaction
    ) -> list[tuple[str, Any]]:
        """(memory id, reference) of every write fingerprint pointing at these records."""
        query = self._fingerprints.where(filter=FieldFilter("memory_id", "in", list(memory_ids)))
        return [
            (str((snapshot.to_dict() or {}).get("memory_id")), snapshot.reference)
            for snapshot in query.stream(transaction=transaction)
        ]

    @_translated
    def tombstones(
        self, memory_ids: Sequence[str], *, space: str = DEFAULT_SPACE
    ) -> dict[str, Tombstone]:
        references = [self._erased.document(i) for i in dict.fromkeys(memory_ids) if storable_id(i)]
        if not references:
            return {}
        return {
            snapshot.id: decode_tombstone(snapshot.id, fields_of(snapshot))
            for snapshot in self._client.get_all(references)
            if snapshot.exists and tombstone_space(fields_of(snapshot)) == space
        }

    @_translated
    def derived_from_any(
        self, memory_ids: Sequence[str], *, space: str = DEFAULT_SPACE
    ) -> list[Memory]:
        """One ``array_contains_any`` query per 30 ids, all at once."""
        return self._records_naming(
            "derived_from", "array_contains_any", list(dict.fromkeys(memory_ids)), space
        )

    @_translated
    def move(self, memory_id: str, from_space: str, to_space: str) -> Memory | None:
        """One transaction: read the document (vector included), write it in the other
        space's collection, delete it and the fingerprints pointing at it."""
        if not storable_id(memory_id):
            return None
        source = self.memories(from_space).document(memory_id)
        target = self.memories(to_space).document(memory_id)

        def body(transaction: Transaction) -> Memory | None:
            pointing = self._fingerprints_of([memory_id], transaction)
            linked = self.relations.touching(from_space, [memory_id], False, transaction)
            snapshot = source.get(transaction=transaction)
            if not snapshot.exists:
                return None
            data = {**(snapshot.to_dict() or {}), "space": to_space}
            transaction.set(target, data)
            transaction.delete(source)
            for _, reference in pointing:
                transaction.delete(reference)
            # Relations never cross a space: those it had stay behind, invalidated.
            for _, reference in linked:
                transaction.update(reference, relation_invalidation(utc_now(), None))
            return decode_record(memory_id, data, to_space)

        return self._run(body)

    # ------------------------------------------------------------- documents
    # firestore_documents.py: versions, their text and bytes in parts, the write in steps.
    @_translated
    def add_document(self, write: DocumentWrite) -> DocumentOutcome:
        return self._documents.add(write)

    @_translated
    def get_document(self, document_id: str, *, space: str = DEFAULT_SPACE) -> Document | None:
        return self._documents.get(document_id, space)

    @_translated
    def find_document(
        self, *, space: str = DEFAULT_SPACE, sha256: str | None = None, source: str | None = None
    ) -> Document | None:
        return self._documents.find(space, sha256, source)

    @_translated
    def list_documents(
        self, limit: int, after: PageKey | None, *, space: str = DEFAULT_SPACE
    ) -> list[Document]:
        return self._documents.page(space, limit, after)

    @_translated
    def document_text(
        self, document_id: str, start: int, end: int, *, space: str = DEFAULT_SPACE
    ) -> str:
        return self._documents.text(document_id, start, end, space)

    @_translated
    def document_bytes(self, document_id: str, *, space: str = DEFAULT_SPACE) -> bytes | None:
        return self._documents.data(document_id, space)

    @_translated
    def document_passages(self, document_id: str, *, space: str = DEFAULT_SPACE) -> list[Memory]:
        return self._documents.passages(document_id, space)

    @_translated
    def passage_neighbours(self, anchor: Memory, where: MemoryFilter, span: int) -> Neighbours:
        """The two sides at once (two queries in flight)."""
        older = self._executor.submit(self._documents.beside, anchor, where, span, after=False)
        newer = self._documents.beside(anchor, where, span, after=True)
        return Neighbours(older=older.result(), newer=newer)

    @_translated
    def remove_document(self, document_id: str, *, space: str = DEFAULT_SPACE) -> bool:
        return self._documents.remove(document_id, space)

    @_translated
    def document_versions(
        self, *, space: str = DEFAULT_SPACE, topic: str | None = None, erasing: bool = False
    ) -> list[Document]:
        return self._documents.versions(space, topic, erasing)

    @_translated
    def count_documents(self, *, space: str = DEFAULT_SPACE) -> int:
        return self._documents.count(space)

    @_translated
    def mark_erasing(self, document_ids: Sequence[str], *, space: str = DEFAULT_SPACE) -> None:
        if len(document_ids) > MAX_ERASE_BATCH:
            raise ValueError(f"mark_erasing takes at most {MAX_ERASE_BATCH} ids at a time")
        self._documents.mark_erasing(document_ids, space)

    # ------------------------------------------------------------- relations
    @_translated
    def relate(self, relations: Sequence[Relation]) -> None:
        for start in range(0, len(relations), _BATCH_WRITES):
            batch = self._client.batch()
            for relation in relations[start : start + _BATCH_WRITES]:
                reference = self.relations.collection(relation.space).document(relation.id)
                batch.set(reference, encode_relation(relation))
            batch.commit()

    @_translated
    def invalidate_relations(
        self,
        relation_ids: Sequence[str],
        at: datetime,
        by: Attribution | None,
        *,
        space: str = DEFAULT_SPACE,
    ) -> list[str]:
        collection = self.relations.collection(space)
        references = [collection.document(i) for i in dict.fromkeys(relation_ids)]
        if not references:
            return []

        def body(transaction: Transaction) -> list[str]:
            valid = [
                snapshot.id
                for snapshot in self._client.get_all(
                    references, field_paths=["invalid_at"], transaction=transaction
                )
                if snapshot.exists and (snapshot.to_dict() or {}).get("invalid_at") is None
            ]
            for relation_id in valid:
                transaction.update(collection.document(relation_id), relation_invalidation(at, by))
            return valid

        return self._run(body)

    @_translated
    def relations_of(
        self,
        memory_ids: Sequence[str],
        *,
        space: str = DEFAULT_SPACE,
        include_invalid: bool = False,
    ) -> list[Relation]:
        if not memory_ids:
            return []
        return [
            relation for relation, _ in self.relations.touching(space, memory_ids, include_invalid)
        ]

    # ----------------------------------------------------------- OAuth state
    def _auth_ref(self, kind: str, key: str) -> Any:
        return self._auth_state.document(f"{kind}:{key}")

    @staticmethod
    def _auth_live(snapshot: Any) -> dict[str, Any] | None:
        if not snapshot.exists:
            return None
        stored = snapshot.to_dict() or {}
        expires_at = stored.get("expires_at")
        if expires_at is not None and expires_at <= utc_now():
            return None  # the TTL deletes it eventually; until then it is gone to us
        return stored

    @_translated
    def auth_put(
        self, kind: str, key: str, data: Mapping[str, Any], expires_at: datetime | None
    ) -> None:
        self._auth_ref(kind, key).set(
            {
                "kind": kind,
                "key": key,
                "data": json.dumps(dict(data)),
                "expires_at": expires_at,
                "consumed": False,
            }
        )

    @_translated
    def auth_get(self, kind: str, key: str) -> dict[str, Any] | None:
        stored = self._auth_live(self._auth_ref(kind, key).get())
        return None if stored is None else dict(json.loads(stored["data"]))

    @_translated
    def auth_consume(
        self, kind: str, key: str, mark: Mapping[str, Any] | None = None
    ) -> tuple[dict[str, Any], bool] | None:
        reference = self._auth_ref(kind, key)

        def body(transaction: Transaction) -> tuple[dict[str, Any], bool] | None:
            stored = self._auth_live(reference.get(transaction=transaction))
            if stored is None:
                return None
            data = dict(json.loads(stored["data"]))
            first = not stored.get("consumed", False)
            if first:
                update: dict[str, Any] = {"consumed": True}
                if mark:
                    update["data"] = json.dumps({**data, **mark})
                transaction.update(reference, update)
            return data, first

        return self._run(body)

    @_translated
    def auth_delete(self, kind: str, key: str) -> bool:
        reference = self._auth_ref(kind, key)

        def body(transaction: Transaction) -> bool:
            existed = self._auth_live(reference.get(transaction=transaction)) is not None
            transaction.delete(reference)
            return existed

        return self._run(body)

    @_translated
    def auth_list(self, kind: str) -> list[tuple[str, dict[str, Any]]]:
        query = self._auth_state.where(filter=FieldFilter("kind", "==", kind))
        found: list[tuple[str, dict[str, Any]]] = []
        for snapshot in query.stream():
            stored = self._auth_live(snapshot)
            if stored is not None:
                found.append((str(stored["key"]), dict(json.loads(stored["data"]))))
        return sorted(found, key=lambda item: item[0])

    @_translated
    def auth_create(
        self, kind: str, key: str, data: Mapping[str, Any], expires_at: datetime | None
    ) -> bool:
        reference = self._auth_ref(kind, key)

        def body(transaction: Transaction) -> bool:
            if self._auth_live(reference.get(transaction=transaction)) is not None:
                return False
            transaction.set(
                reference,
                {
                    "kind": kind,
                    "key": key,
                    "data": json.dumps(dict(data)),
                    "expires_at": expires_at,
                    "consumed": False,
                },
            )
            return True

        return self._run(body)

    @_translated
    def auth_update(self, kind: str, key: str, changes: Mapping[str, Any]) -> dict[str, Any] | None:
        reference = self._auth_ref(kind, key)

        def body(transaction: Transaction) -> dict[str, Any] | None:
            stored = self._auth_live(reference.get(transaction=transaction))
            if stored is None:
                return None
            updated = {**json.loads(stored["data"]), **changes}
            transaction.update(reference, {"data": json.dumps(updated)})
            return updated

        return self._run(body)

    @_translated
    def auth_extend(self, kind: str, key: str, expires_at: datetime) -> bool:
        # ``update`` writes only this field and fails on a missing document: one Commit.
        try:
            self._auth_ref(kind, key).update({"expires_at": expires_at})
        except google_errors.NotFound:
            return False
        return True


def _chunks(values: Sequence[str], size: int) -> list[list[str]]:
    return [list(values[start : start + size]) for start in range(0, len(values), size)]
