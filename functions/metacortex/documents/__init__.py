"""Documents: files (text, Markdown, CSV, HTML, PDF, DOCX) read into blocks and cut into
passages. Pure: no storage, service or server here (docs/DOCUMENTS.md)."""

from metacortex.documents.extract import extract
from metacortex.documents.isolation import extract_isolated
from metacortex.documents.limits import DocumentLimits
from metacortex.documents.media import SUPPORTED_MEDIA_TYPES, media_type_for_path, parse_media_type
from metacortex.documents.model import NO_TEXT, NO_TEXT_LAYER, Block, BlockKind, ExtractedDocument

__all__ = [
    "NO_TEXT",
    "NO_TEXT_LAYER",
    "SUPPORTED_MEDIA_TYPES",
    "Block",
    "BlockKind",
    "DocumentLimits",
    "ExtractedDocument",
    "extract",
    "extract_isolated",
    "media_type_for_path",
    "parse_media_type",
]
