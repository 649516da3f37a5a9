"""``search_context``'s ``keyword``: a literal match, apart from the query's meaning.

A keyword (a ticket number ``INC-4821``, a version ``v2.3.1``, an error code) is
found where a memory's ``retrieval_text`` holds it as written, letter case and
Unicode forms aside (both sides NFKC and casefolded, as the keyword index reads
them), and not inside a longer word: ``v2.3.1`` is not found in ``v2.3.10``,
``4821`` not in ``48210``; ``v2.3`` is found in ``v2.3.1``, since ``.`` ends a word.

Candidates come from the keyword index (``MemoryStore.lexical_search``, or the
hybrid search's keyword side) by the keyword's analyzed terms, so a keyword must
hold at least one word the index keeps (not only stop words or punctuation);
the literal check then keeps the candidates that hold the keyword itself. The
candidates are the index's best ``CANDIDATE_POOL`` (100): a keyword whose every word
is common (held by more memories than that) may miss some that hold it; a ticket
number, a version or a code holds a rare word. The check reads nothing more from
the store.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Final

from metacortex.domain import limits
from metacortex.errors import InvalidArgument
from metacortex.retrieval.text import query_terms

_WORD_CHAR: Final = re.compile(r"[^\W_]")


@dataclass(frozen=True, slots=True)
class Keyword:
    text: str
    # What the keyword index is asked for (``retrieval.text.query_terms``).
    terms: tuple[str, ...]
    pattern: re.Pattern[str]

    def held_by(self, text: str) -> bool:
        """Whether ``text`` holds the keyword as written (see the module's note)."""
        return self.pattern.search(_folded(text)) is not None


def parse_keyword(value: str) -> Keyword:
    """The keyword to search for, or InvalidArgument saying what is wrong with it."""
    text = limits.check_string(value, "keyword").strip()
    if not text:
        raise InvalidArgument("keyword must not be empty")
    if len(text) > limits.MAX_KEYWORD_CHARS:
        raise InvalidArgument(
            f"keyword is {len(text)} characters; the limit is {limits.MAX_KEYWORD_CHARS} "
            "(a code, a number or a name; put a question in query)"
        )
    terms = tuple(query_terms(text))
    if not terms:
        raise InvalidArgument(
            f"keyword {text!r} holds no word the search can look up (only common words or "
            "punctuation); give a rarer word, a code or a number"
        )
    folded = _folded(text)
    start = r"(?<![^\W_])" if _WORD_CHAR.match(folded[0]) else ""
    end = r"(?![^\W_])" if _WORD_CHAR.match(folded[-1]) else ""
    return Keyword(text, terms, re.compile(start + re.escape(folded) + end))


def _folded(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()
