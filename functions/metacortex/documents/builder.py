"""Assembles blocks into a document's text, keeping spans and heading paths."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from metacortex.documents.model import Block, BlockKind

if TYPE_CHECKING:
    from metacortex.documents.limits import DocumentLimits

SEPARATOR: Final = "\n\n"


class BlockBuilder:
    """Blocks in reading order; ``text`` joins them with a blank line. With ``limits``,
    a text growing past ``max_chars`` is refused as it grows (the reader stops there)."""

    def __init__(self, limits: DocumentLimits | None = None) -> None:
        self._limits = limits
        self._parts: list[str] = []
        self._blocks: list[Block] = []
        self._length = 0
        self._headings: list[tuple[int, str]] = []  # (level, text), outermost first

    @property
    def blocks(self) -> tuple[Block, ...]:
        return tuple(self._blocks)

    @property
    def text(self) -> str:
        return "".join(self._parts)

    def heading(
        self, text: str, level: int, page: int | None = None, page_end: int | None = None
    ) -> None:
        text = " ".join(text.split())
        if not text:
            return
        while self._headings and self._headings[-1][0] >= level:
            self._headings.pop()
        self._headings.append((level, text))
        self._append(BlockKind.HEADING, text, page, page_end, level)

    def add(
        self,
        kind: BlockKind,
        text: str,
        page: int | None = None,
        page_end: int | None = None,
    ) -> None:
        text = text.strip()
        if text:
            self._append(kind, text, page, page_end, 0)

    def _append(
        self, kind: BlockKind, text: str, page: int | None, page_end: int | None, level: int
    ) -> None:
        if self._parts:
            self._parts.append(SEPARATOR)
            self._length += len(SEPARATOR)
        start = self._length
        self._parts.append(text)
        self._length += len(text)
        if self._limits is not None:
            self._limits.check_chars(self._length)
        path = tuple(heading for _, heading in self._headings)
        self._blocks.append(
            Block(kind, text, path, start, self._length, page, page_end or page, level)
        )
