"""What a document may cost to read and to become; every figure is a setting
(config.Settings). What it may cost to read: its size, its pages, the reader's seconds,
its expansion, its nesting, the reader's address space (sized to the machine unless
set). What it may become: extracted characters, passages, and the seconds its passages
may take to embed. How many may be read and embedded at once, per server and per
credential (``usecases.documents.DocumentSlots``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from metacortex.errors import DocumentRefused

if TYPE_CHECKING:
    from metacortex.config import Settings

MIB: Final = 1024 * 1024
# Files below this size get the budget of one of this size: a 2 KB DOCX holds 20 KB of
# XML, which is no bomb.
EXPANSION_FLOOR_BYTES: Final = MIB
# Added to the reader's address space where scanned PDF pages may be read by OCR.
OCR_ADDRESS_SPACE: Final = 1024 * MIB
# A reader's address space when no setting fixes it: this share of the machine's memory
# (or its container's) among the readers that may run at once, within these bounds (a
# reader with the readers imported maps about 200 MiB before it reads anything).
READER_MEMORY_SHARE: Final = 0.5
READER_MEMORY_FLOOR: Final = 512 * MIB
READER_MEMORY_CEILING: Final = 1024 * MIB
_CGROUP_LIMITS: Final = (
    Path("/sys/fs/cgroup/memory.max"),  # cgroup v2
    Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"),  # v1
)


@dataclass(frozen=True, slots=True)
class DocumentLimits:
    max_bytes: int = 20 * MIB
    max_pages: int = 1000
    # Wall-clock seconds for one document's extraction (the process is killed past it).
    seconds: float = 120.0
    # Decompressed bytes (PDF streams, DOCX parts) per byte of the file.
    max_expansion: int = 100
    # Element nesting (HTML, DOCX and Markdown structure).
    max_depth: int = 200
    # Address space of the extraction process; 0 leaves it unlimited.
    memory_bytes: int = 1024 * MIB
    # A scanned PDF's picture pages read by OCR (documents/pdf_ocr.py): at most this many
    # (0: none), none started after this many seconds. The settings turn it on.
    ocr_pages: int = 0
    ocr_seconds: float = 90.0
    # What one document may become: characters of extracted text, passages, and the
    # wall-clock seconds its passages may take to embed.
    max_chars: int = 5_000_000
    max_passages: int = 5_000
    embed_seconds: float = 300.0
    # Documents read and embedded at once by one server, and by one credential there.
    concurrent: int = 2
    concurrent_per_credential: int = 1

    @classmethod
    def from_settings(cls, settings: Settings) -> DocumentLimits:
        concurrent = settings.metacortex_document_concurrency
        memory_mb = settings.metacortex_document_memory_mb
        return cls(
            max_bytes=settings.metacortex_document_max_bytes,
            max_pages=settings.metacortex_document_max_pages,
            seconds=settings.metacortex_document_extract_seconds,
            max_expansion=settings.metacortex_document_max_expansion,
            max_depth=settings.metacortex_document_max_depth,
            memory_bytes=memory_mb * MIB if memory_mb is not None else sized_to_machine(concurrent),
            ocr_pages=0 if settings.metacortex_ocr == "off" else settings.metacortex_ocr_max_pages,
            ocr_seconds=settings.metacortex_ocr_seconds,
            max_chars=settings.metacortex_document_max_chars,
            max_passages=settings.metacortex_document_max_passages,
            embed_seconds=settings.metacortex_document_embed_seconds,
            concurrent=concurrent,
            concurrent_per_credential=settings.metacortex_document_concurrency_per_credential,
        )

    def check_chars(self, chars: int) -> None:
        """Asked as the text grows (``BlockBuilder``): a reader stops at the limit, not
        after reading everything."""
        if chars > self.max_chars:
            raise DocumentRefused(
                "too_much_text",
                f"the document's text runs past {self.max_chars:,} characters, the limit "
                "(METACORTEX_DOCUMENT_MAX_CHARS): split it into smaller files, or raise the "
                "limit",
            )

    def check_passages(self, passages: int) -> None:
        if passages > self.max_passages:
            raise DocumentRefused(
                "too_many_passages",
                f"the document cuts into {passages:,} passages; the limit is "
                f"{self.max_passages:,} (METACORTEX_DOCUMENT_MAX_PASSAGES): split it into "
                "smaller files, or raise the limit",
            )

    def embedding_refusal(self, done: int, total: int) -> DocumentRefused:
        return DocumentRefused(
            "too_slow",
            f"embedding the document's {total:,} passages took longer than "
            f"{self.embed_seconds:g} seconds (METACORTEX_DOCUMENT_EMBED_SECONDS; {done:,} "
            "were done): nothing was added. Split it into smaller files, or raise the limit",
        )

    @property
    def address_space(self) -> int:
        """The reader's address-space cap: ``memory_bytes``, plus ``OCR_ADDRESS_SPACE``
        where scanned pages may be read (OpenCV and the OCR models reserve about 1 GB
        of address space, of which about 0.5 GB is resident while a page is read:
        docs/ocr.md); 0 when unlimited."""
        if self.memory_bytes <= 0:
            return 0
        return self.memory_bytes + (OCR_ADDRESS_SPACE if self.ocr_pages > 0 else 0)

    def expansion_budget(self, size: int) -> int:
        """Decompressed bytes a file of ``size`` bytes may unpack to."""
        return self.max_expansion * max(size, EXPANSION_FLOOR_BYTES)

    def check_size(self, size: int) -> None:
        if size > self.max_bytes:
            raise DocumentRefused(
                "too_large",
                f"the document is {size:,} bytes; the limit is {self.max_bytes:,} "
                "(METACORTEX_DOCUMENT_MAX_BYTES): split it or raise the limit",
            )

    def check_pages(self, pages: int) -> None:
        if pages > self.max_pages:
            raise DocumentRefused(
                "too_many_pages",
                f"the document has more than {self.max_pages:,} pages "
                "(METACORTEX_DOCUMENT_MAX_PAGES): split it or raise the limit",
            )

    def check_depth(self, depth: int) -> None:
        if depth > self.max_depth:
            raise DocumentRefused(
                "bomb",
                f"the document nests its elements more than {self.max_depth} deep "
                "(METACORTEX_DOCUMENT_MAX_DEPTH); it is refused as a parser bomb",
            )

    def expansion_refusal(self, size: int) -> DocumentRefused:
        return DocumentRefused(
            "bomb",
            f"the document unpacks to more than {self.expansion_budget(size):,} bytes, "
            f"{self.max_expansion} times its size (METACORTEX_DOCUMENT_MAX_EXPANSION); "
            "it is refused as a decompression bomb",
        )


def sized_to_machine(concurrent: int) -> int:
    """A reader's address space: ``READER_MEMORY_SHARE`` of the memory this machine (or
    its container) has, divided among ``concurrent`` readers, within the floor and the
    ceiling. With 2 GiB and two readers: 512 MiB each; with 8 GiB: 1 GiB."""
    share = int(_memory_of_machine() * READER_MEMORY_SHARE) // max(concurrent, 1)
    return max(READER_MEMORY_FLOOR, min(READER_MEMORY_CEILING, share))


def _memory_of_machine() -> int:
    """Physical memory, or the container's limit when lower (cgroup v2, then v1)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        total = 2 * READER_MEMORY_CEILING  # cannot tell: the ceiling for two readers
    for path in _CGROUP_LIMITS:
        try:
            limit = path.read_text(encoding="ascii").strip()
        except OSError:
            continue
        if limit.isdigit():
            total = min(total, int(limit))
    return total
