"""The SQLite store's search paths built for large corpora (issue 23).

The vector mirror loads a store in chunks of columns and scores either the
matching rows or the whole matrix; keyword search ranks on a covering index
added by schema migration 5. Each must give what a plain reading of the
records gives.
"""

from __future__ import annotations

import sqlite3
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from metacortex.domain.records import (
    BranchState,
    Memory,
    Modality,
    Origin,
    Provenance,
    SupersessionReason,
)
from metacortex.retrieval.text import terms
from metacortex.storage.base import (
    MAX_ERASE_BATCH,
    EmbeddingIdentity,
    MemoryFilter,
    StoreTransaction,
)
from metacortex.storage.sqlite import SQLiteStore
from metacortex.storage.sqlite_mirror_rows import CHUNK, Changes, changes, everything
from metacortex.storage.sqlite_schema import LATEST_VERSION, MIGRATIONS
from metacortex.storage.sqlite_vectors import (
    NO_LOWER,
    NO_UPPER,
    NONE,
    STATE_CODES,
    VectorMirror,
    VectorRows,
)

DIMENSION = 16
TOPICS = 5
START = datetime(2025, 1, 1, tzinfo=UTC)
WORDS = ("alpha", "beta", "gamma", "delta", "omega", "kappa", "sigma")


def _memory(index: int, state: BranchState = BranchState.ACTIVE) -> Memory:
    at = START + timedelta(minutes=index)
    text = f"note {index} " + " ".join(WORDS[(index * k) % len(WORDS)] for k in (1, 3))
    return Memory(
        id=f"m-{index:05d}",
        content=text,
        retrieval_text=text,
        topic=f"topic-{index % TOPICS}",
        branch_state=state,
        modality=Modality.TEXT,
        created_at=at,
        updated_at=at,
    )


def _vectors(count: int) -> npt.NDArray[np.float32]:
    vectors = np.random.default_rng(23).standard_normal((count, DIMENSION)).astype(np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True).astype(np.float32)
    return np.asarray(vectors / norms, dtype=np.float32)


def _filled(path: Path, count: int) -> tuple[SQLiteStore, list[Memory], npt.NDArray[np.float32]]:
    store = SQLiteStore(path)
    store.bind_embedding(EmbeddingIdentity("test", DIMENSION))
    memories = [
        _memory(i, BranchState.WIP if i % 7 == 0 else BranchState.ACTIVE) for i in range(count)
    ]
    vectors = _vectors(count)

    def write(txn: StoreTransaction) -> None:
        for memory, vector in zip(memories, vectors, strict=True):
            txn.put(memory, vector)

    store.transaction(write)
    return store, memories, vectors


def _expected(
    memories: list[Memory],
    vectors: npt.NDArray[np.float32],
    query: npt.NDArray[np.float32],
    where: MemoryFilter,
    limit: int,
) -> list[str]:
    scored = [
        (-float(vector @ query), index, memory.id)
        for index, (memory, vector) in enumerate(zip(memories, vectors, strict=True))
        if where.matches(memory)
    ]
    return [memory_id for _, _, memory_id in sorted(scored)[:limit]]


@pytest.mark.parametrize(
    "where",
    [
        MemoryFilter(states=(BranchState.ACTIVE,)),  # most rows: one product over all
        MemoryFilter(states=(BranchState.ACTIVE, BranchState.WIP)),
        MemoryFilter(states=(BranchState.ACTIVE,), topic="topic-3"),  # a fifth: gathered
        MemoryFilter(states=(BranchState.WIP,)),
        MemoryFilter(states=(BranchState.ACTIVE,), topic="no-such-topic"),
    ],
)
def test_vector_search_ranks_the_matching_records_as_a_plain_cosine_ranking(
    tmp_path: Path, where: MemoryFilter
) -> None:
    store, memories, vectors = _filled(tmp_path / "m.sqlite3", 300)
    try:
        for query in _vectors(4):
            found = [hit.memory.id for hit in store.vector_search(query, where, 25)]
            assert found == _expected(memories, vectors, query, where, 25)
    finally:
        store.close()


def _mirror_rows(spaces: list[str], vectors: npt.NDArray[np.float32]) -> VectorRows:
    """Active rows with no other filter value, seqs 1.., row ``i`` in ``spaces[i]``."""
    count = len(spaces)
    return VectorRows(
        seqs=np.arange(1, count + 1, dtype=np.int64),
        embeddings=vectors,
        topics=["topic"] * count,
        spaces=spaces,
        states=np.full(count, STATE_CODES[BranchState.ACTIVE], np.int8),
        origins=np.full(count, NONE, np.int8),
        created=np.zeros(count, np.int64),
        valid_from=np.full(count, NO_LOWER, np.int64),
        valid_until=np.full(count, NO_UPPER, np.int64),
        corrected=np.zeros(count, np.bool_),
        occurred=np.zeros(count, np.int64),
    )


def test_a_search_in_one_space_never_copies_all_of_that_space_s_vectors_at_once() -> None:
    """Issue 30: a space holding a fifth of the store's rows is scored by gathering its
    rows. Gathered whole, a fifth of 100,000 MiniLM vectors is a 30 MB copy per search,
    which the allocator keeps (the server's RSS grew 20-60 MB over the 450 MB target);
    gathered in slices the copy stays small, and the ranking is the plain one."""
    dimension, count = 384, 20_000
    spaces = ["mine" if i % 5 == 0 else "other" for i in range(count)]
    vectors = np.random.default_rng(30).standard_normal((count, dimension)).astype(np.float32)
    mirror = VectorMirror(dimension)
    mirror.apply(_mirror_rows(spaces, vectors), [], 1)
    query = vectors[7]
    where = MemoryFilter(states=(BranchState.ACTIVE,), space="mine")
    mine = np.flatnonzero(np.array(spaces) == "mine")
    space_bytes = mine.shape[0] * dimension * 4  # 6 MB

    tracemalloc.start()
    try:
        found = mirror.search(query, where, 50)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert peak < space_bytes / 2
    scores = vectors[mine] @ query
    order = np.lexsort((mine, -scores))[:50]
    assert [seq for seq, _ in found] == [int(mine[i]) + 1 for i in order]
    assert [score for _, score in found] == [float(scores[i]) for i in order]


def test_a_store_larger_than_one_load_chunk_is_mirrored_whole_by_a_new_process_view(
    tmp_path: Path,
) -> None:
    """More rows than one chunk of the mirror's first load (``CHUNK``)."""
    path = tmp_path / "m.sqlite3"
    writer, memories, vectors = _filled(path, 4500)
    writer.close()
    reader = SQLiteStore(path)
    reader.bind_embedding(EmbeddingIdentity("test", DIMENSION))
    try:
        where = MemoryFilter(states=(BranchState.ACTIVE, BranchState.WIP))
        query = _vectors(1)[0]
        found = [hit.memory.id for hit in reader.vector_search(query, where, 4500)]
        assert found == _expected(memories, vectors, query, where, 4500)
        # An erase and a new record after the load are seen by the next search.
        reader.erase([memories[0].id, memories[-1].id], "test", START)
        late = _memory(9999)
        reader.transaction(lambda txn: txn.put(late, query))
        found = [hit.memory.id for hit in reader.vector_search(query, where, 4500)]
        assert found[0] == late.id
        assert memories[0].id not in found
        assert memories[-1].id not in found
        assert len(found) == 4499
    finally:
        reader.close()


def test_keyword_search_gives_the_bm25_ranking_under_every_filter(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite3"
    store, _, _ = _filled(path, 200)
    plain = sqlite3.connect(path)
    try:
        # Without a topic or origin the store ranks the matches before filtering and
        # falls back to ranking with the filter when too few of the best pass (WIP:
        # one record in seven): both must give the same ranking.
        gamma_omega = ("gamma", "omega")
        for where, sql, params, words in (
            (
                MemoryFilter(states=(BranchState.ACTIVE,)),
                "m.branch_state = 'active'",
                [],
                gamma_omega,
            ),
            # Every record holds "note", WIP ones no "gamma": few of the best 60 pass.
            (
                MemoryFilter(states=(BranchState.WIP,)),
                "m.branch_state = 'wip'",
                [],
                ("gamma", "note"),
            ),
            (
                MemoryFilter(states=(BranchState.ACTIVE, BranchState.WIP)),
                "m.branch_state IN ('active', 'wip')",
                [],
                gamma_omega,
            ),
            (
                MemoryFilter(states=(BranchState.ACTIVE,), topic="topic-2"),
                "m.branch_state = 'active' AND m.module_name = ?",
                ["topic-2"],
                gamma_omega,
            ),
        ):
            hits = store.lexical_search(terms(" ".join(words)), where, 30)
            # The ranking straight from the table, without the covering index.
            statement = " ".join(
                (
                    "SELECT m.id, -bm25(memory_terms) FROM memory_terms JOIN memories m",
                    "ON m.seq = memory_terms.rowid WHERE memory_terms MATCH ? AND",
                    sql,
                    "ORDER BY bm25(memory_terms), m.seq LIMIT 30",
                )
            )
            match = " OR ".join(f'"{word}"' for word in words)
            expected = plain.execute(statement, [match, *params]).fetchall()
            assert len(expected) > 5
            assert [hit.memory.id for hit in hits] == [row[0] for row in expected]
            assert [hit.score for hit in hits] == pytest.approx([row[1] for row in expected])
    finally:
        plain.close()
        store.close()


def test_a_version_4_file_is_migrated_into_the_default_space_and_searched_with_the_filter_index(
    tmp_path: Path,
) -> None:
    """A file exactly as MetaCortex with schema version 4 wrote it: its migrations, then
    rows in its columns (no space, no filter index)."""
    path = tmp_path / "m.sqlite3"
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"
        )
        for version, script in MIGRATIONS[:4]:
            conn.executescript(script)
            conn.execute("INSERT INTO schema_migrations VALUES (?, 'then')", (version,))
        for seq, text in enumerate(("alpha beta", "beta gamma", "gamma delta"), start=1):
            conn.execute(
                "INSERT INTO memories (seq, id, content, retrieval_text, module_name,"
                " branch_state, modality, created_at, updated_at, embedding, change_seq)"
                " VALUES (?, ?, ?, ?, 'general', 'active', 'text', ?, ?, ?, ?)",
                (seq, f"m{seq}", text, text, seq, seq, _vectors(1)[0].tobytes(), seq),
            )
            conn.execute(
                "INSERT INTO memory_terms (rowid, terms) VALUES (?, ?)",
                (seq, " ".join(terms(text))),
            )
    reopened = SQLiteStore(path)
    try:
        conn = sqlite3.connect(path)
        version = conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0]
        indexes = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        conn.close()
        assert version == LATEST_VERSION
        assert "memories_filter" in indexes
        found = reopened.lexical_search(
            terms("beta"), MemoryFilter(states=(BranchState.ACTIVE,)), 10
        )
        assert sorted(hit.memory.id for hit in found) == ["m1", "m2"]
        assert {hit.memory.space for hit in found} == {"default"}
        assert reopened.get("m1", space="family") is None
    finally:
        reopened.close()


def test_a_store_loading_its_vectors_ahead_answers_as_one_loading_them_at_the_first_search(
    tmp_path: Path,
) -> None:
    # `metacortex serve` binds the model and reads the vectors on a thread while the
    # model loads (composition.build_service); the service then binds the same model.
    path = tmp_path / "m.sqlite3"
    writer, memories, vectors = _filled(path, 600)
    writer.close()
    identity = EmbeddingIdentity("test", DIMENSION)
    ahead, plain = SQLiteStore(path), SQLiteStore(path)
    try:
        ahead.load_vectors_in_background(identity)
        ahead.bind_embedding(identity)  # what MemoryService does: the loaded vectors stay
        plain.bind_embedding(identity)
        where = MemoryFilter(states=(BranchState.ACTIVE,))
        for query in _vectors(5):
            expected = _expected(memories, vectors, query, where, 20)
            assert [hit.memory.id for hit in ahead.vector_search(query, where, 20)] == expected
            assert [hit.memory.id for hit in plain.vector_search(query, where, 20)] == expected
    finally:
        ahead.close()
        plain.close()


def test_vectors_that_fail_to_load_ahead_fail_the_first_search_with_what_to_do(
    tmp_path: Path,
) -> None:
    path = tmp_path / "m.sqlite3"
    writer, _, _ = _filled(path, 50)
    writer.close()
    with sqlite3.connect(path) as conn:  # a vector of another width, as a bad import leaves
        conn.execute("UPDATE memories SET embedding = zeroblob(12) WHERE seq = 7")
    store = SQLiteStore(path)
    try:
        store.load_vectors_in_background(EmbeddingIdentity("test", DIMENSION))
        with pytest.raises(ValueError, match="metacortex reembed"):
            store.vector_search(_vectors(1)[0], MemoryFilter(states=(BranchState.ACTIVE,)), 5)
    finally:
        store.close()


def _varied(index: int) -> Memory:
    """A record exercising every column the mirror reads: origin or none, open or
    closed validity, a corrected or changed supersession, one of two spaces."""
    memory = _memory(
        index, (BranchState.ACTIVE, BranchState.WIP, BranchState.DEPRECATED)[index % 3]
    )
    origins = (None, Origin.USER_ASSERTED, Origin.AGENT_INFERRED, Origin.DOCUMENT)
    reasons = (None, SupersessionReason.CORRECTED, SupersessionReason.CHANGED)
    return memory.with_changes(
        provenance=Provenance(origin=origins[index % 4]),
        valid_from=None if index % 2 else START - timedelta(days=index),
        valid_until=None if index % 5 else START + timedelta(days=index),
        supersession_reason=reasons[index % 3],
        space="team" if index % 4 == 1 else "default",
    )


def test_the_first_load_reads_every_column_as_catching_up_from_nothing_does(
    tmp_path: Path,
) -> None:
    """The first load asks SQLite for a range of seqs as one row of aggregates
    (``sqlite_mirror_rows.everything``); catching up reads row by row (``changes``).
    Over a store with erased rows, a gap of more than a chunk of seqs, every origin,
    open and closed validity, corrections and two spaces, both give the same rows."""
    path = tmp_path / "m.sqlite3"
    store = SQLiteStore(path)
    store.bind_embedding(EmbeddingIdentity("test", DIMENSION))
    vectors = _vectors(CHUNK + 700)
    memories = [_varied(i) for i in range(CHUNK + 700)]
    try:
        for space in ("default", "team"):

            def write(txn: StoreTransaction, space: str = space) -> None:
                for memory, vector in zip(memories, vectors, strict=True):
                    if memory.space == space:
                        txn.put(memory, vector)

            store.transaction(write, space=space)
        # Seqs 11 to CHUNK + 300 erased: a whole chunk of seqs with no row at all.
        gone = memories[10 : CHUNK + 300]
        for space in ("default", "team"):
            ids = [memory.id for memory in gone if memory.space == space]
            for at in range(0, len(ids), MAX_ERASE_BATCH):
                store.erase(ids[at : at + MAX_ERASE_BATCH], "test", START, space=space)
    finally:
        store.close()

    with sqlite3.connect(path) as conn:
        whole = list(everything(conn, DIMENSION))
        caught_up = list(changes(conn, 0, DIMENSION))
        [[counter]] = conn.execute("SELECT value FROM store_meta WHERE key = 'change_seq'")
    assert max(chunk.newest for chunk in whole) == int(counter)
    assert max(chunk.newest for chunk in caught_up) == int(counter)
    erased = {seq for chunk in caught_up for seq in chunk.erased}
    assert len(erased) == CHUNK + 290
    assert not [seq for chunk in whole for seq in chunk.erased]

    def columns(chunks: list[Changes]) -> dict[str, list[object]]:
        rows = [chunk.rows for chunk in chunks]
        return {
            name: [value for part in rows for value in list(getattr(part, name))]
            for name in VectorRows.__slots__
            if name != "embeddings"
        } | {"embeddings": [row.tobytes() for part in rows for row in part.embeddings]}

    read_whole, read_caught_up = columns(whole), columns(caught_up)
    assert len(read_whole["seqs"]) == 410  # the 10 first and 400 last
    assert read_whole == read_caught_up
    assert set(read_whole["spaces"]) == {"default", "team"}
    assert len(set(read_whole["origins"])) == 4
    assert any(read_whole["corrected"])
    assert not all(read_whole["corrected"])
