"""``ExtractedDocument`` as JSON and back: how the reader process answers."""

from __future__ import annotations

from typing import Any

from metacortex.documents.model import Block, BlockKind, ExtractedDocument


def document_to_wire(document: ExtractedDocument) -> dict[str, Any]:
    return {
        "media_type": document.media_type,
        "title": document.title,
        "page_count": document.page_count,
        "text": document.text,
        "no_text": document.no_text,
        "pages_without_text": list(document.pages_without_text),
        "blocks": [
            [
                b.kind.value,
                b.text,
                list(b.heading_path),
                b.start,
                b.end,
                b.page,
                b.page_end,
                b.level,
            ]
            for b in document.blocks
        ],
    }


def document_from_wire(wire: dict[str, Any]) -> ExtractedDocument:
    blocks = tuple(
        Block(BlockKind(kind), text, tuple(path), start, end, page, page_end, level)
        for kind, text, path, start, end, page, page_end, level in wire["blocks"]
    )
    return ExtractedDocument(
        media_type=wire["media_type"],
        title=wire["title"],
        page_count=wire["page_count"],
        text=wire["text"],
        blocks=blocks,
        no_text=wire["no_text"],
        pages_without_text=tuple(wire["pages_without_text"]),
    )
