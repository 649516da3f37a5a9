"""Input and output models of the document tools (``create_document``, ``list_documents``,
``get_document``); the memory tools' are in ``schemas``, whose rules these follow."""

from __future__ import annotations

from typing import Final, Literal

from pydantic import BaseModel, Field

from metacortex.domain import limits
from metacortex.mcp_surface.schemas import (
    MAX_CURSOR_CHARS,
    SPACE_HELP,
    AuthorOut,
    Id,
    OccurredTime,
    SpaceKey,
    ToolInput,
    Topic,
)
from metacortex.usecases.documents import (
    DEFAULT_TEXT_CHARS,
    MAX_SOURCE_CHARS,
    MAX_TEXT_CHARS,
    MAX_TITLE_CHARS,
)

# A create_document call must fit the HTTP body limit whole, as an image does
# (``limits.MAX_IMAGE_BASE64_CHARS``: the body less an allowance for the rest): about
# 720 KiB of file as base64. Larger files go through `metacortex ingest`.
MAX_DOCUMENT_BASE64_CHARS: Final = limits.MAX_IMAGE_BASE64_CHARS
MAX_DOCUMENT_BYTES_BY_TOOL: Final = MAX_DOCUMENT_BASE64_CHARS // 4 * 3


class CreateDocumentInput(ToolInput):
    content: str | None = Field(
        default=None,
        max_length=MAX_DOCUMENT_BASE64_CHARS,
        description="The document as text (plain text, Markdown, CSV or HTML source). Give "
        "this or content_base64.",
    )
    content_base64: str | None = Field(
        default=None,
        max_length=MAX_DOCUMENT_BASE64_CHARS,
        description="The file's bytes as base64 (no data: prefix), for a PDF or DOCX. At most "
        f"{MAX_DOCUMENT_BASE64_CHARS:,} characters ({MAX_DOCUMENT_BYTES_BY_TOOL // 1024} KiB "
        "of file), so that the request fits the server's body limit.",
    )
    media_type: str | None = Field(
        default=None,
        max_length=100,
        description="text/plain, text/markdown, text/csv, text/tab-separated-values, "
        "text/html, application/pdf or application/vnd.openxmlformats-officedocument."
        "wordprocessingml.document. Required with content_base64 unless source ends in a "
        "known extension; content defaults to text/plain.",
    )
    title: str | None = Field(
        default=None,
        max_length=MAX_TITLE_CHARS,
        description="The document's title; default: the file's own (PDF metadata, the first "
        "heading) or the source's file name.",
    )
    source: str | None = Field(
        default=None,
        max_length=MAX_SOURCE_CHARS,
        description="Where it comes from: a file path or URL. Adding a changed file with the "
        "same source replaces the earlier version (its unchanged passages are kept).",
    )
    topic: Topic | None = Field(
        default=None, description="Topic of its passages. Default 'general'."
    )
    space: SpaceKey | None = Field(default=None, description=SPACE_HELP)
    occurred_at: OccurredTime | None = Field(
        default=None,
        description="When it was written (an email's or a page's date): the occurred_at of "
        "its passages. Omit it and they happened when they were saved.",
    )


class ListDocumentsInput(ToolInput):
    limit: int | None = Field(
        default=None, ge=1, le=limits.MAX_LIST_LIMIT, description="Page size (1-100); default 20."
    )
    cursor: str | None = Field(
        default=None, max_length=MAX_CURSOR_CHARS, description="next_cursor of the previous page."
    )
    space: SpaceKey | None = Field(default=None, description=SPACE_HELP)


class GetDocumentInput(ToolInput):
    id: Id = Field(description="The document's id, from list_documents or a passage's citation.")
    offset: int | None = Field(
        default=None,
        ge=0,
        description="Where in the text to start (a citation's start, or the previous "
        "call's next_offset); default 0.",
    )
    page: int | None = Field(
        default=None, ge=1, description="Start at this PDF page instead of an offset."
    )
    limit_chars: int | None = Field(
        default=None,
        ge=1,
        le=MAX_TEXT_CHARS,
        description=f"How many characters of text to return (1-{MAX_TEXT_CHARS:,}); "
        f"default {DEFAULT_TEXT_CHARS:,}.",
    )
    space: SpaceKey | None = Field(default=None, description=SPACE_HELP)


class DocumentOut(BaseModel):
    id: str
    space: str
    title: str
    source: str | None = Field(description="The path or URL it was added from.")
    media_type: str
    size: int = Field(description="Bytes of the file.")
    sha256: str
    page_count: int | None = Field(description="Pages of a PDF; null for other formats.")
    pages_without_text: list[int] = Field(description="PDF pages that are pictures only.")
    no_text: str | None = Field(
        description=(
            "Why nothing of it can be searched (a scan OCR did not read or found no text "
            "on), or null."
        )
    )
    topic: str
    text_chars: int = Field(description="Characters of extracted text (get_document pages it).")
    passage_count: int
    version: int = Field(description="1 for the first version of its source, then 2, 3...")
    supersedes: str | None = Field(description="The version it replaced.")
    superseded_by: str | None = Field(description="The version that replaced it.")
    state: Literal["ingesting", "ready"]
    created_at: str
    added_by: AuthorOut


class PassageCountsOut(BaseModel):
    added: int = Field(description="New passages (embedded now).")
    kept: int = Field(description="Unchanged passages of the previous version, kept as they were.")
    retired: int = Field(description="Passages of the previous version retired as changed.")


class CreateDocumentOutput(BaseModel):
    document: DocumentOut
    write_status: Literal["created", "replaced", "duplicate"] = Field(
        description="'duplicate': the same file was already stored and nothing was added; "
        "'replaced': it is a new version of the document with the same source."
    )
    passages: PassageCountsOut
    message: str | None = Field(default=None, description="Present when no text was found.")


class ListDocumentsOutput(BaseModel):
    documents: list[DocumentOut]
    next_cursor: str | None = Field(
        description="Pass as cursor for the next page; null at the end."
    )
    space: str


class PageOffsetOut(BaseModel):
    page: int
    offset: int = Field(description="Where the page starts in the text.")


class GetDocumentOutput(BaseModel):
    document: DocumentOut
    offset: int = Field(description="Where this slice of text starts.")
    text: str
    next_offset: int | None = Field(
        description="Pass as offset for the next slice; null at the end."
    )
    page: int | None = Field(description="The PDF page the slice starts on.")
    pages: list[PageOffsetOut] = Field(description="The PDF pages that start inside this slice.")
