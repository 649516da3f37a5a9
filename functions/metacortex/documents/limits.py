"""What a document may cost to read; every figure is a setting (config.Settings)."""

from __future__ import annotations

from dataclasses import dataclass
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

    @classmethod
    def from_settings(cls, settings: Settings) -> DocumentLimits:
        return cls(
            max_bytes=settings.metacortex_document_max_bytes,
            max_pages=settings.metacortex_document_max_pages,
            seconds=settings.metacortex_document_extract_seconds,
            max_expansion=settings.metacortex_document_max_expansion,
            max_depth=settings.metacortex_document_max_depth,
            memory_bytes=settings.metacortex_document_memory_mb * MIB,
            ocr_pages=0 if settings.metacortex_ocr == "off" else settings.metacortex_ocr_max_pages,
            ocr_seconds=settings.metacortex_ocr_seconds,
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
