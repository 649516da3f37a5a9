"""Typo tolerance for keyword search: a query term no record of the space holds is
expanded to the terms of nearby records that are within a small edit distance of it.

Shared by every store so they expand alike (docs/ARCHITECTURE.md, "Typo tolerance"):

- which terms: a query term (an analyzed stem, ``retrieval/text.py``) of at least
  ``MIN_TERM_CHARS`` letters that **no record of the space holds**. A term some
  record holds is never expanded, so a query whose terms are all in the space's
  vocabulary ranks exactly as without this module;
- against what: the vocabulary of the records the semantic search returned for
  the same query and filter (its candidate pool), which the store has in hand
  anyway: the words of the records nearest in meaning, never a word of another
  space, and a few thousand terms at most whatever the store's size;
- how near: optimal string alignment distance (Levenshtein plus adjacent
  transposition, ``rapidfuzz``) at most 1, 2 for terms of ``LONG_TERM_CHARS`` or
  more; or a shorter candidate that the term's start matches when the term is at
  most ``SUFFIX_CHARS`` longer (a typo in a word's ending keeps the stemmer from
  removing it: "meetign" stays "meetign" while "meeting" is stored as "meet"), the
  kept ending counting as one edit;
- how much: each expansion counts in BM25 as its own term, with its own IDF,
  multiplied by ``WEIGHT[distance]`` (below 1: an expansion never scores as high as
  the same record would for the exact word), at most ``MAX_EXPANSIONS`` per term,
  the nearest first, then those held by more candidates.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Final

import numpy as np
from rapidfuzz import process
from rapidfuzz.distance import OSA

MIN_TERM_CHARS: Final = 4
LONG_TERM_CHARS: Final = 8
SUFFIX_CHARS: Final = 3
MAX_EXPANSIONS: Final = 3
# BM25 weight of an expansion by its distance (an exact term weighs 1).
WEIGHT: Final = {1: 0.8, 2: 0.6}


def eligible(term: str) -> bool:
    """Whether ``term`` may be expanded when no record of the space holds it: long
    enough for an edit-distance neighbour to mean something, and made of letters (an
    identifier or a number is never a typo of another)."""
    return len(term) >= MIN_TERM_CHARS and term.isalpha()


def _reach(term: str) -> int:
    return 2 if len(term) >= LONG_TERM_CHARS else 1


class Lexicon:
    """Candidate words long enough to be a correction, grouped by length, each with the
    set of its letters as a bit mask: ``near`` scans only the lengths in reach, and
    only the words whose letters differ from the term's in at most two per edit (an
    edit changes at most two letters of the set; a necessary condition, so nothing in
    reach is skipped), which keeps a scan of 100,000 terms to a fraction of a
    millisecond (docs/benchmarks.md, "Typo tolerance")."""

    __slots__ = ("_groups",)

    def __init__(self, words: Iterable[str]) -> None:
        grouped: dict[int, list[str]] = defaultdict(list)
        for word in words:
            if len(word) >= MIN_TERM_CHARS:
                grouped[len(word)].append(word)
        self._groups = {
            length: (group, np.fromiter(map(_letters, group), np.uint32, len(group)))
            for length, group in grouped.items()
        }

    def within(self, length: int, term: str, edits: int) -> list[str]:
        """The words of ``length`` whose letters allow ``edits`` edits from ``term``."""
        group = self._groups.get(length)
        if group is None:
            return []
        words, masks = group
        close = np.bitwise_count(masks ^ np.uint32(_letters(term))) <= 2 * edits
        return [words[i] for i in np.flatnonzero(close)]


def _letters(word: str) -> int:
    """The set of ``word``'s letters as bits (a-z their own, others sharing six)."""
    mask = 0
    for char in word:
        code = ord(char) - 97
        mask |= 1 << (code if 0 <= code < 26 else 26 + ord(char) % 6)
    return mask


def one_edit(word: str, lexicon: Lexicon) -> dict[str, int]:
    """Word -> 1, for every word of ``lexicon`` one edit (optimal string alignment:
    a letter inserted, deleted, replaced, or two swapped) from ``word``: the real
    words a typo in ``word`` may have meant."""
    found: dict[str, int] = {}
    for length in range(len(word) - 1, len(word) + 2):
        for other, distance, _ in process.extract(
            word, lexicon.within(length, word, 1), scorer=OSA.distance, score_cutoff=1, limit=None
        ):
            if distance:
                found[other] = int(distance)
    return found


def near(term: str, lexicon: Lexicon) -> dict[str, int]:
    """Word -> its distance from ``term``, for every word of ``lexicon`` within reach of
    it: by edit distance, or by the term's start against a shorter word (an ending the
    stemmer kept, which counts as one edit)."""
    reach = _reach(term)
    found: dict[str, int] = {}
    for length in range(len(term) - reach, len(term) + reach + 1):
        for word, distance, _ in process.extract(
            term,
            lexicon.within(length, term, reach),
            scorer=OSA.distance,
            score_cutoff=reach,
            limit=None,
        ):
            found[word] = int(distance)
    for length in range(max(MIN_TERM_CHARS, len(term) - SUFFIX_CHARS), len(term)):
        start = term[:length]
        for word, distance, _ in process.extract(
            start,
            lexicon.within(length, start, reach - 1),
            scorer=OSA.distance,
            score_cutoff=reach - 1,
            limit=None,
        ):
            found[word] = min(found.get(word, reach), int(distance) + 1)
    return found


def nearest_first(found: Mapping[str, int], counts: Mapping[str, int]) -> list[str]:
    """``found`` (``near``) the nearest first, then the more common (``counts``: how
    many records hold the word; the likelier the meant word), then alphabetically."""
    return sorted(found, key=lambda word: (found[word], -counts.get(word, 0), word))


def expansions(
    unknown: Sequence[str], vocabulary: Mapping[str, int], query: Collection[str]
) -> dict[str, float]:
    """Expansion term -> its BM25 weight, for the ``unknown`` query terms.

    ``vocabulary``: term -> how many candidate records hold it (the tie-break: the
    more common in the neighbourhood, the likelier the meant word). A term of the
    ``query`` is never an expansion (it counts once, at its full weight)."""
    chosen: dict[str, float] = {}
    lexicon = Lexicon(word for word in vocabulary if word not in query)
    for term in unknown:
        if not eligible(term):
            continue
        found = near(term, lexicon)
        for word in nearest_first(found, vocabulary)[:MAX_EXPANSIONS]:
            chosen[word] = max(chosen.get(word, 0.0), WEIGHT[found[word]])
    return chosen


def vocabulary_of(streams: Iterable[Iterable[str]]) -> dict[str, int]:
    """Term -> how many of the term streams (candidate records) hold it."""
    counts: dict[str, int] = defaultdict(int)
    for stream in streams:
        for term in set(stream):
            counts[term] += 1
    return dict(counts)
