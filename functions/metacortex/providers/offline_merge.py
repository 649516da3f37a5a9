"""The deterministic offline merge used when no generation model is configured."""

from __future__ import annotations

import re
from collections.abc import Sequence

from metacortex.domain.fingerprint import normalize_content

# Sentence ends: ., ! or ? (optionally closed by a quote or bracket) followed by space,
# or a line break. Keeps abbreviations imperfectly but never drops text.
_SENTENCE_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"')\]]))\s+|\n+")


def split_sentences(text: str) -> list[str]:
    return [part.strip() for part in _SENTENCE_END.split(text) if part and part.strip()]


class SentenceUnionMerger:
    """Keeps every distinct sentence, in first-seen order (sources oldest first).

    Sentences count as the same when their normalized, casefolded text is equal.
    """

    @property
    def method(self) -> str:
        return "offline_sentence_union"

    def merge(self, topic: str, contents: Sequence[str]) -> str:
        seen: set[str] = set()
        kept: list[str] = []
        for content in contents:
            for sentence in split_sentences(content):
                key = normalize_content(sentence).casefold()
                if key not in seen:
                    seen.add(key)
                    kept.append(sentence)
        return "\n".join(kept)
