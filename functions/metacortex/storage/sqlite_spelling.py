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

from collections.abc import Callable, Sequence

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
) -> dict[str, str]:
    """Term -> the word to write instead, for each of ``terms_asked`` no record of the
    space holds that has a correction. ``in_space``: which seqs are the space's;
    ``texts_holding(term)``: the retrieval text of a record of the space holding
    ``term`` (where the correction's spelling is read)."""
    wanted = [term for term in dict.fromkeys(terms_asked) if spelling.eligible(term)]
    unknown = index.unheld(wanted, in_space) if wanted else []
    replacements: dict[str, str] = {}
    for term in unknown:
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


def _spelling(term: str, texts: Sequence[str]) -> str:
    """A word of ``texts`` whose analyzed term is ``term`` (the term itself if none)."""
    for text in texts:
        for word in words(text):
            if terms(word) == [term]:
                return word
    return term
