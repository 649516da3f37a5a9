"""What extraction gives: a document's text and its blocks in reading order."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final

# The outcome of a PDF whose pages are pictures (a scan): kept, with nothing to index.
NO_TEXT_LAYER: Final = "no text to index; OCR is not offered"
# The outcome of a scan whose pages OCR read and found no text on.
NO_TEXT_READ: Final = "no text to index: OCR found no text on its pages"
# The outcome of a scan none of whose pages OCR reached before its page or time bound.
NO_TEXT_UNREAD: Final = (
    "no text to index: OCR stopped at its page or time bound before reading a page "
    "(METACORTEX_OCR_MAX_PAGES, METACORTEX_OCR_SECONDS)"
)
# The outcome of a document with no text at all (blank pages, an empty file).
NO_TEXT: Final = "no text to index: the document is empty"


class BlockKind(StrEnum):
    HEADING = "heading"
    PARAGRAPH = "paragraph"
    LIST_ITEM = "list_item"
    TABLE_ROW = "table_row"


@dataclass(frozen=True, slots=True)
class Block:
    """One unit of the document's own structure, in reading order.

    ``text[start:end]`` of the document is this block's text. ``heading_path`` is the
    chain of headings it sits under, outermost first (a heading's path ends with
    itself). ``page``/``page_end``: first and last page (1-based) it is printed on,
    for PDFs; None for formats without pages.
    """

    kind: BlockKind
    text: str
    heading_path: tuple[str, ...]
    start: int
    end: int
    page: int | None = None
    page_end: int | None = None
    level: int = 0  # a heading's level (1 = outermost); 0 for other kinds


@dataclass(frozen=True, slots=True)
class ExtractedDocument:
    """The readable content of one file.

    ``text`` is every block's text joined by blank lines; spans index it. ``no_text``
    says why there is nothing to index (``NO_TEXT_LAYER`` for a scan, ``NO_TEXT``)
    when ``blocks`` is empty; it is None otherwise. ``pages_without_text`` lists the
    pages of a PDF that are pictures only and were not read by OCR (it is off or not
    installed, found no text there, or stopped at its page or time bound).
    """

    media_type: str
    title: str | None
    page_count: int | None  # PDFs only
    text: str
    blocks: tuple[Block, ...]
    no_text: str | None = None
    pages_without_text: tuple[int, ...] = ()
