"""The SQLite store's in-memory keyword index against SQLite FTS5 itself (issue 23).

The index (storage/sqlite_keywords.py) replaces FTS5's ``bm25()`` at search time.
The counterpart is FTS5 in the same file: every ranking here is compared with
``SELECT rowid, -bm25(memory_terms) ... ORDER BY bm25(memory_terms), rowid`` on a
plain connection, scores compared with ``==`` (the index promises the same bits),
after loads, after writes, rewrites and erasures from another connection, and
for the terms it must refuse to rank.
"""

from __future__ import annotations

import random
import sqlite3
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from metacortex.domain.records import BranchState, Memory, Modality
from metacortex.retrieval.text import query_terms
from metacortex.storage.base import EmbeddingIdentity, MemoryFilter, StoreTransaction
from metacortex.storage.sqlite import SQLiteStore
from metacortex.storage.sqlite_keyword_keeper import KeywordKeeper
from metacortex.storage.sqlite_keywords import KeywordIndex

DIMENSION = 8
START = datetime(2025, 1, 1, tzinfo=UTC)
# Common and rare words, a few non-ASCII ones FTS5 and the analyzer both keep whole.
VOCABULARY = (
    ["garden", "river", "meeting", "dinner", "travel", "music", "paint", "school"] * 6
    + ["café", "東京", "straße", "naïve", "zürich", "kyiv", "jazz", "quartz", "violin"]
    + [f"word{i}" for i in range(40)]
)
QUERIES = (
    "garden river",
    "When did she paint the garden by the river?",
    "café in zürich",
    "東京 travel music",
    "jazz violin quartz kyiv",
    "meeting meeting dinner",  # a repeated word: one term
    "word3 word17 word39 school",
    "straße naïve",
)
EVERYONE = MemoryFilter(states=tuple(BranchState))


def _text(rng: random.Random) -> str:
    if rng.random() < 0.05:
        return "the and of it"  # no terms at all: a row FTS5 counts, with no tokens
    words = [rng.choice(VOCABULARY) for _ in range(rng.randint(1, 30))]
    return " ".join(words) + ("." if rng.random() < 0.5 else "")


def _memory(index: int, text: str) -> Memory:
    at = START + timedelta(minutes=index)
    return Memory(
        id=f"m-{index:05d}",
        content=text,
        retrieval_text=text,
        topic=f"topic-{index % 3}",
        branch_state=BranchState.WIP if index % 5 == 0 else BranchState.ACTIVE,
        modality=Modality.TEXT,
        created_at=at,
        updated_at=at,
    )


def _vector(rng: np.random.Generator) -> npt.NDArray[np.float32]:
    vector = rng.standard_normal(DIMENSION).astype(np.float32)
    return np.asarray(vector / np.linalg.norm(vector), dtype=np.float32)


def _write(store: SQLiteStore, memories: list[Memory], seed: int = 0) -> None:
    rng = np.random.default_rng(seed)

    def write(txn: StoreTransaction) -> None:
        for memory in memories:
            txn.put(memory, _vector(rng))

    store.transaction(write)


@pytest.fixture
def corpus(tmp_path: Path) -> Iterator[tuple[Path, SQLiteStore, list[Memory]]]:
    path = tmp_path / "m.sqlite3"
    store = SQLiteStore(path)
    store.bind_embedding(EmbeddingIdentity("test", DIMENSION))
    rng = random.Random(23)
    memories = [_memory(i, _text(rng)) for i in range(600)]
    _write(store, memories)
    yield path, store, memories
    store.close()


def _fts5(path: Path, words: list[str], limit: int) -> list[tuple[int, float]]:
    """SQLite FTS5's own ranking of the OR of ``words`` (the query the store used to run)."""
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute(
            "SELECT rowid, -bm25(memory_terms) FROM memory_terms WHERE memory_terms MATCH ?"
            " ORDER BY bm25(memory_terms), rowid LIMIT ?",
            [" OR ".join(f'"{word}"' for word in words), limit],
        ).fetchall()
    finally:
        conn.close()
    return [(int(seq), float(score)) for seq, score in rows]


def _everything(seqs: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    return np.ones(seqs.shape[0], dtype=np.bool_)


def _ranked(index: KeywordIndex, words: list[str], limit: int) -> list[tuple[int, float]]:
    hits = index.search(words, _everything, limit)
    assert hits is not None, f"the index refused {words}"
    return [(hit.seq, hit.score) for hit in hits]


Keepers = Callable[..., KeywordKeeper]


@pytest.fixture
def keepers() -> Iterator[Keepers]:
    """Opens keepers on a file (each with its own connection, as a store's thread has
    one); every one is closed after the test."""
    opened: list[tuple[KeywordKeeper, sqlite3.Connection]] = []

    def open_keeper(path: Path, inline_below: int = 1_000_000) -> KeywordKeeper:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        keeper = KeywordKeeper(path, lambda: conn, inline_below)
        opened.append((keeper, conn))
        return keeper

    yield open_keeper
    for keeper, conn in opened:
        keeper.close()
        conn.close()


def _assert_ranks_as_fts5(index: KeywordIndex, path: Path, limit: int) -> None:
    for query in QUERIES:
        words = query_terms(query)
        assert _ranked(index, words, limit) == _fts5(path, words, limit), query


def _current(keeper: KeywordKeeper) -> KeywordIndex:
    index = keeper.current()
    assert index is not None
    return index


def test_the_index_ranks_and_scores_to_the_bit_as_fts5_bm25(
    corpus: tuple[Path, SQLiteStore, list[Memory]], keepers: Keepers
) -> None:
    path, _, _ = corpus
    index = _current(keepers(path))
    for limit in (1, 10, 100, 1000):
        _assert_ranks_as_fts5(index, path, limit)


def test_writes_rewrites_and_erasures_from_another_connection_rank_as_fts5(
    corpus: tuple[Path, SQLiteStore, list[Memory]], keepers: Keepers
) -> None:
    path, _, memories = corpus
    keeper = keepers(path)
    other = SQLiteStore(path)  # another connection, as a second process would have
    other.bind_embedding(EmbeddingIdentity("test", DIMENSION))
    rng = random.Random(5)
    try:
        loaded = _current(keeper)
        # New rows, rows whose text changes (new terms, other lengths), a state change.
        fresh = [_memory(1000 + i, _text(rng)) for i in range(40)]
        rewritten = [_memory(i, _text(rng) + " garden jazz") for i in range(0, 120, 3)]
        _write(other, fresh + rewritten, seed=1)
        index = _current(keeper)
        assert index is loaded  # overlaid, not loaded again
        assert index.overlay_rows == len(fresh) + len(rewritten)
        _assert_ranks_as_fts5(index, path, 200)
        # Erasing leaves nothing of the rows in the index: it is loaded again.
        gone = [memory.id for memory in memories[1:60:2]]
        other.erase(gone, "owner", START)
        reloaded = _current(keeper)
        assert reloaded is not index
        assert reloaded.erased_since_load == 0
        _assert_ranks_as_fts5(reloaded, path, 200)
    finally:
        other.close()


def test_a_query_term_fts5_might_read_otherwise_is_left_to_fts5(
    corpus: tuple[Path, SQLiteStore, list[Memory]], keepers: Keepers
) -> None:
    path, store, _ = corpus
    index = _current(keepers(path))
    # Not ASCII and in no row: the index cannot tell how FTS5's tokenizer reads it.
    assert index.search(["ꭰꭱ", "garden"], _everything, 10) is None
    # Not ASCII but in the vocabulary FTS5 built: ranked.
    assert _ranked(index, ["東京", "garden"], 50) == _fts5(path, ["東京", "garden"], 50)
    # The store answers the refused query from FTS5, with the same ranking.
    hits = store.lexical_search(["ꭰꭱ", "garden"], EVERYONE, 20)
    assert len({hit.memory.id for hit in hits}) == 20
    expected = _fts5(path, ["ꭰꭱ", "garden"], 20)
    assert [hit.score for hit in hits] == [score for _, score in expected]


def test_a_row_with_a_term_it_cannot_rank_exactly_makes_it_load_again(
    corpus: tuple[Path, SQLiteStore, list[Memory]], keepers: Keepers
) -> None:
    path, store, _ = corpus
    keeper = keepers(path)
    loaded = _current(keeper)
    _write(store, [_memory(2000, "ꭰꭱ garden")], seed=2)
    index = _current(keeper)
    assert index is not loaded  # loaded again, from FTS5's own tokens
    assert index.exact
    assert _ranked(index, ["garden"], 100) == _fts5(path, ["garden"], 100)


def test_more_changes_than_an_overlay_holds_load_it_again(tmp_path: Path, keepers: Keepers) -> None:
    path = tmp_path / "m.sqlite3"
    store = SQLiteStore(path)
    store.bind_embedding(EmbeddingIdentity("test", DIMENSION))
    rng = random.Random(7)
    try:
        _write(store, [_memory(i, _text(rng)) for i in range(10)])
        keeper = keepers(path)
        loaded = _current(keeper)
        _write(store, [_memory(10 + i, _text(rng)) for i in range(2_100)], seed=3)
        index = _current(keeper)
        assert index is not loaded
        assert index.overlay_rows == 0
        assert index.rows == 2_110
        words = query_terms(QUERIES[1])
        assert _ranked(index, words, 100) == _fts5(path, words, 100)
    finally:
        store.close()


def test_a_large_store_answers_from_fts5_while_the_index_loads_in_the_background(
    corpus: tuple[Path, SQLiteStore, list[Memory]], keepers: Keepers
) -> None:
    path, _, _ = corpus
    keeper = keepers(path, inline_below=0)  # every store counts as large
    assert keeper.current() is None  # loading: the caller asks FTS5
    keeper.wait()
    words = query_terms(QUERIES[0])
    assert _ranked(_current(keeper), words, 100) == _fts5(path, words, 100)


def test_the_store_gives_the_same_hits_before_and_after_its_index_has_loaded(
    tmp_path: Path,
) -> None:
    path = tmp_path / "m.sqlite3"
    store = SQLiteStore(path, keyword_inline_below=0)
    store.bind_embedding(EmbeddingIdentity("test", DIMENSION))
    rng = random.Random(11)
    _write(store, [_memory(i, _text(rng)) for i in range(300)])
    where = MemoryFilter(states=(BranchState.ACTIVE,), topic="topic-1")
    try:
        words = query_terms("garden river jazz")
        from_fts5 = store.lexical_search(words, where, 25)  # starts the load
        store.keyword_index_loaded()
        from_index = store.lexical_search(words, where, 25)
        assert [(h.memory.id, h.score, h.terms) for h in from_index] == [
            (h.memory.id, h.score, h.terms) for h in from_fts5
        ]
        assert len(from_index) == 25
        assert all(h.memory.topic == "topic-1" for h in from_index)
        assert all(h.memory.branch_state is BranchState.ACTIVE for h in from_index)
    finally:
        store.close()


def test_closing_the_store_while_its_index_loads_waits_for_the_load_and_leaves_no_thread(
    tmp_path: Path,
) -> None:
    path = tmp_path / "m.sqlite3"
    store = SQLiteStore(path, keyword_inline_below=0)
    store.bind_embedding(EmbeddingIdentity("test", DIMENSION))
    rng = random.Random(13)
    _write(store, [_memory(i, _text(rng)) for i in range(200)])
    store.lexical_search(query_terms("garden river"), EVERYONE, 10)  # starts the load
    store.close()
    assert not [t for t in threading.enumerate() if t.name == "metacortex-keyword-index"]
    with pytest.raises(RuntimeError, match="closed"):
        store.lexical_search(query_terms("garden river"), EVERYONE, 10)
