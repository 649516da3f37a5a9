"""Scanned PDFs read by OCR (issue 40, part 2): pages that are pictures go through the
same reader as saved images, bounded in pages and time, in the isolated reader process
under its address-space limit. Pages are text rendered by Pillow, embedded by fpdf2."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import pytest

from metacortex.composition import service_options
from metacortex.config import Settings
from metacortex.documents import DocumentLimits, extract
from metacortex.documents.isolation import extract_isolated
from metacortex.documents.model import NO_TEXT_LAYER, NO_TEXT_UNREAD
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import Access, MemoryService
from metacortex.storage.sqlite import SQLiteStore
from tests.fakes import HashingEmbedder

pytest.importorskip("rapidocr", reason="OCR TESTS SKIPPED: the ocr extra is not installed")

from fpdf import FPDF
from PIL import Image

from bench.ocr_images import render

PDF = "application/pdf"
PAGES = [
    ["Lease agreement", "The tenant pays rent on the first day.", "Deposit reference KQZ-7731"],
    ["House rules", "No pets without written consent.", "Bins go out on Thursday."],
    ["Signatures", "Signed by Dana Whitfield in Lisbon."],
]


def scan(pages: list[list[str]]) -> bytes:
    """A PDF whose every page is a picture of the lines given (no text layer)."""
    pdf = FPDF(format="A4")
    for lines in pages:
        pdf.add_page()
        pdf.image(Image.open(io.BytesIO(render(lines, size=36))), x=10, y=10, w=190)
    return bytes(pdf.output())


def test_a_scanned_pdf_is_read_by_ocr_in_the_isolated_reader() -> None:
    document = extract_isolated(scan(PAGES[:2]), PDF, DocumentLimits(ocr_pages=50))

    assert document.no_text is None
    assert document.pages_without_text == ()
    assert "Deposit reference KQZ-7731" in document.text
    assert "No pets without written consent." in document.text
    assert {block.page for block in document.blocks} == {1, 2}
    first = [block.text for block in document.blocks if block.page == 1]
    assert any("KQZ-7731" in text for text in first)


def test_ocr_stops_at_its_page_bound_and_names_the_pages_it_left() -> None:
    document = extract(scan(PAGES), PDF, DocumentLimits(ocr_pages=1))

    assert "KQZ-7731" in document.text
    assert "Dana" not in document.text
    assert document.pages_without_text == (2, 3)


def test_ocr_starts_no_page_after_its_time_bound_and_says_so() -> None:
    document = extract(scan(PAGES[:2]), PDF, DocumentLimits(ocr_pages=50, ocr_seconds=1e-9))

    assert document.blocks == ()
    assert document.no_text == NO_TEXT_UNREAD
    assert document.pages_without_text == (1, 2)


def test_with_ocr_off_a_scan_is_kept_unread_as_before() -> None:
    document = extract(scan(PAGES[:1]), PDF, DocumentLimits())

    assert document.no_text == NO_TEXT_LAYER
    assert document.pages_without_text == (1,)


def test_a_scanned_pdf_added_offline_is_found_by_words_only_its_pictures_hold(
    tmp_path: Path,
) -> None:
    settings = Settings(_env_file=None, metacortex_data_dir=tmp_path)  # type: ignore[call-arg]
    store = SQLiteStore(tmp_path / "m.sqlite3")
    service = MemoryService(
        store, HashingEmbedder(), merger=SentenceUnionMerger(), options=service_options(settings)
    )
    admin = Access.admin()
    try:
        added = service.create_document(
            admin,
            content_base64=base64.b64encode(scan(PAGES[:2])).decode(),
            media_type=PDF,
            title="Lease",
        )
        found = service.search(admin, query="deposit KQZ-7731")
        first = service.fetch(admin, id=found["matches"][0]["id"])["item"]
    finally:
        store.close()

    document = added["document"]
    assert document["no_text"] is None
    assert document["passage_count"] >= 1
    assert "Deposit reference KQZ-7731" in first["content"]
