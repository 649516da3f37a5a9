"""CSV (and tab-separated) tables: one block per row, the header kept on each row, so a
passage cut anywhere still says what its values are."""

from __future__ import annotations

import csv
import io

from metacortex.documents.builder import BlockBuilder
from metacortex.documents.model import BlockKind, ExtractedDocument
from metacortex.documents.table_rows import row_text
from metacortex.errors import DocumentRefused

SNIFF_CHARS = 64 * 1024


def _dialect(text: str, media_type: str) -> type[csv.Dialect] | csv.Dialect:
    if media_type == "text/tab-separated-values":
        return csv.excel_tab
    try:
        return csv.Sniffer().sniff(text[:SNIFF_CHARS], delimiters=",;\t|")
    except csv.Error:
        return csv.excel  # one column, or too little to tell: commas


def extract_csv(text: str, media_type: str = "text/csv") -> ExtractedDocument:
    builder = BlockBuilder()
    header: list[str] = []
    try:
        for row in csv.reader(io.StringIO(text), _dialect(text, media_type)):
            if not any(cell.strip() for cell in row):
                continue
            if not header:
                header = row
                continue
            builder.add(BlockKind.TABLE_ROW, row_text(header, row))
    except csv.Error as error:
        raise DocumentRefused("corrupt", f"the CSV cannot be read: {error}") from None
    if header and not builder.blocks:  # a header alone: that is the content
        builder.add(BlockKind.TABLE_ROW, "; ".join(cell.strip() for cell in header))
    return ExtractedDocument(media_type, None, None, builder.text, builder.blocks)
