"""Passages: the document's blocks cut into pieces of about a target size, along its own
structure.

Rules, in order:
- a heading starts a new passage and stays with what follows it (a heading never
  ends one; headings in a row travel together), so one passage never spans two
  sections and its heading path is the section's;
- blocks (paragraphs, list items, table rows) are added whole while the passage
  stays within ``target_chars``;
- in a paged document, a passage already half full ends at a page break, so most
  passages cite one page;
- a block longer than ``target_chars`` is cut at sentence ends (at spaces for a
  sentence longer than the target, and mid-word only in a run with no space).

``document.text[p.start:p.end] == p.text`` for every passage ``p``.

The content hash covers the heading path and the text (whitespace collapsed, NFC):
what is embedded. A new version's passage with a hash the old version had is the
same passage (its page or span may have moved) and need not be embedded again.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Final

from metacortex.documents.model import Block, BlockKind, ExtractedDocument

DEFAULT_TARGET_CHARS: Final = 1000
MIN_TARGET_CHARS: Final = 100
_SENTENCE_END: Final = re.compile(r"(?<=[.!?…])[\"'”’)\]]*\s+")


@dataclass(frozen=True, slots=True)
class Passage:
    """One retrievable piece of a document, with where it is in it."""

    index: int  # 0-based, in reading order
    text: str
    heading_path: tuple[str, ...]
    start: int  # span in ExtractedDocument.text
    end: int
    page: int | None  # first and last page (PDFs), else None
    page_end: int | None
    content_hash: str  # sha256 hex of heading path and normalized text

    def retrieval_text(self, title: str | None) -> str:
        """What to embed and index: the document title and section, then the text, so
        a passage that never names its subject is still found by it."""
        context = " > ".join(part for part in (title, *self.heading_path) if part)
        return f"{context}\n\n{self.text}" if context else self.text


def content_hash(heading_path: Sequence[str], text: str) -> str:
    normal = " ".join(unicodedata.normalize("NFC", text).split())
    path = "\x1f".join(" ".join(part.split()) for part in heading_path)
    return hashlib.sha256(f"{path}\x1e{normal}".encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class _Piece:
    """A block, or a sentence run of a long one: the unit passages are made of."""

    block: Block
    start: int
    end: int


def _split_long(block: Block, target: int) -> Iterator[_Piece]:
    """Pieces of at most ``target`` characters, cut at sentence ends, else at spaces."""
    text = block.text
    cuts = [0, *(m.end() for m in _SENTENCE_END.finditer(text)), len(text)]
    start = 0
    last = 0
    for cut in cuts[1:]:
        if cut - start <= target:
            last = cut
            continue
        if last > start:
            yield _Piece(block, block.start + start, block.start + len(text[:last].rstrip()))
            start = last
        while cut - start > target:  # one sentence longer than the target
            window = text[start : start + target + 1]
            space = window.rfind(" ")
            stop = start + (space if space > 0 else target)
            yield _Piece(block, block.start + start, block.start + len(text[:stop].rstrip()))
            start = stop + (1 if space > 0 else 0)
        last = cut
    if start < len(text):
        yield _Piece(block, block.start + start, block.start + len(text))


def _pieces(blocks: Sequence[Block], target: int) -> Iterator[_Piece]:
    for block in blocks:
        if block.end - block.start > target and block.kind is not BlockKind.HEADING:
            yield from _split_long(block, target)
        else:
            yield _Piece(block, block.start, block.end)


def cut_passages(
    document: ExtractedDocument, target_chars: int = DEFAULT_TARGET_CHARS
) -> list[Passage]:
    """The document's passages, in reading order."""
    if target_chars < MIN_TARGET_CHARS:
        raise ValueError(f"target_chars must be at least {MIN_TARGET_CHARS}")
    groups: list[list[_Piece]] = []
    current: list[_Piece] = []
    for piece in _pieces(document.blocks, target_chars):
        if current:
            only_headings = all(p.block.kind is BlockKind.HEADING for p in current)
            size = piece.end - current[0].start
            is_heading = piece.block.kind is BlockKind.HEADING
            new_page = (
                piece.block.page is not None
                and current[-1].block.page_end is not None
                and piece.block.page != current[-1].block.page_end
            )
            half_full = current[-1].end - current[0].start >= target_chars // 2
            if not only_headings and (
                is_heading or size > target_chars or (new_page and half_full)
            ):
                groups.append(current)
                current = []
        current.append(piece)
    if current:
        groups.append(current)
    return [_passage(index, group, document.text) for index, group in enumerate(groups)]


def _passage(index: int, group: list[_Piece], text: str) -> Passage:
    start, end = group[0].start, group[-1].end
    last = group[-1].block
    pages = [p.block.page for p in group if p.block.page is not None]
    ends = [p.block.page_end for p in group if p.block.page_end is not None]
    body = text[start:end]
    return Passage(
        index=index,
        text=body,
        heading_path=last.heading_path,
        start=start,
        end=end,
        page=min(pages) if pages else None,
        page_end=max(ends) if ends else None,
        content_hash=content_hash(last.heading_path, body),
    )
