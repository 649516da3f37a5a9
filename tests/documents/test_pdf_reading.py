"""PDF text in reading order, read from PDFs that fpdf2 generates here (the same
generators as bench/pdf_extract.py; LibreOffice only runs in the bench)."""

from __future__ import annotations

import re

import pytest
from fpdf import FPDF

from bench.documents_corpus import (
    RUNNING_TITLE,
    Paper,
    interleaved_two_column_pdf,
    paper_content,
    plain,
    two_column_pdf,
)
from metacortex.documents import NO_TEXT_LAYER, BlockKind, DocumentLimits, extract
from metacortex.documents.model import ExtractedDocument
from tests.documents.craft import pdf_of_pages

PDF = "application/pdf"


@pytest.fixture(scope="module")
def paper() -> Paper:
    return paper_content(sections=10, paragraphs=4)  # four pages: the header repeats


@pytest.fixture(scope="module")
def two_column(paper: Paper) -> ExtractedDocument:
    return extract(two_column_pdf(paper), PDF, DocumentLimits())


def _in_order(text: str, expected: list[str]) -> list[str]:
    """The expected sentences missing or out of order in ``text``."""
    flat = " ".join(text.split())
    wrong, position = [], -1
    for sentence in expected:
        found = flat.find(" ".join(sentence.split()), position + 1)
        if found < 0:
            wrong.append(sentence)
        else:
            position = found
    return wrong


def test_a_two_column_paper_reads_column_by_column_with_every_sentence_whole(
    two_column: ExtractedDocument, paper: Paper
) -> None:
    assert (two_column.page_count or 0) >= 2
    assert _in_order(two_column.text, paper.expected) == []


def test_columns_drawn_row_by_row_across_the_page_still_read_column_by_column(
    paper: Paper,
) -> None:
    document = extract(interleaved_two_column_pdf(paper), PDF, DocumentLimits())
    assert _in_order(document.text, paper.expected) == []


def test_a_narrow_gutter_like_latex_s_ten_points_still_parts_the_columns(paper: Paper) -> None:
    document = extract(two_column_pdf(paper, gutter=3.5), PDF, DocumentLimits())
    assert _in_order(document.text, paper.expected) == []


def test_running_headers_and_page_numbers_are_dropped(two_column: ExtractedDocument) -> None:
    assert RUNNING_TITLE not in two_column.text
    lone_numbers = [b.text for b in two_column.blocks if re.fullmatch(r"\d+", b.text)]
    assert lone_numbers == []


def test_every_block_keeps_the_page_it_is_printed_on(
    two_column: ExtractedDocument, paper: Paper
) -> None:
    pages = [b.page for b in two_column.blocks]
    assert pages[0] == 1
    assert pages == sorted(pages)  # type: ignore[type-var]
    assert pages[-1] == two_column.page_count
    last_sentence = paper.expected[-1]
    holder = next(b for b in two_column.blocks if last_sentence in b.text)
    assert holder.page_end == two_column.page_count


def test_words_hyphenated_at_line_ends_are_joined(
    two_column: ExtractedDocument, paper: Paper
) -> None:
    long_words = {w for s in paper.expected for w in re.findall(r"[a-z]{14,}", s)}
    assert long_words
    for word in long_words:
        assert word in two_column.text
    # what the generator printed: a word broken by a hyphen at a line end
    assert not re.search(r"[a-z]- [a-z]", two_column.text)


def test_larger_lines_are_headings_and_make_the_heading_path(
    two_column: ExtractedDocument, paper: Paper
) -> None:
    headings = [b for b in two_column.blocks if b.kind is BlockKind.HEADING]
    assert [h.text for h in headings] == [paper.title, *(s.heading for s in paper.sections)]
    assert headings[0].level < headings[1].level
    second = paper.sections[1]
    under = next(b for b in two_column.blocks if plain(second.paragraphs[0][0]) in b.text)
    assert under.heading_path == (paper.title, second.heading)
    assert two_column.title == paper.title


def test_spans_index_the_extracted_text(two_column: ExtractedDocument) -> None:
    for block in two_column.blocks:
        assert two_column.text[block.start : block.end] == block.text


def test_a_paragraph_broken_at_the_foot_of_a_column_is_one_block(
    two_column: ExtractedDocument, paper: Paper
) -> None:
    for section in paper.sections:
        for paragraph in section.paragraphs:
            whole = " ".join(plain(s) for s in paragraph)
            assert any(whole in b.text for b in two_column.blocks), whole[:60]


def test_justified_lines_with_wide_word_gaps_keep_their_words_in_order() -> None:
    """A short justified line spreads its words across the column; pdfminer's own box
    order put its last word after the next line (found on the LoCoMo logs)."""
    pdf = FPDF(format="A4")
    pdf.add_page()
    pdf.set_font("Helvetica", size=10)
    speech = [
        "John: I'm gonna chat with local leaders and organizations, get support and "
        "gather ideas for my next move.",
        "Nate: I couldn't agree more! It's always fun experimenting in the kitchen.",
        "Tim: Wow! How long have you been playing professionally?",
    ] * 6
    with pdf.text_columns(ncols=2, gutter=8, text_align="J") as columns:
        for line in speech:
            columns.write(line + "\n\n")
    document = extract(bytes(pdf.output()), PDF, DocumentLimits())
    assert _in_order(document.text, speech) == []


def test_the_metadata_title_wins_over_the_first_heading() -> None:
    document = extract(
        pdf_of_pages(["Some body text."], title="Quarterly Report"), PDF, DocumentLimits()
    )
    assert document.title == "Quarterly Report"


def test_a_scanned_pdf_says_there_is_no_text_to_index_and_no_ocr() -> None:
    document = extract(pdf_of_pages([None, None]), PDF, DocumentLimits())
    assert document.blocks == ()
    assert document.no_text == NO_TEXT_LAYER == "no text to index; OCR is not offered"
    assert document.pages_without_text == (1, 2)
    assert document.page_count == 2


def test_a_picture_page_among_text_pages_is_named_and_the_text_is_kept() -> None:
    document = extract(
        pdf_of_pages(["The first page has words.", None, "The third page too."]),
        PDF,
        DocumentLimits(),
    )
    assert document.no_text is None
    assert document.pages_without_text == (2,)
    assert [b.page for b in document.blocks] == [1, 3]


class _TitledLog(FPDF):
    """The document's title large on page 1, and small as the running header after."""

    def header(self) -> None:
        if self.page_no() > 1:
            self.set_font("Helvetica", "I", 8)
            self.cell(0, 6, "Harbour Log", align="C")
            self.ln(10)


def test_a_title_that_is_also_the_running_header_is_kept_on_the_first_page() -> None:
    pdf = _TitledLog(format="A4")
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 16)
    pdf.multi_cell(0, 9, "Harbour Log", align="C", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", size=10)
    for n in range(400):
        entry = f"Entry {n}: the boats came in at dawn and left at dusk."
        pdf.multi_cell(0, 5, entry, new_x="LMARGIN", new_y="NEXT")
    document = extract(bytes(pdf.output()), PDF, DocumentLimits())
    assert document.page_count is not None
    assert document.page_count >= 3
    assert document.blocks[0].kind is BlockKind.HEADING
    assert document.blocks[0].text == "Harbour Log"
    assert document.text.count("Harbour Log") == 1


def test_body_lines_that_repeat_near_the_top_of_pages_are_kept() -> None:
    """Lines of the same pattern (digits masked) at the same height on every page are
    body text when a heading of its own stands above them on each page."""
    places = ["harbour", "river", "orchard", "quarry"]
    pages = []
    for page in range(1, 5):
        pages.append(f"At the {places[page - 1]}\n\nMaria: Turn {page}.1 was quiet today.")
    pdf = FPDF(format="A4")
    for text in pages:
        pdf.add_page()
        heading, body = text.split("\n\n")
        pdf.set_font("Helvetica", "B", 14)
        pdf.multi_cell(0, 8, heading, new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("Helvetica", size=10)
        pdf.multi_cell(0, 5, body, new_x="LMARGIN", new_y="NEXT")
    document = extract(bytes(pdf.output()), PDF, DocumentLimits())
    assert [b.text for b in document.blocks if b.text.startswith("Maria")] == [
        f"Maria: Turn {page}.1 was quiet today." for page in range(1, 5)
    ]
