"""Markdown (CommonMark with tables, by markdown-it-py): headings become the heading path
of what follows them; list items, table rows (header kept per row), code and quotes
are blocks of their own. A YAML front matter's ``title:`` is the title."""

from __future__ import annotations

import re
from collections.abc import Sequence

from markdown_it import MarkdownIt
from markdown_it.token import Token

from metacortex.documents.builder import BlockBuilder
from metacortex.documents.limits import DocumentLimits
from metacortex.documents.model import BlockKind, ExtractedDocument
from metacortex.documents.table_rows import row_text

_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?)\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
_FRONT_TITLE = re.compile(r"^title:[ \t]*(.+?)[ \t]*$", re.MULTILINE)
_TAGS = re.compile(r"<[^>]*>")


def _inline_text(token: Token) -> str:
    parts: list[str] = []
    for child in token.children or []:
        if child.type in {"text", "code_inline"}:
            parts.append(child.content)
        elif child.type == "softbreak":
            parts.append(" ")
        elif child.type == "hardbreak":
            parts.append("\n")
        elif child.type == "image":
            parts.append(child.content)  # its alt text
    return "".join(parts)


def _front_matter(text: str) -> tuple[str | None, str]:
    found = _FRONT_MATTER.match(text)
    if not found:
        return None, text
    title = _FRONT_TITLE.search(found.group(1))
    value = title.group(1).strip("'\"") if title else None
    return value or None, text[found.end() :]


def _walk(tokens: Sequence[Token], builder: BlockBuilder) -> str | None:
    first_h1: str | None = None
    in_list = 0
    header: list[str] = []
    row: list[str] | None = None
    in_head = False
    for index, token in enumerate(tokens):
        following = tokens[index + 1] if index + 1 < len(tokens) else None
        if token.type == "heading_open" and following is not None:
            text = _inline_text(following)
            level = int(token.tag[1:])
            if level == 1 and first_h1 is None:
                first_h1 = text
            builder.heading(text, level)
        elif token.type in {"bullet_list_open", "ordered_list_open"}:
            in_list += 1
        elif token.type in {"bullet_list_close", "ordered_list_close"}:
            in_list -= 1
        elif token.type == "paragraph_open" and following is not None and row is None:
            kind = BlockKind.LIST_ITEM if in_list else BlockKind.PARAGRAPH
            builder.add(kind, _inline_text(following))
        elif token.type in {"fence", "code_block"}:
            builder.add(BlockKind.PARAGRAPH, token.content)
        elif token.type == "html_block":
            builder.add(BlockKind.PARAGRAPH, " ".join(_TAGS.sub(" ", token.content).split()))
        elif token.type == "thead_open":
            in_head, header = True, []
        elif token.type == "thead_close":
            in_head = False
        elif token.type == "tr_open":
            row = []
        elif token.type in {"th_open", "td_open"} and following is not None and row is not None:
            row.append(_inline_text(following) if following.type == "inline" else "")
        elif token.type == "tr_close" and row is not None:
            if in_head:
                header = row
            else:
                builder.add(BlockKind.TABLE_ROW, row_text(header, row))
            row = None
    return first_h1


def extract_markdown(
    text: str, limits: DocumentLimits, media_type: str = "text/markdown"
) -> ExtractedDocument:
    title, body = _front_matter(text)
    # maxNesting bounds markdown-it's recursion (nested quotes and lists); past it,
    # markdown-it drops the content silently, so reaching it refuses the document.
    parser = MarkdownIt("commonmark", {"maxNesting": limits.max_depth + 1}).enable("table")
    tokens = parser.parse(body)
    limits.check_depth(max((token.level + 1 for token in tokens), default=0))
    builder = BlockBuilder(limits)
    first_h1 = _walk(tokens, builder)
    return ExtractedDocument(media_type, title or first_h1, None, builder.text, builder.blocks)
