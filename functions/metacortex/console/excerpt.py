"""What a listing shows of a record's text: a short title, a one-line preview of the rest,
and the words a search or keyword filter matched, marked.

Matching uses the search's own analyzer (``retrieval.text.terms``: casefolded words, stop
words dropped, Snowball stems), so "invoices" is marked for the query "invoice" exactly
when keyword search counts it. Every piece of text is escaped here; only ``<mark>`` is
added, so the result is safe to put in a page as it is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from markupsafe import Markup, escape

from metacortex.console.present import first_line
from metacortex.retrieval.text import terms

# A title is cut at a word boundary near this; the preview continues from there.
TITLE_CHARS: Final = 80
PREVIEW_CHARS: Final = 240
# About what one line of preview shows on a desktop: a match further on is not seen.
VISIBLE_CHARS: Final = 90
# A preview that jumps to the first matched word starts this far before it.
LEAD_CHARS: Final = 40
_WORD: Final = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
_WHITESPACE: Final = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class Excerpt:
    title: Markup
    preview: Markup  # empty when the title is the whole text


def excerpt(content: str, matched: Iterable[str] = ()) -> Excerpt:
    """The title (first line, cut near ``TITLE_CHARS`` at a word) and a preview of what
    follows, both with ``matched`` terms marked. When the match lies beyond what they
    show, the preview is the text around the first match instead."""
    wanted = frozenset(matched)
    collapsed = _WHITESPACE.sub(" ", content).strip()
    line = first_line(content, limit=len(content) + 1)
    title = _cut(line, TITLE_CHARS)
    shown = len(title) - 1 if title.endswith("…") and title != line else len(line)
    rest = collapsed[shown:].lstrip(" ,;:") if collapsed.startswith(title.rstrip("…")) else ""
    preview = _cut(rest, PREVIEW_CHARS)
    if wanted and not _has(title + " " + preview[:VISIBLE_CHARS], wanted):
        around = _around_first(collapsed, wanted)
        if around is not None:
            preview = around
    return Excerpt(highlight(title, wanted), highlight(preview, wanted))


def highlight(text: str, matched: Iterable[str]) -> Markup:
    """``text`` escaped, each word whose analyzed term is one of ``matched`` in ``<mark>``."""
    wanted = frozenset(matched)
    if not wanted:
        return escape(text)
    pieces: list[Markup] = []
    last = 0
    for word in _WORD.finditer(text):
        if wanted.intersection(terms(word.group(0))):
            pieces.append(escape(text[last : word.start()]))
            pieces.append(Markup("<mark>%s</mark>") % word.group(0))
            last = word.end()
    pieces.append(escape(text[last:]))
    return Markup("").join(pieces)


def _cut(text: str, limit: int) -> str:
    """``text`` up to ``limit`` characters, cut after a whole word with an ellipsis."""
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    space = head.rfind(" ")
    if space > limit // 2:
        head = head[:space]
    return head.rstrip(" ,;:") + "…"


def _has(text: str, wanted: frozenset[str]) -> bool:
    return any(wanted.intersection(terms(word.group(0))) for word in _WORD.finditer(text))


def _around_first(text: str, wanted: frozenset[str]) -> str | None:
    for word in _WORD.finditer(text):
        if wanted.intersection(terms(word.group(0))):
            begin = max(0, word.start() - LEAD_CHARS)
            space = text.find(" ", begin)
            if begin and 0 <= space < word.start():
                begin = space + 1
            return ("…" if begin else "") + _cut(text[begin:], PREVIEW_CHARS)
    return None
