"""PDF in reading order: pdfminer.six's characters and line fragments, our own page
order (docs/DOCUMENTS.md, "PDF").

pdfminer turns a page's drawing operations into characters with positions and runs
them into line fragments; ``reading_order`` puts the fragments in reading order
by the page's whitespace (columns left to right, each top to bottom), whatever
order the generator drew them in. Then: running headers, footers and page
numbers are dropped (``pdf_lines``); lines become paragraphs at blank space, font
changes and bullets, with hyphenated line ends joined; a line set larger than the
body text (or bold at body size) is a heading, its size ranking its level; a
paragraph that goes on in the next column or on the next page (its predecessor
ends without a full stop) is joined to the one before.

A page with pictures and no text is read by OCR where the ``ocr`` extra is installed
and the limits allow (``pdf_ocr``); one still without text is listed in
``pages_without_text``; a document with no text at all says ``NO_TEXT_LAYER`` (a scan,
not read), ``NO_TEXT_READ`` (a scan OCR found nothing on) or ``NO_TEXT``.
"""

from __future__ import annotations

import io
import re
import statistics
import warnings
from collections import Counter
from dataclasses import dataclass, field
from itertools import islice
from typing import Final

from pdfminer.converter import PDFPageAggregator
from pdfminer.layout import LAParams, LTChar, LTContainer, LTImage, LTItem, LTTextBox, LTTextLine
from pdfminer.pdfdocument import PDFDocument, PDFEncryptionError, PDFPasswordIncorrect
from pdfminer.pdfinterp import PDFPageInterpreter, PDFResourceManager
from pdfminer.pdfpage import PDFPage
from pdfminer.pdfparser import PDFParser
from pdfminer.pdftypes import resolve1
from pdfminer.utils import decode_text

from metacortex.documents import pdf_ocr
from metacortex.documents.builder import BlockBuilder
from metacortex.documents.limits import DocumentLimits
from metacortex.documents.model import (
    NO_TEXT,
    NO_TEXT_LAYER,
    NO_TEXT_READ,
    NO_TEXT_UNREAD,
    BlockKind,
    ExtractedDocument,
)
from metacortex.documents.pdf_lines import Line, PageLines, drop_running_lines, join_lines
from metacortex.documents.pdf_streams import ExpansionExceeded, expansion_budget
from metacortex.documents.reading_order import reading_order
from metacortex.errors import DocumentRefused

# pdfminer's own box ordering is off (boxes_flow=None): reading_order does it, and
# pdfminer's misread justified lines with wide word gaps (bench/locomo_documents.py).
LAYOUT: Final = LAParams(boxes_flow=None)
# A gap between two lines of more than this share of a line's height ends a paragraph.
PARAGRAPH_GAP: Final = 0.5
# A line this much larger than the body text is a heading.
HEADING_SIZE_RATIO: Final = 1.15
HEADING_MAX_CHARS: Final = 200
_BULLET: Final = re.compile(
    r"^(?:[•◦▪▫‣⁃●○■□➢►–*\uf0b7\uf0a7\uf076\uf0d8-]|\(?\d{1,3}[.)]|\(?[a-z][.)])\s+"
)
_SENTENCE_END: Final = (".", "!", "?", ":", ";", '"', "”", "’", ")")
_BOLD: Final = re.compile(r"bold|black|heavy|semibold", re.IGNORECASE)


@dataclass(slots=True)
class _Group:
    """Consecutive lines with one font: a paragraph or a heading."""

    page: int
    lines: list[Line] = field(default_factory=list)
    bold: bool = False

    @property
    def size(self) -> float:
        return statistics.median(line.size for line in self.lines)

    @property
    def text(self) -> str:
        return join_lines([line.text for line in self.lines])


def _envelope(data: bytes) -> None:
    if b"%PDF-" not in data[:1024]:
        raise DocumentRefused("corrupt", "the file is not a PDF (no %PDF- header)")
    if b"%%EOF" not in data[-2048:]:
        raise DocumentRefused(
            "corrupt",
            "the PDF is truncated (it does not end with %%EOF): send the whole file",
        )


def _has_image(item: LTItem) -> bool:
    if isinstance(item, LTImage):
        return True
    return isinstance(item, LTContainer) and any(_has_image(child) for child in item)


def _page_lines(page: PDFPage, number: int, manager: PDFResourceManager) -> tuple[PageLines, bool]:
    """The page's lines in reading order, and whether it has images."""
    device = PDFPageAggregator(manager, laparams=LAYOUT)
    PDFPageInterpreter(manager, device).process_page(page)
    layout = device.get_result()
    height = layout.height
    fragments: list[Line] = []
    images = False
    for item in layout:
        if not isinstance(item, LTTextBox):
            images = images or _has_image(item)
            continue
        for row in item:
            if not isinstance(row, LTTextLine) or not row.get_text().strip():
                continue
            chars = [c for c in row if isinstance(c, LTChar) and c.get_text().strip()]
            fragments.append(
                Line(
                    row.get_text().strip(),
                    row.x0,
                    height - row.y1,
                    row.x1,
                    height - row.y0,
                    statistics.median(c.size for c in chars) if chars else 0.0,
                    bool(chars) and all(_BOLD.search(c.fontname) for c in chars),
                )
            )
    ordered = tuple(reading_order(fragments))
    return PageLines(number, layout.width, height, ordered), images


def _starts_paragraph(line: Line, previous: Line | None, group: _Group | None) -> bool:
    if previous is None or group is None:
        return True
    height = max(previous.bottom - previous.top, 1.0)
    resized = not 0.87 < (line.size or 1) / (previous.size or 1) < 1.15
    return (
        resized
        or line.bold != group.bold
        or line.top < previous.top  # up to the next column
        or line.top - previous.bottom > PARAGRAPH_GAP * height
        or _BULLET.match(line.text) is not None
    )


def _groups(pages: list[PageLines]) -> list[_Group]:
    groups: list[_Group] = []
    for page in pages:
        current: _Group | None = None
        previous: Line | None = None
        for line in page.lines:
            if _starts_paragraph(line, previous, current):
                current = _Group(page.number, bold=line.bold)
                groups.append(current)
            assert current is not None
            current.lines.append(line)
            previous = line
    return groups


def _body_size(groups: list[_Group]) -> float:
    weights: Counter[float] = Counter()
    for group in groups:
        for line in group.lines:
            weights[round(line.size * 2) / 2] += len(line.text)
    return weights.most_common(1)[0][0] if weights else 0.0


def _heading_levels(groups: list[_Group], body: float) -> dict[int, int]:
    """Group index -> heading level: larger sizes outermost, bold body-size lines last."""
    sizes: dict[int, float] = {}
    for index, group in enumerate(groups):
        text = group.text
        if not text or len(text) > HEADING_MAX_CHARS or len(group.lines) > 3:
            continue
        if group.size >= body * HEADING_SIZE_RATIO:
            sizes[index] = round(group.size * 2) / 2
        elif group.bold and not text.endswith(_SENTENCE_END) and len(group.lines) <= 2:
            sizes[index] = body
    ranks = {size: rank for rank, size in enumerate(sorted(set(sizes.values()), reverse=True), 1)}
    return {index: ranks[size] for index, size in sizes.items()}


@dataclass(slots=True)
class _Pending:
    """A paragraph or list item not yet added: the next group may continue it."""

    kind: BlockKind
    text: str
    page: int
    page_end: int
    size: float

    def continued_by(self, group: _Group) -> bool:
        """Whether ``group`` carries on this paragraph in the next column or page: it
        ended without a full stop and goes on in the same type size."""
        same_size = 0.87 < (group.size or 1) / (self.size or 1) < 1.15
        return (
            self.kind is BlockKind.PARAGRAPH and same_size and not self.text.endswith(_SENTENCE_END)
        )


def _build(groups: list[_Group], levels: dict[int, int]) -> BlockBuilder:
    builder = BlockBuilder()
    pending: _Pending | None = None
    for index, group in enumerate(groups):
        text = group.text
        if not text:
            continue
        if pending is not None and index not in levels and pending.continued_by(group):
            pending.text = join_lines([pending.text, text])
            pending.page_end = group.page
            continue
        if pending is not None:
            builder.add(pending.kind, pending.text, pending.page, pending.page_end)
            pending = None
        if index in levels:
            builder.heading(text, levels[index], group.page)
            continue
        bullet = _BULLET.match(text)
        if bullet:
            pending = _Pending(
                BlockKind.LIST_ITEM, text[bullet.end() :], group.page, group.page, group.size
            )
        else:
            pending = _Pending(BlockKind.PARAGRAPH, text, group.page, group.page, group.size)
    if pending is not None:
        builder.add(pending.kind, pending.text, pending.page, pending.page_end)
    return builder


def _info_title(document: PDFDocument) -> str | None:
    for info in document.info:
        raw = resolve1(info.get("Title"))
        if isinstance(raw, bytes):
            title = " ".join(decode_text(raw).split())
            if title:
                return title
        elif isinstance(raw, str) and raw.strip():
            return " ".join(raw.split())
    return None


def _read(data: bytes, limits: DocumentLimits) -> ExtractedDocument:
    try:
        document = PDFDocument(PDFParser(io.BytesIO(data)), password="")
    except PDFPasswordIncorrect:
        raise DocumentRefused(
            "encrypted", "the PDF needs a password to open: send it without the password"
        ) from None
    except PDFEncryptionError as error:
        raise DocumentRefused(
            "encrypted", f"the PDF's encryption is not supported ({error}): send it decrypted"
        ) from None
    pages = list(islice(PDFPage.create_pages(document), limits.max_pages + 1))
    limits.check_pages(len(pages))
    manager = PDFResourceManager(caching=True)
    page_lines: list[PageLines] = []
    pictures_only: list[int] = []
    for number, page in enumerate(pages, start=1):
        lines, images = _page_lines(page, number, manager)
        page_lines.append(lines)
        if images and not lines.lines:
            pictures_only.append(number)
    ocr_read = bool(pictures_only) and pdf_ocr.available(limits)
    scanned: dict[int, PageLines] = {}
    if ocr_read:
        scanned = pdf_ocr.read_pages(data, pictures_only, limits)
        page_lines = [scanned.get(page.number, page) for page in page_lines]
        pictures_only = [n for n in pictures_only if not (n in scanned and scanned[n].lines)]
    groups = _groups(drop_running_lines(page_lines))
    levels = _heading_levels(groups, _body_size(groups))
    builder = _build(groups, levels)
    blocks = builder.blocks
    title = _info_title(document) or next(
        (b.text for b in blocks if b.kind is BlockKind.HEADING and b.page == 1), None
    )
    no_text = None
    if not blocks:
        no_text = NO_TEXT
        if pictures_only and not ocr_read:
            no_text = NO_TEXT_LAYER
        elif pictures_only:
            no_text = NO_TEXT_READ if scanned else NO_TEXT_UNREAD
    return ExtractedDocument(
        "application/pdf",
        title,
        len(pages),
        builder.text,
        blocks,
        no_text,
        tuple(pictures_only),
    )


def extract_pdf(data: bytes, limits: DocumentLimits) -> ExtractedDocument:
    _envelope(data)
    with expansion_budget(limits.expansion_budget(len(data))), warnings.catch_warnings():
        # pdfminer warns about every repair it makes to a damaged file; the outcome is
        # what counts (and the tests turn warnings into errors).
        warnings.simplefilter("ignore")
        try:
            return _read(data, limits)
        except ExpansionExceeded:
            raise limits.expansion_refusal(len(data)) from None
