"""Encrypted, corrupt, truncated and bomb PDFs get a specific refusal, never a traceback.

The hostile files are written here byte by byte (tests/documents/craft.py) or by
fpdf2 (encryption), and read through ``extract`` in this process; the reader
process's own limits (deadline, memory) are in test_isolation.py.
"""

from __future__ import annotations

import pytest
from fpdf import FPDF

from metacortex.documents import DocumentLimits, extract
from metacortex.errors import DocumentRefused, InvalidArgument
from tests.documents.craft import (
    deep_page_tree_pdf,
    flate_bomb_pdf,
    one_page_pdf,
    pdf_of_pages,
)

PDF = "application/pdf"


def _refusal(data: bytes, limits: DocumentLimits | None = None) -> DocumentRefused:
    with pytest.raises(DocumentRefused) as refused:
        extract(data, PDF, limits or DocumentLimits())
    return refused.value


def _encrypted(user_password: str) -> bytes:
    pdf = FPDF()
    pdf.set_encryption(owner_password="owner-secret", user_password=user_password)
    pdf.add_page()
    pdf.set_font("Helvetica", size=12)
    pdf.cell(text="Encrypted words about the harbour.")
    return bytes(pdf.output())


def test_a_pdf_that_needs_a_password_is_refused_as_encrypted() -> None:
    refused = _refusal(_encrypted(user_password="open-sesame"))
    assert refused.reason == "encrypted"
    assert "password" in refused.message
    assert isinstance(refused, InvalidArgument)  # the edge's invalid_argument


def test_a_pdf_encrypted_only_against_editing_opens_and_reads() -> None:
    document = extract(_encrypted(user_password=""), PDF, DocumentLimits())
    assert "Encrypted words about the harbour." in document.text


def test_a_pdf_cut_short_is_refused_as_truncated() -> None:
    whole = pdf_of_pages(["A page of words that will be cut in half."] * 3)
    refused = _refusal(whole[: len(whole) // 2])
    assert refused.reason == "corrupt"
    assert "truncated" in refused.message


def test_bytes_that_are_not_a_pdf_are_refused_as_corrupt() -> None:
    refused = _refusal(b"GIF89a" + bytes(range(256)) * 8)
    assert (refused.reason, "no %PDF- header" in refused.message) == ("corrupt", True)


def test_a_pdf_with_garbage_between_its_header_and_end_is_refused_as_corrupt() -> None:
    refused = _refusal(b"%PDF-1.7\n" + bytes(range(256)) * 40 + b"\n%%EOF\n")
    assert refused.reason == "corrupt"


def test_a_content_stream_broken_halfway_gives_the_text_before_the_break() -> None:
    broken = one_page_pdf(b"BT /F1 12 Tf 72 700 Td (Half a sentence) Tj ET BT ((( ] >> Tj")
    assert extract(broken, PDF, DocumentLimits()).text == "Half a sentence"


def test_a_flate_stream_inflating_past_the_budget_is_refused_as_a_bomb() -> None:
    bomb = flate_bomb_pdf(128 << 20)  # 128 MiB of spaces in about 130 KB
    assert len(bomb) < 200_000
    refused = _refusal(bomb)  # default budget: 100 x max(size, 1 MiB) = 100 MiB
    assert refused.reason == "bomb"
    assert "METACORTEX_DOCUMENT_MAX_EXPANSION" in refused.message


def test_the_expansion_budget_is_the_setting_times_the_size() -> None:
    bomb = flate_bomb_pdf(8 << 20)
    assert extract(bomb, PDF, DocumentLimits(max_expansion=10)).no_text is not None
    assert _refusal(bomb, DocumentLimits(max_expansion=4)).reason == "bomb"


def test_a_page_tree_nested_thousands_deep_is_refused_as_a_bomb() -> None:
    refused = _refusal(deep_page_tree_pdf(5000))
    assert refused.reason == "bomb"
    assert "nests" in refused.message


def test_more_pages_than_the_limit_are_refused_before_any_is_read() -> None:
    refused = _refusal(pdf_of_pages(["page"] * 4), DocumentLimits(max_pages=3))
    assert refused.reason == "too_many_pages"
    assert "METACORTEX_DOCUMENT_MAX_PAGES" in refused.message
    assert extract(pdf_of_pages(["page"] * 3), PDF, DocumentLimits(max_pages=3)).page_count == 3


def test_a_file_over_the_size_limit_is_refused_before_it_is_parsed() -> None:
    refused = _refusal(b"%PDF-" + b"x" * 5000, DocumentLimits(max_bytes=4096))
    assert refused.reason == "too_large"
    assert "METACORTEX_DOCUMENT_MAX_BYTES" in refused.message
