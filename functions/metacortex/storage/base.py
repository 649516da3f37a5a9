"""The storage Protocol every backend implements, and the values it speaks in.

The service owns every rule; a store owns atomicity, filtering and indexing.
Stores are synchronous and thread-safe: the async edge calls them in worker
threads. One contract suite (``tests/contract``) runs against every backend.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias, TypeVar

from metacortex.domain.documents import Document
from metacortex.domain.records import (
    DEFAULT_SPACE,
    Attribution,
    BranchState,
    Memory,
    Origin,
    Tombstone,
)
from metacortex.domain.relations import Relation

if TYPE_CHECKING:  # numpy loads with the first backend or model, not with the Protocol
    import numpy as np
    import numpy.typing as npt

    Vector: TypeAlias = npt.NDArray[np.float32]
T = TypeVar("T")

# The most ids one ``MemoryStore.erase`` call takes (one transaction): a Firestore
# commit holds at most 500 writes, and each erased record is up to three of them
# (the record, its write fingerprint, its tombstone).
MAX_ERASE_BATCH = 100


@dataclass(frozen=True, slots=True)
class EmbeddingIdentity:
    """Which model produced a store's vectors; a mismatch refuses to open."""

    model: str
    dimension: int

    def key(self) -> str:
        return f"{self.model}:{self.dimension}"


@dataclass(frozen=True, slots=True)
class MemoryFilter:
    """Filters applied inside the store query, before ranking or paging.

    ``space`` is the one space searched or listed: nothing ever crosses it (the
    use cases name it every time; the default is for tests and tools on a store
    of one space). ``states`` is never empty. ``valid_at`` keeps records valid at
    that instant (valid_from <= t < valid_until, open ends allowed) and drops
    records whose supersession_reason is ``corrected``. ``created_after`` is
    inclusive, ``created_before`` exclusive. ``occurred_after`` (inclusive) and
    ``occurred_before`` (exclusive) bound when a record happened: the start of its
    ``Memory.occurrence`` (the instant, or the first instant of its day, week, month or
    year; when it was saved for a record that keeps no time of its own).
    """

    states: tuple[BranchState, ...]
    topic: str | None = None
    space: str = DEFAULT_SPACE
    origin: Origin | None = None
    valid_at: datetime | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    occurred_after: datetime | None = None
    occurred_before: datetime | None = None

    def matches(self, memory: Memory) -> bool:
        """Reference semantics; stores may filter natively but must agree with this."""
        if memory.space != self.space or memory.branch_state not in self.states:
            return False
        if self.topic is not None and memory.topic != self.topic:
            return False
        if self.origin is not None and memory.provenance.origin is not self.origin:
            return False
        if self.valid_at is not None and not memory.is_valid_at(self.valid_at):
            return False
        if self.created_after is not None and memory.created_at < self.created_after:
            return False
        if self.created_before is not None and memory.created_at >= self.created_before:
            return False
        if self.occurred_after is None and self.occurred_before is None:
            return True
        at = memory.occurrence.at
        if self.occurred_after is not None and at < self.occurred_after:
            return False
        return not (self.occurred_before is not None and at >= self.occurred_before)


# What a listing is ordered by: when records were saved, or when they happened (the
# start of ``Memory.occurrence``).
ListOrder: TypeAlias = Literal["created", "occurred"]


@dataclass(frozen=True, slots=True)
class PageKey:
    """Keyset position for newest-first listing: order is (created_at desc, id desc).
    In a listing by occurrence, ``created_at`` holds the start of the record's
    ``Memory.occurrence`` instead (the instant the order is by)."""

    created_at: datetime
    id: str


@dataclass(frozen=True, slots=True)
class TermStats:
    """A record's analyzed term stream as the keyword index holds it: its length (BM25's
    document length) and how often each of the query's terms occurs in it (a query term
    not listed occurs 0 times). Lets ranking use what the store already has instead of
    analyzing (stemming) every candidate's text again."""

    length: int
    freqs: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class Scored:
    """``terms``: set by keyword search (``None``: ranking analyzes the text itself)."""

    memory: Memory
    score: float
    terms: TermStats | None = None


@dataclass(frozen=True, slots=True)
class Neighbours:
    """Records next to an anchor in write order, nearest first on each side."""

    older: list[Memory]
    newer: list[Memory]


@dataclass(frozen=True, slots=True)
class InsertOutcome:
    memory: Memory
    created: bool


@dataclass(frozen=True, slots=True)
class Event:
    """One row of ``memory_events`` or ``retrieval_query_events``."""

    collection: str
    timestamp: datetime
    expires_at: datetime | None
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DocumentWrite:
    """Everything ``MemoryStore.add_document`` writes, as one change.

    ``passages``: the new passages (records of origin ``document`` naming ``document``)
    with their vectors. A new version of ``previous`` also carries ``kept``: the previous
    version's passages whose content is unchanged, their ``document`` reference moved to
    this version (not embedded again: the stored vector stays), and ``retired``: the
    previous version's other passages, deprecated. ``previous`` is then marked superseded
    by ``document``.

    ``relations``: the passages' ``part_of`` and ``next`` to store as given, with the
    passages (``usecases/passage_relations.py``: new ones, and the previous version's
    invalidated); ``relations_before``: how those of them already stored are now, for a
    store that writes in several steps to put back when the document fails."""

    document: Document
    data: bytes
    text: str
    passages: Sequence[tuple[Memory, Vector]] = ()
    kept: Sequence[Memory] = ()
    retired: Sequence[Memory] = ()
    previous: Document | None = None
    relations: Sequence[Relation] = ()
    relations_before: Sequence[Relation] = ()

    def previous_version(self) -> Document:
        """The version the retired passages belong to (there is one when any is retired)."""
        if self.previous is None:
            raise ValueError("retired passages need the version they belong to (previous)")
        return self.previous


def checked_relations(write: DocumentWrite) -> Sequence[Relation]:
    """The write's relations, each of the document's space (relations never cross one)."""
    space = write.document.space
    for relation in write.relations:
        if relation.space != space:
            raise ValueError(f"a document of space {space!r} related {relation.space!r}")
    return write.relations


@dataclass(frozen=True, slots=True)
class DocumentOutcome:
    """``created``: False when a current document of the space already had these bytes
    (it is ``document`` then, and nothing was written)."""

    document: Document
    created: bool


class StoreTransaction(Protocol):
    """Reads see committed state; writes are buffered and applied atomically at commit.

    A transaction acts in one space (``MemoryStore.transaction(fn, space=...)``): it
    reads that space's records and may write only records of that space.
    Backends may re-run the whole transaction function on contention, so the
    function must be free of side effects outside the transaction.
    """

    def get(self, memory_id: str) -> Memory | None: ...

    def get_many(self, memory_ids: Sequence[str]) -> list[Memory | None]:
        """``get`` of each id, in order, read together (one round trip where the
        backend has one)."""
        ...

    def put(self, memory: Memory, embedding: Vector | None = None) -> None:
        """Create or replace a record. ``embedding`` is required for a new record;
        None on an existing one keeps its vector."""
        ...

    def relate(self, relation: Relation) -> None:
        """Create the relation (or revive one of the same id) with the transaction's writes."""
        ...

    def invalidate_relation(self, relation_id: str, at: datetime, by: Attribution | None) -> None:
        """Mark the relation invalid at commit, if it exists and is valid."""
        ...


class MemoryStore(Protocol):
    def bind_embedding(self, identity: EmbeddingIdentity, *, replace: bool = False) -> None:
        """Record the identity on a new store, or raise FailedPrecondition naming both
        identities when the store's vectors came from another model/dimension.

        ``replace=True`` overwrites the recorded identity; only ``reembed`` uses it,
        after every vector was rewritten with the new model."""
        ...

    def recorded_embedding(self) -> EmbeddingIdentity | None:
        """The identity ``bind_embedding`` recorded, or None on a store that has none
        (a new store, or a corpus another program wrote). Reads only."""
        ...

    # Every method that reads or writes records acts in one space: ``where.space``, a
    # record's ``space``, or the ``space`` argument. A record of another space does not
    # exist for the call (``get`` returns None). The default is the space ``default``.

    def get(self, memory_id: str, *, space: str = DEFAULT_SPACE) -> Memory | None: ...

    def get_many(
        self, memory_ids: Sequence[str], *, space: str = DEFAULT_SPACE
    ) -> list[Memory | None]:
        """``get`` of each id, in order, read together (one round trip where the
        backend has one)."""
        ...

    def find_duplicate(self, fingerprint: str, not_before: datetime) -> Memory | None:
        """The record a fingerprint was written to strictly after ``not_before``, if any
        (a fingerprint names its space: ``domain.fingerprint``)."""
        ...

    def insert(
        self,
        memory: Memory,
        embedding: Vector,
        fingerprint: str,
        not_before: datetime,
        relations: Sequence[Relation] = (),
    ) -> InsertOutcome:
        """Atomically: if ``fingerprint`` maps to a record written strictly after
        ``not_before`` whose state is still ``memory.branch_state``, return it with
        created=False (writing nothing); otherwise store ``memory`` with ``relations``
        (the links the save asserted from it) and point the fingerprint at it, all in one
        transaction, so a save is never left without its relations."""
        ...

    def transaction(
        self, fn: Callable[[StoreTransaction], T], *, space: str = DEFAULT_SPACE
    ) -> T: ...

    def vector_search(self, vector: Vector, where: MemoryFilter, limit: int) -> list[Scored]:
        """Top ``limit`` by cosine similarity among records matching ``where``."""
        ...

    def lexical_search(self, terms: Sequence[str], where: MemoryFilter, limit: int) -> list[Scored]:
        """Top ``limit`` by BM25 over ``retrieval_text`` among records matching ``where``.

        ``terms`` are already normalized by ``metacortex.retrieval.text.terms``;
        a record matches when it contains any of them. Higher score is better."""
        ...

    def hybrid_search(
        self,
        vector: Vector,
        terms: Sequence[str],
        where: MemoryFilter,
        limit: int,
        *,
        typos: bool = False,
    ) -> tuple[list[Scored], list[Scored]]:
        """``vector_search`` and ``lexical_search`` (skipped when ``terms`` is empty),
        concurrently where that saves round trips. ``typos``: a query term no record
        of the space holds is expanded to near terms of the semantic candidates
        (``retrieval/typos.py``), in the same round trips."""
        ...

    def spelling_corrections(
        self,
        terms: Sequence[str],
        space: str,
        meant: Callable[[str], Mapping[str, int]] | None = None,
    ) -> dict[str, str]:
        """Analyzed term -> the word to embed instead, for each of ``terms`` (a query's)
        that no record of ``space`` holds and that is near a term one does, where the
        store can tell cheaply before the query is embedded (SQLite: its in-memory
        vocabulary, ``retrieval/typos.py``'s rules); none elsewhere (Firestore).
        ``meant(term)``: real words the term's typed word may have meant, with their
        distance (``Embedder.words_near``), asked only for a term no record holds;
        one whose term the space holds is the correction before any other."""
        ...

    def neighbours(
        self,
        anchors: Sequence[Memory],
        where: MemoryFilter,
        span: int,
        known: Sequence[Memory] = (),
    ) -> dict[str, Neighbours]:
        """For each anchor (by id): up to ``span`` records each side of it in write
        order, nearest first, among the records of the anchor's topic that match
        ``where`` (its ``topic`` is replaced by the anchor's). The same records as
        ``list_page(where, span, PageKey(anchor.created_at, anchor.id))`` both ways,
        fetched together (one round trip where the backend can). ``known``: records
        the caller already holds, as stored, that match ``where``; a backend may use
        them to read fewer records, never to answer differently."""
        ...

    def list_page(
        self,
        where: MemoryFilter,
        limit: int,
        after: PageKey | None,
        *,
        oldest_first: bool = False,
        order: ListOrder = "created",
    ) -> list[Memory]:
        """Up to ``limit`` records ordered by (created_at, id), descending unless
        ``oldest_first``, strictly after ``after`` in that order; with ``order`` =
        ``occurred``, by (start of ``Memory.occurrence``, id) instead."""
        ...

    def record_events(self, events: Sequence[Event]) -> None: ...

    def read_events(
        self, collection: str, limit: int = 1000, *, since: datetime | None = None
    ) -> list[dict[str, Any]]:
        """The ``fields`` of stored events of one collection, oldest first (at most ``limit``),
        only those recorded at or after ``since`` when given."""
        ...

    def topic_counts(self, *, space: str = DEFAULT_SPACE) -> dict[str, dict[BranchState, int]]:
        """How many records each topic holds, per state (topics with none are absent)."""
        ...

    def count_memories(self, where: MemoryFilter) -> int:
        """How many records match ``where`` (the owner's console shows it beside a page).
        One aggregation where the backend has one; ``valid_at`` may need a projection."""
        ...

    def superseded_by_any(
        self, memory_ids: Sequence[str], *, space: str = DEFAULT_SPACE
    ) -> list[Memory]:
        """Every record whose ``superseded_by`` names one of these ids (what they replaced),
        ordered by (created_at, id)."""
        ...

    # ----------------------------------------------------------------- erase
    # Deprecation keeps lineage; erasure is the owner's exception: the record's
    # content is destroyed and only a tombstone remains (``usecases/erase.py``).

    def erase(
        self,
        memory_ids: Sequence[str],
        erased_by: str,
        erased_at: datetime,
        *,
        space: str = DEFAULT_SPACE,
    ) -> list[str]:
        """In one transaction, for each id that names a stored record (at most
        ``MAX_ERASE_BATCH``): delete the record (content, retrieval text, embedding,
        keyword-index entries) and every write fingerprint pointing at it, and write
        its tombstone. Ids with no record (never stored, or already erased) are
        skipped. Returns the ids erased, in the order given. Every reader sees the
        records gone from its next search on, in any process; the SQLite store also
        scrubs their text from the database file and its WAL."""
        ...

    def tombstones(
        self, memory_ids: Sequence[str], *, space: str = DEFAULT_SPACE
    ) -> dict[str, Tombstone]:
        """The tombstones of those ids that were erased (one round trip where the
        backend has one)."""
        ...

    def derived_from_any(
        self, memory_ids: Sequence[str], *, space: str = DEFAULT_SPACE
    ) -> list[Memory]:
        """Every record whose ``provenance.derived_from`` names one of these ids,
        ordered by (created_at, id)."""
        ...

    def move(self, memory_id: str, from_space: str, to_space: str) -> Memory | None:
        """Move one record, keeping its id, content, vector and lineage, to another
        space (the owner's console): the moved record, or None when ``from_space``
        holds no such record. Every process's next search sees it in its new space."""
        ...

    # ------------------------------------------------------------- documents
    # A document's record, original bytes and extracted text; its passages are records
    # (``Memory.document``). Everything acts in one space, as records do.

    def add_document(self, write: DocumentWrite) -> DocumentOutcome:
        """Write a document, its bytes, its text and its passages so that a failure leaves
        none of them (SQLite: one transaction; Firestore: batches, the document marked
        ``ingesting`` until the last one, undone on failure). When a current document of
        the space already has the same sha256, nothing is written and it is returned
        (created=False). ``Conflict`` when ``write.previous`` is no longer the current
        version of its source, or when another version of the source is being written."""
        ...

    def get_document(self, document_id: str, *, space: str = DEFAULT_SPACE) -> Document | None:
        """One version, current or superseded (a document still being written too)."""
        ...

    def find_document(
        self, *, space: str = DEFAULT_SPACE, sha256: str | None = None, source: str | None = None
    ) -> Document | None:
        """The current (ready, not superseded) document of the space with these bytes, or
        the current version of this source: exactly one of ``sha256`` and ``source``."""
        ...

    def list_documents(
        self, limit: int, after: PageKey | None, *, space: str = DEFAULT_SPACE
    ) -> list[Document]:
        """Current documents of the space, newest first by (created_at, id), strictly
        after ``after`` in that order."""
        ...

    def document_text(
        self, document_id: str, start: int, end: int, *, space: str = DEFAULT_SPACE
    ) -> str:
        """``text[start:end]`` of a document's extracted text ("" past its end), reading
        only what that range needs where the backend can."""
        ...

    def document_bytes(self, document_id: str, *, space: str = DEFAULT_SPACE) -> bytes | None:
        """The original bytes, or None when the document does not exist."""
        ...

    def document_passages(self, document_id: str, *, space: str = DEFAULT_SPACE) -> list[Memory]:
        """Every record whose ``document`` names this document, in every state, in the
        document's order (``document.start``, then id)."""
        ...

    def passage_neighbours(self, anchor: Memory, where: MemoryFilter, span: int) -> Neighbours:
        """Up to ``span`` passages of ``anchor``'s document on each side of it in the
        document's order, nearest first, among the records matching ``where``."""
        ...

    def remove_document(self, document_id: str, *, space: str = DEFAULT_SPACE) -> bool:
        """Delete a document's record, its text and its bytes (the bytes only when no
        other document record holds the same ones); True when it existed. Its passages are
        the caller's to erase first (``erase``: tombstones). The SQLite store also scrubs
        the text from the database file and its WAL, as ``erase`` does."""
        ...

    def document_versions(
        self, *, space: str = DEFAULT_SPACE, topic: str | None = None, erasing: bool = False
    ) -> list[Document]:
        """Every version of the space's documents in every state (being written, ready,
        superseded, being erased), oldest first by (created_at, id); only those of
        ``topic`` when given; only those being erased with ``erasing``. What erasing a
        topic or a space takes whole, and what an erase cut short left to finish."""
        ...

    def count_documents(self, *, space: str = DEFAULT_SPACE) -> int:
        """How many versions the space holds, in every state (one aggregation where the
        backend has one): a space holding any is not empty."""
        ...

    def mark_erasing(self, document_ids: Sequence[str], *, space: str = DEFAULT_SPACE) -> None:
        """Mark these versions (those that exist; at most ``MAX_ERASE_BATCH``) ``erasing``
        in one atomic write: from
        then on none is listed, found by its bytes or source, or shown, and
        ``document_versions(erasing=True)`` finds them until ``remove_document`` takes
        each, so an erase cut short is finished by the next (``usecases/document_erase``)."""
        ...

    # ------------------------------------------------------------- relations
    # Typed links between memories of one space (``domain/relations.py``). Erasing a
    # memory deletes every relation touching it; nothing else deletes one.

    def relate(self, relations: Sequence[Relation]) -> None:
        """Create each relation, or replace the one of the same id (reviving it)."""
        ...

    def invalidate_relations(
        self,
        relation_ids: Sequence[str],
        at: datetime,
        by: Attribution | None,
        *,
        space: str = DEFAULT_SPACE,
    ) -> list[str]:
        """Mark the valid ones among these relations invalid; the ids that were."""
        ...

    def relations_of(
        self,
        memory_ids: Sequence[str],
        *,
        space: str = DEFAULT_SPACE,
        include_invalid: bool = False,
    ) -> list[Relation]:
        """Every (valid) relation of ``space`` with an end among ``memory_ids``, oldest
        first: one read where the backend can (Firestore: one query per 30 ids, all at
        once)."""
        ...

    # ----------------------------------------------------------- OAuth state
    # Small JSON documents of the authorization server and owner sign-in
    # (``metacortex.auth``, ``metacortex.owner``), addressed by (kind, key). Keys of
    # secrets are their sha256, never the secret. A record past ``expires_at`` is
    # never returned (Firestore also deletes it by TTL, SQLite prunes on write).

    def auth_put(
        self, kind: str, key: str, data: Mapping[str, Any], expires_at: datetime | None
    ) -> None:
        """Create or replace a record (and reset its consumed mark)."""
        ...

    def auth_get(self, kind: str, key: str) -> dict[str, Any] | None: ...

    def auth_consume(
        self, kind: str, key: str, mark: Mapping[str, Any] | None = None
    ) -> tuple[dict[str, Any], bool] | None:
        """Atomically mark a record consumed: (data, True) the first time, (data, False)
        on every later call (a replay), None when absent or expired. ``mark``'s fields
        are merged into the data by the first consumption only, in the same atomic
        step; later calls return the data with them (what answered the first use)."""
        ...

    def auth_delete(self, kind: str, key: str) -> bool:
        """Remove a record; True when it existed."""
        ...

    def auth_list(self, kind: str) -> list[tuple[str, dict[str, Any]]]:
        """Every unexpired record of a kind, as (key, data), ordered by key."""
        ...

    def auth_create(
        self, kind: str, key: str, data: Mapping[str, Any], expires_at: datetime | None
    ) -> bool:
        """Create a record unless a live one has this (kind, key): True when created,
        False (nothing written) when one exists. An expired record is replaced. Of two
        concurrent creates of one key, exactly one wins."""
        ...

    def auth_update(self, kind: str, key: str, changes: Mapping[str, Any]) -> dict[str, Any] | None:
        """Atomically merge ``changes`` into a live record's data, keeping its expiry and
        consumed mark: the new data, or None (nothing written) when the record is absent
        or expired. Unlike ``auth_get`` then ``auth_put``, it never brings back a record
        deleted in between (a paused client removed meanwhile stays removed)."""
        ...

    def auth_extend(self, kind: str, key: str, expires_at: datetime) -> bool:
        """Move a stored record's expiry, leaving its data and consumed mark as they are:
        True when it was there. It never creates a record, so a record deleted after the
        caller read it stays deleted, and a change made to its data meanwhile (a grant
        paused) stays too. One write, no read, so it cannot tell an expired record the
        store has not deleted yet from a live one: extend only a record just read live
        (an OAuth grant at each refresh)."""
        ...

    def close(self) -> None: ...
