"""DOCX (python-docx): body paragraphs and tables in order; Title and Heading styles make
the heading path, list styles and numbered paragraphs are list items, table rows keep
their first row's cells as names. Running headers and footers are not body text.

Before python-docx reads anything, the ZIP is checked: an encrypted Office file (an
OLE container, not a ZIP), too many parts, parts that declare more bytes than the
expansion budget (``zipfile`` never inflates past a part's declared size, so the
declared sizes bound the work), and XML nested deeper than the limit are refused.
"""

from __future__ import annotations

import io
import re
import zipfile
from typing import Final

import docx
from docx.document import Document as DocxDocument
from docx.table import Table
from docx.text.paragraph import Paragraph
from lxml import etree

from metacortex.documents.builder import BlockBuilder
from metacortex.documents.limits import DocumentLimits
from metacortex.documents.model import BlockKind, ExtractedDocument
from metacortex.documents.table_rows import row_text
from metacortex.errors import DocumentRefused

MEDIA_TYPE: Final = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
OLE_MAGIC: Final = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
MAX_PARTS: Final = 10_000
_HEADING_STYLE: Final = re.compile(r"heading\s*(\d)", re.IGNORECASE)


def _check_package(data: bytes, limits: DocumentLimits) -> None:
    if data.startswith(OLE_MAGIC):
        raise DocumentRefused(
            "encrypted",
            "this is a password-protected (or pre-2007 .doc) Word file: "
            "remove the password and save it as .docx",
        )
    try:
        package = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise DocumentRefused("corrupt", "the DOCX is not a readable ZIP package") from None
    with package:
        parts = package.infolist()
        if len(parts) > MAX_PARTS:
            raise DocumentRefused("bomb", f"the DOCX has {len(parts):,} parts (over {MAX_PARTS:,})")
        if sum(part.file_size for part in parts) > limits.expansion_budget(len(data)):
            raise limits.expansion_refusal(len(data))
        try:
            body = package.open("word/document.xml")
        except KeyError:
            raise DocumentRefused("corrupt", "the DOCX has no word/document.xml") from None
        with body:
            depth = 0
            events = etree.iterparse(
                body, events=("start", "end"), resolve_entities=False, no_network=True
            )
            try:
                for event, _ in events:
                    depth += 1 if event == "start" else -1
                    limits.check_depth(depth)
            except etree.XMLSyntaxError as error:
                if "depth" in str(error).lower():  # libxml2's own cap (256) came first
                    limits.check_depth(limits.max_depth + 1)
                raise DocumentRefused("corrupt", f"the DOCX's XML is broken: {error}") from None


def _heading_level(paragraph: Paragraph) -> int | None:
    name = paragraph.style.name if paragraph.style is not None else ""
    if name == "Title":
        return 1
    found = _HEADING_STYLE.fullmatch(name or "")
    return int(found.group(1)) + 1 if found else None


def _is_list_item(paragraph: Paragraph) -> bool:
    name = paragraph.style.name if paragraph.style is not None else ""
    properties = paragraph._p.pPr
    numbered = properties is not None and properties.numPr is not None
    return numbered or (name or "").lower().startswith("list")


def _table_rows(table: Table, builder: BlockBuilder) -> None:
    header: list[str] = []
    for row in table.rows:
        cells, seen = [], set()
        for cell in row.cells:
            if id(cell._tc) not in seen:  # a merged cell is listed once per grid column
                seen.add(id(cell._tc))
                cells.append(cell.text)
        if not header:
            header = cells
            continue
        builder.add(BlockKind.TABLE_ROW, row_text(header, cells))
    if header and len(table.rows) == 1:
        builder.add(BlockKind.TABLE_ROW, "; ".join(" ".join(c.split()) for c in header if c))


def extract_docx(data: bytes, limits: DocumentLimits) -> ExtractedDocument:
    _check_package(data, limits)
    document: DocxDocument = docx.Document(io.BytesIO(data))
    builder = BlockBuilder(limits)
    first_heading: str | None = None
    for item in document.iter_inner_content():
        if isinstance(item, Table):
            _table_rows(item, builder)
            continue
        text = item.text
        level = _heading_level(item)
        if level is not None and text.strip():
            first_heading = first_heading or " ".join(text.split())
            builder.heading(text, level)
        else:
            kind = BlockKind.LIST_ITEM if _is_list_item(item) else BlockKind.PARAGRAPH
            builder.add(kind, text)
    title = " ".join((document.core_properties.title or "").split()) or first_heading
    return ExtractedDocument(MEDIA_TYPE, title, None, builder.text, builder.blocks)
