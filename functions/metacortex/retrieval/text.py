"""Text analysis for lexical retrieval, shared by every store so they rank alike.

Lowercase (casefold) Unicode words, English stop words dropped, Snowball
(Porter 2) stems. Stores index the analyzed term stream of ``retrieval_text``;
queries are analyzed the same way.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any, Final

_WORD: Final = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)
_MAX_TERM_CHARS: Final = 64

STOP_WORDS: Final = frozenset(
    """
    a about above after again against all am an and any are aren't as at be because been
    before being below between both but by can can't cannot could couldn't did didn't do
    does doesn't doing don't down during each few for from further had hadn't has hasn't
    have haven't having he he'd he'll he's her here here's hers herself him himself his how
    how's i i'd i'll i'm i've if in into is isn't it it's its itself let's me more most
    mustn't my myself no nor not of off on once only or other ought our ours ourselves out
    over own same shan't she she'd she'll she's should shouldn't so some such than that
    that's the their theirs them themselves then there there's these they they'd they'll
    they're they've this those through to too under until up very was wasn't we we'd we'll
    we're we've were weren't what what's when when's where where's which while who who's
    whom why why's with won't would wouldn't you you'd you'll you're you've your yours
    yourself yourselves
    """.split()
)


@lru_cache(maxsize=1)
def _english() -> Any:
    """The English Snowball stemmer, built on first use: importing snowballstemmer
    loads all its 30-odd languages (tens of ms), which a cold start that only
    answers tools/list should not pay."""
    import snowballstemmer

    return snowballstemmer.stemmer("english")


@lru_cache(maxsize=65_536)
def _stem(word: str) -> str:
    return str(_english().stemWord(word))


def words(text: str) -> list[str]:
    """Casefolded words, apostrophes normalized, before stop-word removal and stemming."""
    folded = unicodedata.normalize("NFKC", text).casefold().replace("’", "'")
    return [match.group(0) for match in _WORD.finditer(folded)]


def terms(text: str) -> list[str]:
    """The analyzed term stream of ``text`` (order and repeats kept, for BM25)."""
    out: list[str] = []
    for word in words(text):
        if word in STOP_WORDS:
            continue
        if word.endswith("'s"):
            word = word[:-2]
        word = word.replace("'", "")
        if not word:
            continue
        out.append(_stem(word)[:_MAX_TERM_CHARS])
    return out


@lru_cache(maxsize=2_048)
def term_frequencies(text: str) -> Mapping[str, int]:
    """Analyzed term -> occurrences in ``text`` (cached: ranking asks for the same records).

    The cache holds the texts themselves as keys, so its size bounds memory: 2,048
    records cover the candidates of several searches, and even if every one were at
    the 20,000-character content limit the keys would take about 40 MB (ASCII)."""
    counts: dict[str, int] = {}
    for term in terms(text):
        counts[term] = counts.get(term, 0) + 1
    return counts


def forget_texts() -> None:
    """Drop every text this process keeps for analysis (``term_frequencies``' keys, the
    words ``_stem`` has seen): called the moment records are erased, so that no copy of
    their words stays in a server's memory until the caches happen to evict it."""
    term_frequencies.cache_clear()
    _stem.cache_clear()


def term_count(text: str) -> int:
    """Length of the analyzed term stream of ``text``: BM25's document length."""
    return sum(term_frequencies(text).values())


def query_terms(text: str) -> list[str]:
    """Distinct analyzed terms of a query, in first-seen order."""
    return list(dict.fromkeys(terms(text)))


def doubtful_words(text: str, knows: Callable[[str], bool]) -> dict[str, str]:
    """Analyzed term -> the word it was read from (casefolded, a possessive's "'s"
    aside), for the words of ``text`` that ``knows`` (an embedding model's vocabulary,
    ``Embedder.knows``) does not recognize: the words a typo correction may replace."""
    doubtful: dict[str, str] = {}
    for word in words(text):
        bare = word.removesuffix("'s")
        if not knows(bare):
            for term in terms(word):
                doubtful.setdefault(term, bare)
    return doubtful


def respelled(text: str, replacements: Mapping[str, str]) -> str:
    """``text`` with each word whose analyzed term is a key of ``replacements``
    replaced by its value (typo correction before a query is embedded); ``text``
    itself, unchanged, when no word is."""
    if not replacements:
        return text
    normalized = unicodedata.normalize("NFKC", text)
    changed = False

    def swap(match: re.Match[str]) -> str:
        nonlocal changed
        analyzed = terms(match.group(0))
        if len(analyzed) == 1 and analyzed[0] in replacements:
            changed = True
            return replacements[analyzed[0]]
        return match.group(0)

    out = _WORD.sub(swap, normalized)
    return out if changed else text
