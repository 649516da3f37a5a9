"""An in-memory copy of the FTS5 index ``memory_terms`` that ranks as its ``bm25()``.

Why: FTS5 computes ``bm25()`` for every row that matches any query term, one
auxiliary-function call per row. At 100,000 memories a LoCoMo question matches
about 28,000 rows and the query takes 23–26 ms of the search
(docs/benchmarks.md, "Scale"). The same arithmetic over numpy arrays of postings
takes a few milliseconds.

What it holds:

- the base: the postings of every term as FTS5 itself tokenized the rows, read
  from an ``fts5vocab`` instance table in one snapshot (``load``): per term the
  seqs holding it (ascending) and how often; per seq the row's length in tokens;
  which seqs had a row; the row count and the token total;
- the overlay: rows written or erased since, read by the store's sync through
  the ``change_seq`` counter every write bumps (``apply``). An overlaid seq's base
  postings no longer count; its new term stream (the analyzed terms, split on
  spaces) counts instead.

Exactness: a search sums, for each query term in order, ``idf * (f * (k1 + 1)) /
(f + k1 * (1 - b + b * D / avgdl))`` over float64 arrays, with FTS5's operations
in FTS5's order, so scores equal ``-bm25(memory_terms)`` to the last bit and the
order (score, then seq) is FTS5's (tests/storage/test_sqlite_keywords.py checks
both against SQLite). That holds while every term involved is one FTS5 would
produce unchanged: ASCII letters and digits (what the analyzer makes of English)
always are; any other term is checked against the base's vocabulary, which FTS5
tokenized. A query term outside both returns ``None`` (the store then asks
FTS5); an overlaid row with such a term makes the index ``exact = False`` until
it is rebuilt.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import numpy.typing as npt

from metacortex.retrieval import bm25
from metacortex.retrieval import typos as spelling
from metacortex.storage.base import TermStats

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

# Terms FTS5's unicode61 tokenizer returns unchanged whatever its Unicode tables.
_PLAIN: Final = re.compile(r"[a-z0-9]+")
_VOCABULARY: Final = "temp.metacortex_term_instances"

Postings = npt.NDArray[np.int32]
Seqs = npt.NDArray[np.integer[Any]]


@dataclass(frozen=True, slots=True)
class KeywordHit:
    seq: int
    score: float  # -bm25(): higher is better
    terms: TermStats


@dataclass(frozen=True, slots=True)
class _Base:
    """The postings as loaded: immutable once built (searches read it without copying)."""

    term_ids: dict[str, int]
    starts: npt.NDArray[np.int64]  # term id -> its slice of seqs/freqs
    seqs: Postings  # int32 throughout: half the memory of int64 (seqs stay far below 2**31)
    freqs: Postings
    lengths: Postings  # seq -> tokens in its row (0 when none or absent)
    present: npt.NDArray[np.bool_]  # seq -> the row existed
    rows: int
    tokens: int

    def postings(self, term: str) -> tuple[Postings, Postings]:
        term_id = self.term_ids.get(term)
        if term_id is None:
            return _EMPTY, _EMPTY
        start, end = int(self.starts[term_id]), int(self.starts[term_id + 1])
        return self.seqs[start:end], self.freqs[start:end]


_EMPTY: Final[Postings] = np.zeros(0, dtype=np.int32)


@dataclass(slots=True)
class _Overlay:
    """Rows changed since the base: seq -> its term counts and length (None: erased)."""

    rows: dict[int, tuple[Counter[str], int] | None] = field(default_factory=dict)
    by_term: dict[str, dict[int, int]] = field(default_factory=dict)
    erased: int = 0


class KeywordIndex:
    def __init__(self, base: _Base, change_seq: int) -> None:
        self._lock = threading.Lock()
        self._base = base
        self._overlay = _Overlay()
        # seq -> its base postings no longer count (overlaid since the load).
        self._masked = np.zeros(base.present.shape[0], dtype=np.bool_)
        self._rows = base.rows
        self._tokens = base.tokens
        self.change_seq = change_seq
        self.exact = True
        # The base's terms for typo correction (about 0.1 s at 100,000 terms, with the load).
        self._lexicon = spelling.Lexicon(word for word in base.term_ids if word.isalpha())

    # ------------------------------------------------------------------ load
    @classmethod
    def load(cls, conn: sqlite3.Connection) -> KeywordIndex:
        """The index of every row, current up to the ``change_seq`` read in the same
        snapshot. Almost all of the work runs inside SQLite (the GIL released), so a
        load on a background thread barely slows the searches beside it."""
        conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {_VOCABULARY}"
            " USING fts5vocab(main, memory_terms, instance)"
        )
        cursor = conn.cursor()
        cursor.row_factory = None
        cursor.execute("BEGIN")
        try:
            [[counter]] = cursor.execute(
                "SELECT value FROM store_meta WHERE key = 'change_seq'"
            ).fetchall()
            listed = cursor.execute("SELECT group_concat(rowid) FROM memory_terms").fetchone()[0]
            # One row per term: every occurrence's seq, as FTS5 stores them (term order,
            # then seq), so a seq repeats as often as the term occurs in its row.
            grouped = cursor.execute(
                f"SELECT term, group_concat(doc) FROM {_VOCABULARY} GROUP BY term"
            ).fetchall()
        finally:
            cursor.execute("COMMIT")
        return cls(_build(_parsed(listed), grouped), int(counter))

    # ----------------------------------------------------------------- state
    @property
    def overlay_rows(self) -> int:
        return len(self._overlay.rows)

    @property
    def erased_since_load(self) -> int:
        """Erased rows whose stems the base still holds (a rebuild drops them)."""
        return self._overlay.erased

    @property
    def rows(self) -> int:
        return self._rows

    def apply(
        self, changed: Sequence[tuple[int, str]], erased: Sequence[int], change_seq: int
    ) -> None:
        """Overlay rows written (seq, term stream) or erased since the last ``apply``,
        and note that the index is current up to ``change_seq``."""
        with self._lock:
            for seq, stream in changed:
                self._drop(seq)
                counts = Counter(stream.split())
                length = sum(counts.values())
                if not all(self._known(term) for term in counts):
                    self.exact = False
                self._overlay.rows[seq] = (counts, length)
                for term, count in counts.items():
                    self._overlay.by_term.setdefault(term, {})[seq] = count
                self._rows += 1
                self._tokens += length
            for seq in erased:
                self._drop(seq)
                if self._in_base(seq):  # its stems stay in the base's arrays until a load
                    self._overlay.erased += 1
                self._overlay.rows[seq] = None
            self.change_seq = max(self.change_seq, change_seq)

    def _in_base(self, seq: int) -> bool:
        return seq < self._base.present.shape[0] and bool(self._base.present[seq])

    def _drop(self, seq: int) -> None:
        """Take the seq's current row (base or overlay) out of the counts."""
        if seq in self._overlay.rows:
            previous = self._overlay.rows[seq]
            if previous is not None:
                counts, length = previous
                for term in counts:
                    del self._overlay.by_term[term][seq]
                self._rows -= 1
                self._tokens -= length
            return
        if self._in_base(seq):
            self._masked[seq] = True
            self._rows -= 1
            self._tokens -= int(self._base.lengths[seq])

    def _known(self, term: str) -> bool:
        return _PLAIN.fullmatch(term) is not None or term in self._base.term_ids

    # ---------------------------------------------------------------- search
    def search(
        self,
        terms: Sequence[str],
        passes: Callable[[npt.NDArray[np.int64]], npt.NDArray[np.bool_]],
        limit: int,
        weights: Mapping[str, float] | None = None,
    ) -> list[KeywordHit] | None:
        """The best ``limit`` rows that ``passes`` lets through, by FTS5's bm25 then seq,
        as ``memory_terms MATCH '"t1" OR "t2" ...'`` ranks them; ``None`` when a term is
        one this index cannot answer exactly (ask FTS5). ``weights``: a factor on the
        IDF of some terms (typo expansions, ``retrieval/typos.py``); a term not named
        counts as FTS5 counts it."""
        phrases = [term for term in terms if term]
        with self._lock:
            if not self.exact or not all(self._known(term) for term in phrases):
                return None
            if not phrases or self._rows == 0:
                return []
            postings = [self._postings(term) for term in phrases]
            return self._ranked(phrases, postings, passes, limit, weights or {})

    def unheld(
        self,
        terms: Sequence[str],
        passes: Callable[[npt.NDArray[np.int64]], npt.NDArray[np.bool_]],
    ) -> list[str]:
        """The ``terms`` no row that ``passes`` lets through holds (one ``passes`` call)."""
        counts = self.held_by(terms, passes)
        return [term for term, count in zip(terms, counts, strict=True) if not count]

    def held_by(
        self,
        terms: Sequence[str],
        passes: Callable[[npt.NDArray[np.int64]], npt.NDArray[np.bool_]],
    ) -> list[int]:
        """How many rows that ``passes`` lets through hold each of ``terms`` (one
        ``passes`` call)."""
        with self._lock:
            postings = [self._postings(term)[0] for term in terms]
        if not postings:
            return []
        everything = np.concatenate(postings).astype(np.int64)
        passed = passes(everything) if everything.size else np.zeros(0, dtype=np.bool_)
        ends = np.cumsum([seqs.shape[0] for seqs in postings])
        return [
            int(passed[end - seqs.shape[0] : end].sum())
            for end, seqs in zip(ends, postings, strict=True)
        ]

    def holder(
        self, term: str, passes: Callable[[npt.NDArray[np.int64]], npt.NDArray[np.bool_]]
    ) -> int | None:
        """The seq of a row that ``passes`` lets through holding ``term`` (the lowest)."""
        with self._lock:
            seqs = self._postings(term)[0].astype(np.int64)
        passed = np.flatnonzero(passes(seqs)) if seqs.size else seqs
        return int(seqs[passed[0]]) if passed.size else None

    def near(self, term: str) -> dict[str, int]:
        """Term -> its distance from ``term``, for every term some row holds (or held:
        an erased row's terms stay until a rebuild) within typo reach of it
        (``retrieval/typos.py``). The base's terms are grouped once, at load."""
        with self._lock:
            lexicon = self._lexicon
            added = spelling.Lexicon(
                word
                for word, seqs in self._overlay.by_term.items()
                if seqs and word not in self._base.term_ids and word.isalpha()
            )
        found = spelling.near(term, lexicon)
        found.update(spelling.near(term, added))
        return found

    def _postings(self, term: str) -> tuple[Postings, Postings]:
        """(seqs ascending, occurrences) of the rows holding ``term`` now."""
        seqs, freqs = self._base.postings(term)
        if not self._overlay.rows:
            return seqs, freqs
        kept = ~self._masked[seqs]
        seqs, freqs = seqs[kept], freqs[kept]
        extra = self._overlay.by_term.get(term)
        if extra:
            seqs = np.concatenate([seqs, np.fromiter(extra.keys(), np.int32, len(extra))])
            freqs = np.concatenate([freqs, np.fromiter(extra.values(), np.int32, len(extra))])
            order = np.argsort(seqs, kind="stable")
            seqs, freqs = seqs[order], freqs[order]
        return seqs, freqs

    def _lengths(self, seqs: Seqs) -> npt.NDArray[np.int64]:
        base = self._base.lengths
        inside = seqs < base.shape[0]
        lengths = np.zeros(seqs.shape[0], dtype=np.int64)
        lengths[inside] = base[seqs[inside]]
        if self._overlay.rows:
            for i in np.flatnonzero(~inside | self._masked_at(seqs)):
                row = self._overlay.rows.get(int(seqs[i]))
                lengths[i] = 0 if row is None else row[1]
        return lengths

    def _masked_at(self, seqs: Seqs) -> npt.NDArray[np.bool_]:
        inside = seqs < self._masked.shape[0]
        masked = np.zeros(seqs.shape[0], dtype=np.bool_)
        masked[inside] = self._masked[seqs[inside]]
        return masked

    def _ranked(
        self,
        phrases: list[str],
        postings: list[tuple[Postings, Postings]],
        passes: Callable[[npt.NDArray[np.int64]], npt.NDArray[np.bool_]],
        limit: int,
        weights: Mapping[str, float],
    ) -> list[KeywordHit]:
        size = max((int(seqs[-1]) + 1 for seqs, _ in postings if seqs.size), default=0)
        if size == 0:
            return []
        scores = np.zeros(size, dtype=np.float64)
        matched = np.zeros(size, dtype=np.bool_)
        average = self._tokens / self._rows
        k1, b = bm25.K1, bm25.B
        for term, (seqs, freqs) in zip(phrases, postings, strict=True):
            if not seqs.size:
                continue
            idf = bm25.idf(self._rows, int(seqs.shape[0]))
            if term in weights:  # never for a query's own terms: FTS5's arithmetic stays
                idf *= weights[term]
            freq = freqs.astype(np.float64)
            length = self._lengths(seqs).astype(np.float64)
            # fts5_aux.c fts5Bm25Function, term for term and in its order.
            scores[seqs] += idf * (
                (freq * (k1 + 1.0)) / (freq + k1 * (1 - b + b * length / average))
            )
            matched[seqs] = True
        candidates = np.flatnonzero(matched).astype(np.int64)
        candidates = candidates[passes(candidates)]
        if not candidates.size:
            return []
        top = _best(candidates, scores[candidates], limit)
        chosen = np.array([seq for seq, _ in top], dtype=np.int64)
        lengths = self._lengths(chosen)
        counts: list[dict[str, int]] = [{} for _ in top]
        for term, (seqs, freqs) in zip(phrases, postings, strict=True):
            at = np.minimum(np.searchsorted(seqs, chosen), max(seqs.shape[0] - 1, 0))
            if not seqs.size:
                continue
            for i in np.flatnonzero(seqs[at] == chosen):
                counts[i][term] = int(freqs[at[i]])
        return [
            KeywordHit(seq, score, TermStats(length=int(length), freqs=freqs_of))
            for (seq, score), length, freqs_of in zip(top, lengths, counts, strict=True)
        ]


def _best(
    seqs: npt.NDArray[np.int64], scores: npt.NDArray[np.float64], limit: int
) -> list[tuple[int, float]]:
    """The best ``limit`` by score, ties by seq (FTS5: ORDER BY bm25, rowid)."""
    if scores.size > limit:
        cut = np.partition(scores, scores.size - limit)[scores.size - limit]
        keep = np.flatnonzero(scores >= cut)  # every row tied with the last one kept
        seqs, scores = seqs[keep], scores[keep]
    order = np.lexsort((seqs, -scores))[:limit]
    return [(int(seqs[i]), float(scores[i])) for i in order]


def _parsed(listed: str | None) -> Postings:
    if not listed:
        return _EMPTY
    return np.fromstring(listed, dtype=np.int32, sep=",")


def _build(rows: Postings, grouped: list[tuple[str, str]]) -> _Base:
    """The base from the row ids and, per term, the seq of each occurrence."""
    term_ids = {term: i for i, (term, _) in enumerate(grouped)}
    occurrences = [_parsed(docs) for _, docs in grouped]
    counts = np.fromiter((a.shape[0] for a in occurrences), np.int64, len(occurrences))
    every = np.concatenate(occurrences) if occurrences else _EMPTY
    term_starts = np.zeros(len(grouped) + 1, dtype=np.int64)
    np.cumsum(counts, out=term_starts[1:])
    highest = int(max(rows.max(initial=0), every.max(initial=0)))
    if every.size:
        term_of = np.repeat(np.arange(len(grouped), dtype=np.int32), counts)
        if np.any((every[1:] < every[:-1]) & (term_of[1:] == term_of[:-1])):
            order = np.lexsort((every, term_of))  # never seen: FTS5 lists a term's rows in order
            every = every[order]
        # One posting per (term, seq) run: its first occurrence, the run's length its count.
        first = np.ones(every.shape[0], dtype=np.bool_)
        first[1:] = every[1:] != every[:-1]
        first[term_starts[:-1][counts > 0]] = True
        at = np.flatnonzero(first)
        seqs = every[at]
        freqs = np.diff(np.append(at, every.shape[0])).astype(np.int32)
        starts = np.searchsorted(at, term_starts).astype(np.int64)
    else:
        seqs, freqs, starts = _EMPTY, _EMPTY, term_starts
    present = np.zeros(highest + 1, dtype=np.bool_)
    present[rows] = True
    return _Base(
        term_ids=term_ids,
        starts=starts,
        seqs=seqs,
        freqs=freqs,
        lengths=np.bincount(every, minlength=highest + 1).astype(np.int32),
        present=present,
        rows=int(rows.shape[0]),
        tokens=int(every.shape[0]),
    )
