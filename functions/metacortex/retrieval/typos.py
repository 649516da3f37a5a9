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


def expansions(
    unknown: Sequence[str], vocabulary: Mapping[str, int], query: Collection[str]
) -> dict[str, float]:
    """Expansion term -> its BM25 weight, for the ``unknown`` query terms.

    ``vocabulary``: term -> how many candidate records hold it (the tie-break: the
    more common in the neighbourhood, the likelier the meant word). A term of the
    ``query`` is never an expansion (it counts once, at its full weight)."""
    chosen: dict[str, float] = {}
    by_length: dict[int, list[str]] = defaultdict(list)
    for word in vocabulary:
        if len(word) >= MIN_TERM_CHARS and word not in query:
            by_length[len(word)].append(word)
    everything = [word for words in by_length.values() for word in words]
    for term in unknown:
        if not eligible(term):
            continue
        reach = _reach(term)
        found: dict[str, int] = {}
        for word, distance, _ in process.extract(
            term, everything, scorer=OSA.distance, score_cutoff=reach, limit=None
        ):
            found[word] = int(distance)
        # The term's start against shorter candidates: an ending the stemmer kept,
        # which counts as one edit.
        for length in range(max(MIN_TERM_CHARS, len(term) - SUFFIX_CHARS), len(term)):
            for word, distance, _ in process.extract(
                term[:length],
                by_length.get(length, ()),
                scorer=OSA.distance,
                score_cutoff=reach - 1,
                limit=None,
            ):
                found[word] = min(found.get(word, reach), int(distance) + 1)
        nearest = sorted(found, key=lambda word: (found[word], -vocabulary[word], word))
        for word in nearest[:MAX_EXPANSIONS]:
            chosen[word] = max(chosen.get(word, 0.0), WEIGHT[found[word]])
    return chosen


def vocabulary_of(streams: Iterable[Iterable[str]]) -> dict[str, int]:
    """Term -> how many of the term streams (candidate records) hold it."""
    counts: dict[str, int] = defaultdict(int)
    for stream in streams:
        for term in set(stream):
            counts[term] += 1
    return dict(counts)
