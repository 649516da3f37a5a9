"""Bytes and a media type in, an ``ExtractedDocument`` out, in this process.

``extract`` is what the isolated worker (``isolation.extract_isolated``) runs; tests
and benches call it directly. Every failure is a ``DocumentRefused``: the limits
checked here and in each format, and anything a parser raises on a damaged file.
"""

from __future__ import annotations

from metacortex.documents import media
from metacortex.documents.csv_table import extract_csv
from metacortex.documents.decoding import decode_text
from metacortex.documents.limits import DocumentLimits
from metacortex.documents.markdown import extract_markdown
from metacortex.documents.model import ExtractedDocument
from metacortex.documents.plain import extract_plain
from metacortex.errors import DocumentRefused

_NAMES = {
    media.PLAIN: "text",
    media.MARKDOWN: "Markdown",
    media.CSV: "CSV",
    media.TSV: "TSV",
    media.HTML: "HTML",
    media.PDF: "PDF",
    media.DOCX: "DOCX",
}


def _dispatch(
    data: bytes, kind: str, charset: str | None, limits: DocumentLimits
) -> ExtractedDocument:
    if kind == media.PDF:
        from metacortex.documents.pdf import extract_pdf

        return extract_pdf(data, limits)
    if kind == media.DOCX:
        from metacortex.documents.docx import extract_docx

        return extract_docx(data, limits)
    if kind == media.HTML:
        from metacortex.documents.html import extract_html

        return extract_html(data, charset, limits)
    text = decode_text(data, charset)
    if kind == media.MARKDOWN:
        return extract_markdown(text, limits)
    if kind in {media.CSV, media.TSV}:
        return extract_csv(text, kind)
    return extract_plain(text)


def extract(data: bytes, media_type: str, limits: DocumentLimits) -> ExtractedDocument:
    """The document's text and blocks, or ``DocumentRefused`` saying why not."""
    kind, charset = media.parse_media_type(media_type)
    if kind not in media.SUPPORTED_MEDIA_TYPES:
        raise DocumentRefused(
            "unsupported_type",
            f"documents of type {kind or '(none)'} are not read; send one of: "
            + ", ".join(sorted(media.SUPPORTED_MEDIA_TYPES)),
        )
    limits.check_size(len(data))
    try:
        document = _dispatch(data, kind, charset, limits)
    except DocumentRefused:
        raise
    except RecursionError:
        raise DocumentRefused(
            "bomb", f"the {_NAMES[kind]} nests its objects too deeply to read; it is refused"
        ) from None
    except MemoryError:
        raise DocumentRefused(
            "bomb",
            f"reading the {_NAMES[kind]} needs more memory than allowed "
            "(METACORTEX_DOCUMENT_MEMORY_MB); it is refused as a bomb",
        ) from None
    except Exception as error:  # noqa: BLE001 - parsers raise any built-in on damaged files
        raise DocumentRefused(
            "corrupt",
            f"the {_NAMES[kind]} is damaged and cannot be read ({type(error).__name__}): "
            "open and save it again, or send another copy",
        ) from None
    limits.check_chars(len(document.text))  # here, before the text leaves the reader
    return document
