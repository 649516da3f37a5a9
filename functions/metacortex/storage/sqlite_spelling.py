"""Typo correction of a query before it is embedded, against a space's whole
vocabulary (the in-memory keyword index's terms), on SQLite.

Why: a misspelled word is out of the embedding model's vocabulary and splits into
word pieces, so the semantic list loses most of what the keyword side's expansion
(``retrieval/typos.py``) wins back (docs/benchmarks.md, "Typo tolerance"). Here the
store has every term in memory, so each query word no record of the space holds is
corrected to the nearest term some record of the space holds (the rules of
``retrieval/typos.py``: the nearest, then the one more records of the space hold),
written as a word of such a record, and the search use case embeds the corrected
text instead (``retrieval/text.py`` ``respelled``): still one embedding per search.
Which words may be corrected is the caller's choice: the use case asks only for the
words the embedding model does not read as one token (``Embedder.knows``).

A term some record of the space holds is never corrected; a term only another space
holds is never a correction (every count is the space's).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from metacortex.retrieval import typos as spelling
from metacortex.retrieval.text import terms, words
from metacortex.storage.sqlite_keywords import KeywordIndex

Passes = Callable[[npt.NDArray[np.int64]], npt.NDArray[np.bool_]]


def corrections(
    terms_asked: Sequence[str],
    index: KeywordIndex,
    in_space: Passes,
    texts_holding: Callable[[str], Sequence[str]],
    meant: Callable[[str], Mapping[str, int]] | None,
) -> dict[str, str]:
    """Term -> the word to write instead, for each of ``terms_asked`` no record of the
    space holds that has a correction. ``in_space``: which seqs are the space's;
    ``texts_holding(term)``: the retrieval text of a record of the space holding
    ``term`` (where the correction's spelling is read); ``meant(term)``: real words
    the term's typed word may have meant (``Embedder.words_near``), asked only for
    the terms no record of the space holds."""
    # With real words to compare, a stem may be shorter than a stem-to-stem correction
    # needs ("boks" is read as "bok"): its word, not its stem, is compared.
    wanted = [
        term
        for term in dict.fromkeys(terms_asked)
        if spelling.eligible(term) or (meant is not None and term.isalpha())
    ]
    unknown = index.unheld(wanted, in_space) if wanted else []
    replacements: dict[str, str] = {}
    for term in unknown:
        real = _real_word(meant(term), index, in_space) if meant is not None else None
        if real is not None:
            replacements[term] = real
            continue
        if not spelling.eligible(term):
            continue
        found = index.near(term)
        if not found:
            continue
        held = dict(zip(found, index.held_by(list(found), in_space), strict=True))
        reachable = {word: distance for word, distance in found.items() if held[word]}
        if not reachable:
            continue
        best = spelling.nearest_first(reachable, held)[0]
        replacements[term] = _spelling(best, texts_holding(best))
    return replacements


def _real_word(words_meant: Mapping[str, int], index: KeywordIndex, in_space: Passes) -> str | None:
    """The real word meant whose term the space holds: the nearest, then the one more
    records hold, then alphabetically. A typo's stem and its word's can be far apart
    ("plannirng" keeps its ending, "planning" is stored as "plan"), its word and the
    real word never are."""
    by_term: dict[str, tuple[int, str]] = {}
    for word, distance in sorted(words_meant.items(), key=lambda item: (item[1], item[0])):
        analyzed = terms(word)
        if len(analyzed) == 1:
            by_term.setdefault(analyzed[0], (distance, word))
    if not by_term:
        return None
    held = index.held_by(list(by_term), in_space)
    ranked = sorted(
        (by_term[term][0], -count, by_term[term][1])
        for term, count in zip(by_term, held, strict=True)
        if count
    )
    return ranked[0][2] if ranked else None


def _spelling(term: str, texts: Sequence[str]) -> str:
    """A word of ``texts`` whose analyzed term is ``term`` (the term itself if none)."""
    for text in texts:
        for word in words(text):
            if terms(word) == [term]:
                return word
    return term
