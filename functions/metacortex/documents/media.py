"""The media types documents may have, by name and by file extension."""

from __future__ import annotations

from pathlib import PurePath
from typing import Final

PLAIN: Final = "text/plain"
MARKDOWN: Final = "text/markdown"
CSV: Final = "text/csv"
TSV: Final = "text/tab-separated-values"
HTML: Final = "text/html"
PDF: Final = "application/pdf"
DOCX: Final = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"

SUPPORTED_MEDIA_TYPES: Final = frozenset({PLAIN, MARKDOWN, CSV, TSV, HTML, PDF, DOCX})
_ALIASES: Final = {
    "text/x-markdown": MARKDOWN,
    "application/csv": CSV,
    "application/xhtml+xml": HTML,
    "application/x-pdf": PDF,
}
_EXTENSIONS: Final = {
    ".txt": PLAIN,
    ".text": PLAIN,
    ".md": MARKDOWN,
    ".markdown": MARKDOWN,
    ".csv": CSV,
    ".tsv": TSV,
    ".html": HTML,
    ".htm": HTML,
    ".xhtml": HTML,
    ".pdf": PDF,
    ".docx": DOCX,
}


def parse_media_type(value: str) -> tuple[str, str | None]:
    """``"Text/Plain; charset=UTF-8"`` -> ``("text/plain", "UTF-8")``; aliases resolved."""
    kind, _, parameters = value.partition(";")
    kind = kind.strip().lower()
    charset = None
    for parameter in parameters.split(";"):
        name, _, raw = parameter.partition("=")
        if name.strip().lower() == "charset" and raw.strip():
            charset = raw.strip().strip("\"'")
    return _ALIASES.get(kind, kind), charset


def media_type_for_path(path: str | PurePath) -> str | None:
    """The media type a file's extension names, or None for one documents do not read."""
    return _EXTENSIONS.get(PurePath(path).suffix.lower())
