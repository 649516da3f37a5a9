"""Which PDF library reads our documents in reading order, and how fast (docs/DOCUMENTS.md).

    .venv/bin/python bench/pdf_extract.py                 # needs LibreOffice for two PDFs
    .venv/bin/python bench/pdf_extract.py --keep /tmp/pdfs  # keep the generated files

Generates four PDFs with real generators (bench/documents_corpus.py):
- ``paper``: a two-column paper by fpdf2 (text_columns), running title, page numbers;
- ``paper-across``: the same paper drawn row by row across both columns, header drawn
  last (content order is not reading order);
- ``word``: a .docx by python-docx exported by LibreOffice Writer (header, PAGE footer);
- ``slides``: a .pptx by python-pptx exported by LibreOffice Impress (footer, numbers).

Rows per candidate library:
- ``NAME``: its lines in its own order (pdfminer.six: after its layout analysis with
  default parameters; pypdfium2: text rects in content order, joined per line;
  pypdf: text runs in content order), then the same clean-up
  (``metacortex.documents.pdf_lines``: running lines dropped, hyphenated line ends
  joined);
- ``NAME + our order``: its line fragments put in order by the product's
  ``reading_order`` (columns by whitespace), then the same clean-up;
- ``NAME raw``: its own plain-text output, no clean-up.
Then the product (``metacortex.documents.extract``) on the same files, and its cost
in the reader process (``extract_isolated``).

For each document: the share of its sentences found whole and in order (longest
increasing run of their positions), the running lines left, pages per second
(best of ``--repeat``). The candidates need installing first (the product needs
only pdfminer.six):

    .venv/bin/pip install pypdfium2 pypdf python-pptx
"""

from __future__ import annotations

import argparse
import bisect
import io
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.documents_corpus import (
    RUNNING_TITLE,
    SLIDE_FOOTER,
    WORD_HEADER,
    interleaved_two_column_pdf,
    libreoffice_pdf,
    paper_content,
    slide_deck,
    two_column_pdf,
    word_document,
)
from metacortex.documents.pdf_lines import (
    Line,
    PageLines,
    drop_running_lines,
    is_page_number,
    join_lines,
)
from metacortex.documents.reading_order import reading_order

Reader = Callable[[bytes], list[PageLines]]


# ------------------------------------------------------------------ candidates
def pdfminer_lines(data: bytes) -> list[PageLines]:
    from pdfminer.high_level import extract_pages
    from pdfminer.layout import LAParams, LTChar, LTTextBox, LTTextLine

    pages = []
    for number, page in enumerate(extract_pages(io.BytesIO(data), laparams=LAParams()), 1):
        height = page.height
        lines = []
        for box in (o for o in page if isinstance(o, LTTextBox)):
            for line in (o for o in box if isinstance(o, LTTextLine)):
                sizes = [c.size for c in line if isinstance(c, LTChar)]
                lines.append(
                    Line(
                        line.get_text().rstrip("\n"),
                        line.x0,
                        height - line.y1,
                        line.x1,
                        height - line.y0,
                        statistics.median(sizes) if sizes else 0.0,
                    )
                )
        pages.append(PageLines(number, page.width, height, tuple(lines)))
    return pages


def pdfium_lines(data: bytes, merge: bool = True) -> list[PageLines]:
    """Text rects in content order; ``merge`` joins the rects of one line."""
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(data)
    pages = []
    try:
        for index in range(len(document)):
            page = document[index]
            width, height = page.get_size()
            text_page = page.get_textpage()
            lines: list[Line] = []
            for rect_index in range(text_page.count_rects()):
                left, bottom, right, top = text_page.get_rect(rect_index)
                text = text_page.get_text_bounded(left, bottom, right, top)
                line = Line(text, left, height - top, right, height - bottom, top - bottom)
                previous = lines[-1] if lines else None
                overlaps = previous and previous.top < line.bottom and line.top < previous.bottom
                if merge and previous and overlaps:
                    line = Line(
                        previous.text + text,
                        previous.x0,
                        min(previous.top, line.top),
                        right,
                        max(previous.bottom, line.bottom),
                        max(previous.size, line.size),
                    )
                    lines[-1] = line
                else:
                    lines.append(line)
            pages.append(PageLines(index + 1, width, height, tuple(lines)))
    finally:
        document.close()
    return pages


def pdfium_fragments(data: bytes) -> list[PageLines]:
    return pdfium_lines(data, merge=False)


def pypdf_lines(data: bytes) -> list[PageLines]:
    import pypdf

    reader = pypdf.PdfReader(io.BytesIO(data))
    pages = []
    for index, page in enumerate(reader.pages):
        width, height = float(page.mediabox.width), float(page.mediabox.height)
        runs: list[tuple[str, float, float, float]] = []  # text, x, y (baseline), size

        def visit(
            text: str,
            cm: list[float],
            tm: list[float],
            font: object,
            size: float,
            runs: list[tuple[str, float, float, float]] = runs,
        ) -> None:
            if text.strip():
                x = tm[4] * cm[0] + tm[5] * cm[2] + cm[4]
                y = tm[4] * cm[1] + tm[5] * cm[3] + cm[5]
                runs.append((text.replace("\n", " "), x, y, size * abs(tm[3] or 1)))

        page.extract_text(visitor_text=visit)
        lines: list[Line] = []
        for text, x, y, size in runs:
            previous = lines[-1] if lines else None
            if previous and abs((height - y) - previous.bottom) < 2:
                lines[-1] = Line(
                    previous.text + text, previous.x0, previous.top, x, previous.bottom, size
                )
            else:
                lines.append(Line(text, x, height - y - size, x, height - y, size))
        pages.append(PageLines(index + 1, width, height, tuple(lines)))
    return pages


def pdfminer_raw(data: bytes) -> str:
    from pdfminer.high_level import extract_text

    return extract_text(io.BytesIO(data))


def pdfium_raw(data: bytes) -> str:
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(data)
    try:
        return "\n".join(document[i].get_textpage().get_text_range() for i in range(len(document)))
    finally:
        document.close()


def pypdf_raw(data: bytes) -> str:
    import pypdf

    return "\n".join(p.extract_text() for p in pypdf.PdfReader(io.BytesIO(data)).pages)


def our_order(read: Reader) -> Reader:
    """The candidate's fragments put in order by the product's ``reading_order``."""

    def ordered(data: bytes) -> list[PageLines]:
        return [replace(p, lines=tuple(reading_order(p.lines))) for p in read(data)]

    return ordered


CANDIDATES: dict[str, tuple[Reader, Callable[[bytes], str]]] = {
    "pdfminer.six": (pdfminer_lines, pdfminer_raw),
    "pypdfium2": (pdfium_lines, pdfium_raw),
    "pypdf": (pypdf_lines, pypdf_raw),
}
RUNNING = {RUNNING_TITLE, WORD_HEADER, SLIDE_FOOTER}


# ------------------------------------------------------------------ measures
def _normal(text: str) -> str:
    return " ".join(text.replace("\u00ad", "").replace("\ufffe", "").split())


def in_order(text: str, expected: Sequence[str]) -> tuple[int, int]:
    """(sentences found whole, of those the longest run in reading order)."""
    flat = _normal(text)
    positions = [flat.find(_normal(sentence)) for sentence in expected]
    found = [p for p in positions if p >= 0]
    tails: list[int] = []
    for position in found:
        at = bisect.bisect_left(tails, position)
        tails[at : at + 1] = [position]
    return len(found), len(tails)


def cleaned_text(pages: list[PageLines]) -> tuple[str, int]:
    """The pages' text after the shared clean-up, and the running lines it left."""
    kept = drop_running_lines(pages)
    left = sum(
        1
        for page in kept
        for line in page.lines
        if _normal(line.text) in RUNNING
        or (is_page_number(line.text) and line.top > page.height * 0.85)
    )
    return join_lines([line.text for page in kept for line in page.lines]), left


def running_in_raw(text: str) -> int:
    lines = [_normal(line) for line in text.splitlines()]
    return sum(1 for line in lines if line in RUNNING or re.fullmatch(r"\d{1,3}", line))


def best_seconds(action: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - started)
    return best


def generate(folder: Path) -> dict[str, tuple[bytes, list[str]]]:
    paper = paper_content(sections=10, paragraphs=4)
    made = {
        "paper": (two_column_pdf(paper), paper.expected),
        "paper-across": (interleaved_two_column_pdf(paper), paper.expected),
    }
    word_document(paper, folder / "word.docx")
    made["word"] = (libreoffice_pdf(folder / "word.docx"), paper.expected)
    slides_expected = slide_deck(paper, folder / "slides.pptx")
    made["slides"] = (libreoffice_pdf(folder / "slides.pptx"), slides_expected)
    for name, (data, _) in made.items():
        (folder / f"{name}.pdf").write_bytes(data)
    return made


def page_count(data: bytes) -> int:
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(data)
    try:
        return len(document)
    finally:
        document.close()


def product_text(data: bytes) -> str:
    from metacortex.documents import DocumentLimits, extract

    return extract(data, "application/pdf", DocumentLimits()).text


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--keep", type=Path, help="write the generated files here")
    parser.add_argument("--repeat", type=int, default=3, help="timing runs (best is kept)")
    parser.add_argument("--no-product", action="store_true", help="skip the product pipeline")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as work:
        folder = args.keep or Path(work)
        folder.mkdir(parents=True, exist_ok=True)
        documents = generate(folder)
        print("| library | document | pages | sentences whole | in order | running lines left"
              " | pages/s |")  # fmt: skip
        print("|---|---|---|---|---|---|---|")
        readers: list[tuple[str, Callable[[bytes], tuple[str, int]]]] = []
        for name, (lines_of, raw_of) in CANDIDATES.items():
            readers.append((name, lambda d, f=lines_of: cleaned_text(f(d))))  # type: ignore[misc]
            ordered = our_order(pdfium_fragments if name == "pypdfium2" else lines_of)
            readers.append(
                (f"{name} + our order", lambda d, f=ordered: cleaned_text(f(d)))  # type: ignore[misc]
            )
            readers.append((f"{name} raw", lambda d, f=raw_of: (t := f(d), running_in_raw(t))))  # type: ignore[misc]
        if not args.no_product:
            readers.append(("product (pdfminer.six)", lambda d: (product_text(d), -1)))
        for reader_name, read in readers:
            for doc_name, (data, expected) in documents.items():
                text, left = read(data)
                whole, in_sequence = in_order(text, expected)
                pages = page_count(data)
                seconds = best_seconds(lambda d=data, r=read: r(d), args.repeat)  # type: ignore[misc]
                print(
                    f"| {reader_name} | {doc_name} | {pages} | {whole}/{len(expected)} "
                    f"| {in_sequence / len(expected):.3f} | {left if left >= 0 else 'n/a'} "
                    f"| {pages / seconds:.1f} |",
                    flush=True,
                )
        if not args.no_product:
            isolation_cost(documents["paper"][0], args.repeat)
    return 0


def isolation_cost(data: bytes, repeat: int) -> None:
    from metacortex.documents import DocumentLimits, extract, extract_isolated

    limits = DocumentLimits()
    extract_isolated(b"warm", "text/plain", limits)  # starts a reader host
    tiny = best_seconds(lambda: extract_isolated(b"x", "text/plain", limits), repeat * 5)
    isolated = best_seconds(lambda: extract_isolated(data, "application/pdf", limits), repeat)
    local = best_seconds(lambda: extract(data, "application/pdf", limits), repeat)
    print(
        f"\nreader process: {tiny * 1000:.1f} ms for a one-byte text; the paper "
        f"{isolated * 1000:.0f} ms isolated, {local * 1000:.0f} ms in process"
    )


if __name__ == "__main__":
    raise SystemExit(main())
