"""The deterministic offline merge used when no generation model is configured.

Drafts become one memory that reads as one: their draft markers ("Draft:", "[wip]")
and list bullets are dropped, each distinct sentence is kept once, a sentence that a
longer one states in full gives way to that one (in the place of the first of them),
and the sentences form one paragraph, sources oldest first. No fact is dropped: only
exact repeats and sentences contained word for word in another (never one whose
longer form adds a negation) are merged.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from metacortex.domain.fingerprint import normalize_content
from metacortex.retrieval.text import words

# Sentence ends: ., ! or ? (optionally closed by a quote or bracket) followed by space,
# or a line break. Keeps abbreviations imperfectly but never drops text.
_SENTENCE_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"')\]]))\s+|\n+")
# At the start of a line or sentence: "Draft:", "DRAFT -", "WIP:", "[draft]", "(wip)".
_MARKER: Final = re.compile(
    r"^\s*(?:[\[(]\s*(?:draft|wip)\s*[\])]\s*[:\-–—]?|(?:draft|wip)\s*[:\-–—])\s*", re.IGNORECASE
)
# List bullets at the start of a line: "- ", "* ", "• ", "1. ", "2) ".
_BULLET: Final = re.compile(r"^\s*(?:[-*•‣]|\d{1,3}[.)])\s+")
_NEGATIONS: Final = frozenset({"not", "no", "never", "without", "none", "nor", "cannot"})
_TRAILING: Final = re.compile(r"[\s.!?;:,]+$")


def split_sentences(text: str) -> list[str]:
    return [part.strip() for part in _SENTENCE_END.split(text) if part and part.strip()]


class SentenceUnionMerger:
    """Keeps every distinct statement once, as one paragraph (sources oldest first)."""

    @property
    def method(self) -> str:
        return "offline_sentence_merge"

    def merge(self, topic: str, contents: Sequence[str]) -> str:
        sentences: list[str] = []
        seen: set[str] = set()
        for content in contents:
            for sentence in _sentences_of(content):
                key = _key(sentence)
                if key and key not in seen:
                    seen.add(key)
                    sentences.append(sentence)
        tokens = [words(sentence) for sentence in sentences]
        kept: list[str] = []
        for index, sentence in enumerate(sentences):
            fuller = _fuller(index, tokens)
            chosen = sentences[fuller] if fuller is not None else sentence
            if chosen not in kept:
                kept.append(chosen)
        return " ".join(kept)


def _sentences_of(content: str) -> list[str]:
    """The content's sentences, markers and bullets dropped, each ending as a sentence."""
    out: list[str] = []
    for line in content.splitlines():
        line, marked = _unmark(line)
        for number, sentence in enumerate(split_sentences(line)):
            sentence, also_marked = _unmark(sentence)
            if not sentence:
                continue
            out.append(_finish(sentence, capitalize=also_marked or (marked and number == 0)))
    return out


def _unmark(text: str) -> tuple[str, bool]:
    """``text`` without leading draft markers and bullets; whether any was there."""
    stripped = text
    while True:
        shorter = _BULLET.sub("", _MARKER.sub("", stripped, count=1), count=1)
        if shorter == stripped:
            break
        stripped = shorter
    return stripped.strip(), stripped != text


def _finish(sentence: str, *, capitalize: bool) -> str:
    """A capital after a dropped marker (only for an all-lowercase first word, so "iOS"
    and "npm" stay), and a full stop where the sentence ends in a word."""
    first = sentence.split(maxsplit=1)[0]
    if capitalize and first.isalpha() and first.islower():
        sentence = sentence[0].upper() + sentence[1:]
    if sentence[-1].isalnum():
        sentence += "."
    return sentence


def _key(sentence: str) -> str:
    return _TRAILING.sub("", normalize_content(sentence).casefold())


def _fuller(index: int, tokens: list[list[str]]) -> int | None:
    """The longest other sentence that states this one word for word (its words in a row),
    adding no negation; None when there is none."""
    mine = tokens[index]
    best: int | None = None
    for other, theirs in enumerate(tokens):
        if other == index or len(theirs) <= len(mine) or not mine:
            continue
        if best is not None and len(theirs) <= len(tokens[best]):
            continue
        at = _run_at(mine, theirs)
        if at is None:
            continue
        added = theirs[:at] + theirs[at + len(mine) :]
        if any(word in _NEGATIONS or word.endswith("n't") for word in added):
            continue
        best = other
    return best


def _run_at(run: list[str], within: list[str]) -> int | None:
    for start in range(len(within) - len(run) + 1):
        if within[start : start + len(run)] == run:
            return start
    return None
