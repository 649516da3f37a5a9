"""Documents made for the tests: real generators (fpdf2, python-docx) for the ordinary
ones, and hand-built files for the hostile ones (a PDF written object by object with
a correct cross-reference table, so only the part under test is wrong)."""

from __future__ import annotations

import io
import zipfile
import zlib
from collections.abc import Sequence

from fpdf import FPDF
from PIL import Image, ImageDraw


def pdf_from_objects(objects: Sequence[bytes], root: int = 1) -> bytes:
    """A PDF whose object ``n`` (1-based) is ``objects[n-1]``, with a valid xref table."""
    out = io.BytesIO()
    out.write(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(b"trailer\n<< /Size %d /Root %d 0 R >>\n" % (len(objects) + 1, root))
    out.write(b"startxref\n%d\n%%%%EOF\n" % xref)
    return out.getvalue()


def stream(data: bytes, extra: bytes = b"", *, flate: bool = False) -> bytes:
    if flate:
        data = zlib.compress(data, 9)
        extra += b" /Filter /FlateDecode"
    return b"<< /Length %d%s >>\nstream\n" % (len(data), extra) + data + b"\nendstream"


def one_page_pdf(content: bytes, *, flate: bool = False) -> bytes:
    """A one-page PDF with Helvetica and the given content stream."""
    return pdf_from_objects(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
            b" /Resources << /Font << /F1 5 0 R >> >> >>",
            stream(content, flate=flate),
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        ]
    )


def flate_bomb_pdf(inflated_bytes: int, level: int = 9) -> bytes:
    """A one-page PDF whose content stream inflates to ``inflated_bytes`` of spaces
    (about 1 KB of Flate per megabyte at level 9, 4.5 KB at the faster level 1)."""
    packer = zlib.compressobj(level)
    chunk = b" " * (1 << 20)
    packed = b"".join(packer.compress(chunk) for _ in range(inflated_bytes >> 20))
    packed += packer.flush()
    body = b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(packed)
    return pdf_from_objects(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
            body + packed + b"\nendstream",
        ]
    )


def slow_pdf(characters: int) -> bytes:
    """One page drawing ``characters`` one-letter strings: small, and minutes of work
    for a reader that builds an object per character."""
    content = b"BT /F1 1 Tf 10 10 Td " + b"(a) Tj " * characters + b"ET"
    return one_page_pdf(content, flate=True)


def deep_page_tree_pdf(depth: int) -> bytes:
    """A page tree ``depth`` levels of /Pages deep before its one page."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>"]
    for level in range(depth):
        number = level + 2
        objects.append(b"<< /Type /Pages /Kids [%d 0 R] /Count 1 >>" % (number + 1))
    objects.append(b"<< /Type /Page /MediaBox [0 0 612 792] >>")
    return pdf_from_objects(objects)


def picture(text: str = "SCANNED PAGE") -> Image.Image:
    image = Image.new("L", (800, 1000), 255)
    ImageDraw.Draw(image).text((100, 100), text, fill=0)
    return image


def pdf_of_pages(pages: Sequence[str | None], *, title: str | None = None) -> bytes:
    """fpdf2 pages: a string is set as paragraphs of text, None is a scanned picture."""
    pdf = FPDF(format="A4")
    if title:
        pdf.set_title(title)
    for page in pages:
        pdf.add_page()
        if page is None:
            pdf.image(picture(), x=10, y=10, w=190)
        else:
            pdf.set_font("Helvetica", size=11)
            pdf.multi_cell(0, 6, page)
    return bytes(pdf.output())


def zip_of(parts: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as package:
        for name, data in parts.items():
            package.writestr(name, data)
    return out.getvalue()
