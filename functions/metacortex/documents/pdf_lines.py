"""Lines of text on PDF pages, and the clean-up every PDF reader needs on them.

Independent of the PDF library: ``pdf.py`` builds ``PageLines`` from pdfminer's
line fragments, and ``bench/pdf_extract.py`` from each candidate library, so the
candidates are compared with the same running-header and hyphen rules.

Running headers and footers (a journal's title, "Confidential", page numbers)
are lines among the two nearest the top or bottom edge, inside the margin band,
whose text (digits masked) and type size appear at the same height on several
pages. A lone page number there is dropped even when the document has one page:
it is never content. A header printed on one page only cannot be told from text
and stays.
"""

from __future__ import annotations

import re
import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final

# Share of the page height, from the top and from the bottom, where running lines sit.
MARGIN_BAND: Final = 0.15
# A running line repeats on at least this share of the pages (and on two of them):
# under a half, so headers that alternate between even and odd pages count.
REPEAT_SHARE: Final = 0.3
# Points a repeated line may move between pages and still be "the same position".
POSITION_TOLERANCE: Final = 4.0
# Running lines are among the few lines nearest the page's top or bottom edge (a title
# and a page number on lines of their own): body text below them never is.
EDGE_LINES: Final = 2

# The characters readers put at a hyphenated line end: a hyphen, a soft hyphen,
# and pdfium's U+FFFE marker for a generated (soft) hyphen.
_LINE_END_HYPHENS: Final = ("-", "\u00ad", "\ufffe")
_PAGE_NUMBER: Final = re.compile(
    r"(?:page\s*)?(?:\d{1,5}|[ivxlcdm]{1,8})(?:\s*(?:/|of)\s*\d{1,5})?", re.IGNORECASE
)


@dataclass(frozen=True, slots=True)
class Line:
    """One line of text; ``top``/``bottom`` measured in points down from the page top."""

    text: str
    x0: float
    top: float
    x1: float
    bottom: float
    size: float  # the line's font size in points (its characters' median height)
    bold: bool = False  # every character in a bold face


@dataclass(frozen=True, slots=True)
class PageLines:
    number: int  # 1-based
    width: float
    height: float
    lines: tuple[Line, ...]


def _masked(line: Line) -> str:
    """The line's text with digits masked, and its type size: a running title set small
    at the top of later pages is not the same line as the title set large on page 1."""
    text = re.sub(r"\d+", "#", " ".join(line.text.split()).casefold())
    return f"{text}@{round(line.size)}"


def _side(line: Line, height: float) -> str | None:
    if line.bottom <= height * MARGIN_BAND:
        return "top"
    if line.top >= height * (1 - MARGIN_BAND):
        return "bottom"
    return None


def is_page_number(text: str) -> bool:
    return _PAGE_NUMBER.fullmatch(" ".join(text.split())) is not None


def _edge_lines(page: PageLines) -> dict[str, list[int]]:
    """Per side, the indexes of the ``EDGE_LINES`` lines nearest that edge (within the
    margin band), the outermost first."""
    found: dict[str, list[int]] = {}
    for side in ("top", "bottom"):
        banded = [i for i, line in enumerate(page.lines) if _side(line, page.height) == side]
        banded.sort(key=lambda i: page.lines[i].top, reverse=side == "bottom")
        found[side] = banded[:EDGE_LINES]
    return found


def drop_running_lines(pages: Sequence[PageLines]) -> list[PageLines]:
    """The pages without their running headers, footers and page numbers."""
    seen: dict[tuple[str, str], dict[int, float]] = defaultdict(dict)
    edges = [_edge_lines(page) for page in pages]
    for page, edge in zip(pages, edges, strict=True):
        for side, indexes in edge.items():
            for index in indexes:
                line = page.lines[index]
                seen[(_masked(line), side)].setdefault(page.number, line.top)
    needed = max(2, int(len(pages) * REPEAT_SHARE + 0.999))
    running: dict[tuple[str, str], float] = {}
    for key, tops in seen.items():
        if len(tops) >= needed:
            middle = statistics.median(tops.values())
            near = [top for top in tops.values() if abs(top - middle) <= POSITION_TOLERANCE]
            if len(near) >= needed:
                running[key] = middle
    cleaned = []
    for page, edge in zip(pages, edges, strict=True):
        dropped: set[int] = set()
        for side, indexes in edge.items():
            for index in indexes:  # from the edge inwards, while the lines are running
                line = page.lines[index]
                at = running.get((_masked(line), side))
                if (at is None or abs(line.top - at) > POSITION_TOLERANCE) and not (
                    is_page_number(line.text)
                ):
                    break
                dropped.add(index)
        kept = tuple(line for i, line in enumerate(page.lines) if i not in dropped)
        cleaned.append(replace(page, lines=kept))
    return cleaned


def ends_hyphenated(text: str) -> bool:
    return len(text) >= 2 and text.endswith(_LINE_END_HYPHENS) and text[-2].isalpha()


def join_lines(texts: Sequence[str]) -> str:
    """Lines of one paragraph as one string. A word hyphenated at a line end is joined
    when the next line goes on in lower case ("infor-" + "mation" is "information");
    a hyphen before a capital or a digit stays ("Jean-" + "Paul" is "Jean-Paul"). A
    soft hyphen (U+00AD, or pdfium's U+FFFE) is always a break inside a word.
    A compound broken at its own hyphen ("well-" + "known") loses its hyphen: a
    reader without a dictionary cannot tell it from "infor-" + "mation"."""
    joined = ""
    for raw in texts:
        text = " ".join(raw.split())
        if not text:
            continue
        if not joined:
            joined = text
        elif ends_hyphenated(joined) and (joined[-1] != "-" or text[0].islower()):
            joined = joined[:-1] + text  # a soft hyphen, or a word broken in two
        elif ends_hyphenated(joined):
            joined += text  # a compound broken at its own hyphen
        else:
            joined += " " + text
    return joined.replace("\u00ad", "").replace("\ufffe", "")
