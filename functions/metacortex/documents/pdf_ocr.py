"""The pages of a PDF that are pictures (a scan) read by OCR, as lines the PDF reader
then treats as it treats a text layer (paragraphs, headings, running headers).

pypdfium2 renders each such page at about 200 dots per inch (at most ``MAX_SIDE``
pixels a side); ``metacortex.ocr`` reads it with the models the ``ocr`` extra bundles.
Bounded: at most ``DocumentLimits.ocr_pages`` pages, and no page is started after
``ocr_seconds`` (kept inside the reader's own deadline), so a long scan is read in part
rather than killed; the pages left are listed in ``pages_without_text``. Runs in the
reader's process, under its address-space limit, like every reader.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Final

from metacortex.documents.limits import DocumentLimits
from metacortex.documents.pdf_lines import Line, PageLines
from metacortex.documents.reading_order import reading_order

# Rendering scale: 200 dpi over PDF's 72 points an inch.
RENDER_SCALE: Final = 200 / 72
MAX_SIDE: Final = 2400
# OCR may use this share of the reader's deadline; the rest is the text layer's.
DEADLINE_SHARE: Final = 0.75


def available(limits: DocumentLimits) -> bool:
    """Whether scanned pages are read: the limits ask for it and the extra is installed."""
    if limits.ocr_pages <= 0:
        return False
    from metacortex import ocr

    return ocr.installed() and _pdfium_installed()


def _pdfium_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("pypdfium2") is not None


def read_pages(data: bytes, numbers: Sequence[int], limits: DocumentLimits) -> dict[int, PageLines]:
    """The pages ``numbers`` (1-based) read by OCR, in order, until the page or time
    bound; a page with no text read is returned with no lines."""
    import numpy as np
    import pypdfium2

    from metacortex.ocr import OcrEngine

    deadline = time.monotonic() + min(limits.ocr_seconds, limits.seconds * DEADLINE_SHARE)
    engine = OcrEngine(threads=1, page=True)
    document = pypdfium2.PdfDocument(data)
    read: dict[int, PageLines] = {}
    try:
        for number in list(numbers)[: limits.ocr_pages]:
            if time.monotonic() > deadline:
                break
            page = document[number - 1]
            try:
                width, height = page.get_size()
                scale = min(RENDER_SCALE, MAX_SIDE / max(width, height, 1.0))
                picture = page.render(scale=scale).to_pil().convert("RGB")
            finally:
                page.close()
            lines = engine.lines_of_array(np.asarray(picture, dtype=np.uint8))
            fragments = [
                Line(
                    line.text,
                    line.left / scale,
                    line.top / scale,
                    line.right / scale,
                    line.bottom / scale,
                    # A line box is about a type size high: the same for a page's body
                    # text, larger for its headings.
                    round((line.bottom - line.top) / scale * 2) / 2,
                )
                for line in lines
            ]
            read[number] = PageLines(number, width, height, tuple(reading_order(fragments)))
    finally:
        document.close()
    return read
