"""A document given already cut into pieces that each happened at their own time (a
conversation's messages): its text, its passages and each passage's time.

The text is the title, then every piece, separated by blank lines. A piece is never
joined to its neighbours: it is one passage, or, when longer than the passage size,
several cut at sentence ends as ``passages.cut_passages`` cuts a long block; each of them
happened at the piece's time. ``document.text[p.start:p.end] == p.text`` as for any
document.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Final

from metacortex.documents.limits import DocumentLimits
from metacortex.documents.model import Block, BlockKind, ExtractedDocument
from metacortex.documents.passages import Passage, cut_passages
from metacortex.errors import InvalidArgument

MEDIA_TYPE: Final = "text/plain"
SEPARATOR: Final = "\n\n"


@dataclass(frozen=True, slots=True)
class TimedPiece:
    """One piece of text (a message, with its author's role in it) and when it happened."""

    text: str
    at: datetime


def timed_document(
    title: str, pieces: Sequence[TimedPiece], passage_chars: int, limits: DocumentLimits
) -> tuple[ExtractedDocument, list[Passage], list[datetime]]:
    """The document's text and blocks, its passages in order, and when each happened.
    The text's size is checked as it grows."""
    parts = [title]
    blocks: list[Block] = []
    at = len(title)
    for piece in pieces:
        text = piece.text.strip()
        if not text:
            continue
        at += len(SEPARATOR)
        blocks.append(Block(BlockKind.PARAGRAPH, text, (), at, at + len(text)))
        parts.append(text)
        at += len(text)
        limits.check_chars(at)
    if not blocks:
        raise InvalidArgument("the document has no piece with text")
    full = SEPARATOR.join(parts)
    extracted = ExtractedDocument(MEDIA_TYPE, title, None, full, tuple(blocks))
    passages: list[Passage] = []
    times: list[datetime] = []
    kept = [piece for piece in pieces if piece.text.strip()]
    for block, piece in zip(blocks, kept, strict=True):
        alone = replace(extracted, blocks=(block,))
        for passage in cut_passages(alone, passage_chars):
            passages.append(replace(passage, index=len(passages)))
            times.append(piece.at)
    return extracted, passages, times
