"""Plain text: paragraphs are separated by blank lines; line breaks inside one stay."""

from __future__ import annotations

import re

from metacortex.documents.builder import BlockBuilder
from metacortex.documents.model import BlockKind, ExtractedDocument

_BLANK_LINES = re.compile(r"\n[ \t]*\n+")
TITLE_MAX_CHARS = 120


def extract_plain(text: str, media_type: str = "text/plain") -> ExtractedDocument:
    builder = BlockBuilder()
    for paragraph in _BLANK_LINES.split(text):
        lines = [line.rstrip() for line in paragraph.strip("\n").splitlines()]
        builder.add(BlockKind.PARAGRAPH, "\n".join(lines))
    blocks = builder.blocks
    first = blocks[0].text if blocks else ""
    title = first if first and "\n" not in first and len(first) <= TITLE_MAX_CHARS else None
    return ExtractedDocument(media_type, title, None, builder.text, blocks)
