"""Documents made by real generators, with the text each one must give back.

Used by ``bench/pdf_extract.py`` (choosing the PDF library) and by the tests of
``metacortex.documents`` (which generate their PDFs with fpdf2 at test time, so
CI needs no office suite; LibreOffice only runs in the bench).

Every document is built from numbered sentences (``Finding 12 shows ...``) so a
reader can check that each came back whole and in order. Long words carry soft
hyphens (U+00AD): generators break a line there and print a hyphen, which is how
hyphenated line ends arise in real PDFs.
"""

from __future__ import annotations

import random
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from fpdf import FPDF

SOFT_HYPHEN: Final = "\u00ad"
RUNNING_TITLE: Final = "Journal of Synthetic Results, Volume 3"
WORD_HEADER: Final = "Acme Quarterly Review - Confidential"
SLIDE_FOOTER: Final = "Acme Robotics - Internal"

_ADJECTIVES: Final = (
    "amber", "brisk", "careful", "distant", "early", "faint", "gentle", "hollow", "idle",
    "jagged", "keen", "lucid", "mellow", "narrow", "open", "pale", "quiet", "rapid",
    "steady", "tidy", "urgent", "vivid", "warm", "young",
)  # fmt: skip
_NOUNS: Final = (
    "falcon", "harbour", "lantern", "meadow", "orchard", "pilot", "quarry", "river",
    "signal", "tower", "valley", "window", "anchor", "bridge", "cellar", "engine",
    "furnace", "garden", "hammer", "island", "journal", "kettle", "ledger", "mirror",
)  # fmt: skip
_VERBS: Final = (
    "measured", "approached", "repaired", "observed", "painted", "followed", "counted",
    "sheltered", "crossed", "described", "balanced", "collected",
)  # fmt: skip
# Long words with their break points, so lines end in "-" at generator-chosen places.
_LONG_WORDS: Final = (
    "inter\u00adnation\u00adal\u00adisation",
    "photo\u00adsyn\u00adthesis",
    "electro\u00admagnet\u00adism",
    "counter\u00adbalanc\u00ading",
    "thermo\u00addynamic\u00adally",
    "ortho\u00adgonal\u00adity",
    "re\u00adcon\u00adfigur\u00adation",
    "multi\u00adplicat\u00adively",
)


def sentences(count: int, *, seed: int = 7, label: str = "Finding") -> list[str]:
    """``count`` distinct sentences with soft hyphens in their long words."""
    rng = random.Random(seed)
    made = []
    for number in range(1, count + 1):
        made.append(
            f"{label} {number} shows that the {rng.choice(_ADJECTIVES)} {rng.choice(_NOUNS)} "
            f"{rng.choice(_VERBS)} the {rng.choice(_ADJECTIVES)} {rng.choice(_NOUNS)} by "
            f"{rng.choice(_LONG_WORDS)} near the {rng.choice(_NOUNS)}."
        )
    return made


def plain(sentence: str) -> str:
    """The sentence as a reader sees it: soft hyphens are invisible."""
    return sentence.replace(SOFT_HYPHEN, "")


@dataclass(frozen=True, slots=True)
class Section:
    heading: str
    paragraphs: tuple[tuple[str, ...], ...]  # each paragraph: its sentences


@dataclass(frozen=True, slots=True)
class Paper:
    """A paper's content: title, abstract, sections; ``expected`` is the reading order."""

    title: str
    abstract: tuple[str, ...]
    sections: tuple[Section, ...]

    @property
    def expected(self) -> list[str]:
        ordered = [self.title, *self.abstract]
        for section in self.sections:
            ordered.append(section.heading)
            for paragraph in section.paragraphs:
                ordered.extend(paragraph)
        return [plain(text) for text in ordered]


def paper_content(*, sections: int = 6, paragraphs: int = 4, per_paragraph: int = 5) -> Paper:
    pool = iter(sentences(3 + sections * paragraphs * per_paragraph))
    abstract = tuple(next(pool) for _ in range(3))
    made = []
    for number in range(1, sections + 1):
        body = tuple(tuple(next(pool) for _ in range(per_paragraph)) for _ in range(paragraphs))
        made.append(Section(f"{number}. Section on the {_NOUNS[number]}", body))
    return Paper("Reading Order in Synthetic Documents", abstract, tuple(made))


class _RunningPaper(FPDF):
    """Running title at the top of every page but the first, page number at the foot."""

    def header(self) -> None:
        if self.page_no() > 1:
            self.set_font("Helvetica", "I", 8)
            self.cell(0, 6, RUNNING_TITLE, align="C")
            self.ln(10)

    def footer(self) -> None:
        self.set_y(-15)
        self.set_font("Helvetica", "", 8)
        self.cell(0, 10, str(self.page_no()), align="C")


def two_column_pdf(paper: Paper, *, gutter: float = 8.0) -> bytes:
    """The paper set by fpdf2: title and abstract across the page, then two columns."""
    pdf = _RunningPaper(format="A4")
    pdf.set_auto_page_break(auto=True, margin=20)
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 16)
    pdf.multi_cell(0, 9, paper.title, align="C")
    pdf.ln(4)
    pdf.set_font("Helvetica", "", 10)
    pdf.multi_cell(0, 5, " ".join(paper.abstract), align="J")
    pdf.ln(4)
    with pdf.text_columns(ncols=2, gutter=gutter, text_align="J") as columns:
        for section in paper.sections:
            pdf.set_font("Helvetica", "B", 12)
            columns.write(section.heading + "\n")
            pdf.set_font("Helvetica", "", 10)
            for paragraph in section.paragraphs:
                columns.write(" ".join(paragraph) + "\n\n")
    return bytes(pdf.output())


def interleaved_two_column_pdf(paper: Paper) -> bytes:
    """The same two columns drawn row by row across the page (left line, right line, ...)
    and the running header drawn last: content order is not reading order, as in PDFs
    from print drivers and some layout programs."""
    pdf = FPDF(format="A4")
    pdf.set_auto_page_break(auto=False)
    pdf.add_page()  # fpdf2 measures text on a page
    pdf.set_font("Helvetica", "", 10)
    gutter, top, bottom, line_height = 8.0, 25.0, 277.0 - 20.0, 5.0
    width = (pdf.epw - gutter) / 2
    lines: list[tuple[str, bool]] = []  # (text, is_heading)
    for section in paper.sections:
        lines.append((section.heading, True))
        for paragraph in section.paragraphs:
            wrapped = pdf.multi_cell(
                width, line_height, " ".join(paragraph), dry_run=True, output="LINES"
            )
            assert isinstance(wrapped, list)
            lines.extend((str(line), False) for line in wrapped)
            lines.append(("", False))
    page_number = 0
    while lines:
        if page_number:
            pdf.add_page()
        page_number += 1
        y = top
        if page_number == 1:
            pdf.set_font("Helvetica", "B", 16)
            pdf.set_xy(pdf.l_margin, 12)
            pdf.multi_cell(0, 9, paper.title, align="C", new_x="LMARGIN", new_y="NEXT")
            pdf.set_font("Helvetica", "", 10)
            pdf.multi_cell(0, 5, " ".join(paper.abstract), new_x="LMARGIN", new_y="NEXT")
            y = pdf.get_y() + 6
        rows = int((bottom - y) / line_height)
        left, right, lines = lines[:rows], lines[rows : 2 * rows], lines[2 * rows :]
        for row in range(rows):
            for column, source in ((0, left), (1, right)):
                if row < len(source) and source[row][0]:
                    text, heading = source[row]
                    pdf.set_font("Helvetica", "B" if heading else "", 12 if heading else 10)
                    x = pdf.l_margin + column * (width + gutter)
                    pdf.text(x, y + row * line_height, text)
        if page_number > 1:
            pdf.set_font("Helvetica", "I", 8)
            pdf.text(pdf.l_margin + 60, 12, RUNNING_TITLE)
        pdf.text(pdf.w / 2, 287, str(page_number))
    return bytes(pdf.output())


def word_document(paper: Paper, path: Path) -> None:
    """A .docx by python-docx: headings, paragraphs, a bulleted list, a running header
    and a page-number footer (a PAGE field), as a person writes one in Word."""
    from docx import Document
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    document = Document()
    section = document.sections[0]
    section.header.paragraphs[0].text = WORD_HEADER
    footer = section.footer.paragraphs[0]
    run = footer.add_run()
    for kind, text in (("begin", None), (None, "PAGE"), ("end", None)):
        if kind:
            element = OxmlElement("w:fldChar")
            element.set(qn("w:fldCharType"), kind)
        else:
            element = OxmlElement("w:instrText")
            element.text = text
        run._r.append(element)
    document.add_heading(paper.title, level=0)
    for sentence in paper.abstract:
        document.add_paragraph(sentence, style="List Bullet")
    for part in paper.sections:
        document.add_heading(part.heading, level=1)
        for paragraph in part.paragraphs:
            document.add_paragraph(" ".join(paragraph))
    document.save(str(path))


def slide_deck(paper: Paper, path: Path) -> list[str]:
    """A .pptx by python-pptx: one slide per section, its first sentences as bullets,
    a footer and slide number on each. Returns the text in reading order."""
    from pptx import Presentation
    from pptx.util import Inches, Pt

    deck = Presentation()
    expected: list[str] = []
    for number, section in enumerate(paper.sections, start=1):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = section.heading
        body = slide.placeholders[1].text_frame
        # Slides are not hyphenated: Impress breaks at a soft hyphen without printing one.
        bullets = [plain(paragraph[0]) for paragraph in section.paragraphs[:3]]
        body.text = bullets[0]
        for bullet in bullets[1:]:
            body.add_paragraph().text = bullet
        for paragraph in body.paragraphs:
            for run in paragraph.runs:
                run.font.size = Pt(16)
        footer = slide.shapes.add_textbox(Inches(0.5), Inches(7.0), Inches(6), Inches(0.4))
        footer.text_frame.text = SLIDE_FOOTER
        numeral = slide.shapes.add_textbox(Inches(9.0), Inches(7.0), Inches(0.8), Inches(0.4))
        numeral.text_frame.text = str(number)
        expected.extend([section.heading, *bullets])
    deck.save(str(path))
    return expected


def libreoffice_pdf(source: Path) -> bytes:
    """``source`` converted by LibreOffice (headless), as an office user exports a PDF."""
    office = shutil.which("soffice") or shutil.which("libreoffice")
    if office is None:
        raise RuntimeError(
            "LibreOffice is not installed: apt-get install -y libreoffice-writer-nogui "
            "libreoffice-impress-nogui"
        )
    with tempfile.TemporaryDirectory() as work:
        subprocess.run(  # noqa: S603 - fixed argv
            [
                office,
                f"-env:UserInstallation=file://{work}/profile",
                "--headless",
                "--convert-to",
                "pdf",
                "--outdir",
                work,
                str(source),
            ],
            check=True,
            capture_output=True,
            timeout=300,
        )
        return (Path(work) / (source.stem + ".pdf")).read_bytes()
