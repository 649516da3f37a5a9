"""HTML: the page's main text, not its navigation (lxml, readability-lxml as fallback).

The page's own landmarks decide first: ``<main>``, ``role="main"`` or a single
``<article>`` is the content, and navigation, banners, sidebars, footers, forms,
scripts and hidden elements are dropped wherever they are. A page without
landmarks (``div`` soup) goes through readability-lxml's scoring, which keeps the
densest run of prose. Measured against jusText and trafilatura in
``bench/html_extract.py`` (docs/DOCUMENTS.md, "HTML").

Headings become the heading path, ``<li>`` list items, ``<tr>`` table rows with
the header row's cells named on each, ``<pre>`` keeps its line breaks.
"""

from __future__ import annotations

import re
from typing import Final

from lxml import etree
from lxml import html as lxml_html
from readability import Document as Readability

from metacortex.documents.builder import BlockBuilder
from metacortex.documents.decoding import decode_text
from metacortex.documents.limits import DocumentLimits
from metacortex.documents.model import BlockKind, ExtractedDocument
from metacortex.documents.table_rows import row_text
from metacortex.errors import DocumentRefused

_DROPPED: Final = frozenset(
    "script style noscript template svg math iframe object embed canvas form button "
    "select textarea input nav aside menu dialog".split()
)
_PAGE_FRAME: Final = frozenset({"header", "footer"})  # dropped outside an article
_DROPPED_ROLES: Final = frozenset(
    {"navigation", "banner", "contentinfo", "complementary", "search", "menu", "dialog"}
)
_HEADINGS: Final = {f"h{n}": n for n in range(1, 7)}
_BLOCKS: Final = frozenset(
    "p div section article main header footer ul ol dl dt dd li table thead tbody tfoot "
    "tr td th caption pre blockquote figure figcaption address hr details summary "
    "center".split()
) | frozenset(_HEADINGS)
_META_CHARSET: Final = re.compile(rb"<meta[^>]+charset\s*=\s*[\"']?\s*([A-Za-z0-9_.:-]+)", re.I)
_XML_DECLARATION: Final = re.compile(r"\A\s*<\?xml[^>]*\?>")


def _decode(data: bytes, charset: str | None) -> str:
    if charset is None:
        declared = _META_CHARSET.search(data[:4096])
        charset = declared.group(1).decode("ascii") if declared else None
    try:
        text = decode_text(data, charset)
    except DocumentRefused:
        text = decode_text(data, None)  # a wrong <meta charset>: read it as the bytes are
    return _XML_DECLARATION.sub("", text, count=1)


def _depth(root: etree._Element) -> int:
    depth = deepest = 0
    for event, _ in etree.iterwalk(root, events=("start", "end")):
        depth += 1 if event == "start" else -1
        deepest = max(deepest, depth)
    return deepest


def _tag(element: etree._Element) -> str:
    return element.tag.lower() if isinstance(element.tag, str) else ""


def _is_dropped(element: etree._Element, in_article: bool) -> bool:
    tag = _tag(element)
    if not tag:
        return True  # comments, processing instructions (their tail is still read)
    if tag in _DROPPED or (tag in _PAGE_FRAME and not in_article):
        return True
    role = (element.get("role") or "").strip().lower()
    hidden = element.get("hidden") is not None or element.get("aria-hidden") == "true"
    return role in _DROPPED_ROLES or hidden


def _landmark(root: etree._Element) -> etree._Element | None:
    for path in ("//main", "//*[@role='main']"):
        found = root.xpath(path)
        if isinstance(found, list) and len(found) == 1 and isinstance(found[0], etree._Element):
            return found[0]
    articles = root.xpath("//article")
    if isinstance(articles, list) and len(articles) == 1:
        article = articles[0]
        return article if isinstance(article, etree._Element) else None
    return None


class _Walker:
    """Depth-first over the content, inline text gathered until a block element ends it."""

    def __init__(self, builder: BlockBuilder) -> None:
        self.builder = builder
        self.buffer: list[str] = []
        self.kind = BlockKind.PARAGRAPH
        self.header: list[str] = []
        self.first_h1: str | None = None

    def flush(self) -> None:
        text = " ".join("".join(self.buffer).split())
        self.buffer = []
        self.builder.add(self.kind, text)

    def text_of(self, element: etree._Element, in_article: bool) -> str:
        parts: list[str] = []
        self._inline(element, in_article, parts)
        return " ".join("".join(parts).split())

    def _inline(self, element: etree._Element, in_article: bool, parts: list[str]) -> None:
        parts.append(element.text or "")
        for child in element:
            if not _is_dropped(child, in_article):
                self._inline(child, in_article, parts)
            parts.append(" " if _tag(child) in _BLOCKS else "")
            parts.append(child.tail or "")

    def walk(self, element: etree._Element, in_article: bool) -> None:
        tag = _tag(element)
        in_article = in_article or tag in {"article", "main"}
        if tag in _HEADINGS:
            self.flush()
            text = self.text_of(element, in_article)
            if tag == "h1" and self.first_h1 is None and text:
                self.first_h1 = text
            self.builder.heading(text, _HEADINGS[tag])
        elif tag == "tr":
            self.flush()
            cells = [
                self.text_of(cell, in_article) for cell in element if _tag(cell) in {"td", "th"}
            ]
            is_header = all(_tag(c) == "th" for c in element if _tag(c) in {"td", "th"})
            parent = element.getparent()
            if (is_header or (parent is not None and _tag(parent) == "thead")) and not self.header:
                self.header = cells
            else:
                self.builder.add(BlockKind.TABLE_ROW, row_text(self.header, cells))
        elif tag == "table":
            self.flush()
            outer_header, self.header = self.header, []
            self._children(element, in_article)
            self.header = outer_header
        elif tag == "pre":
            self.flush()
            self.builder.add(BlockKind.PARAGRAPH, element.text_content())
        elif tag == "br":
            self.buffer.append("\n")
        elif tag == "li":
            self.flush()
            outer_kind, self.kind = self.kind, BlockKind.LIST_ITEM
            self.buffer.append(element.text or "")
            self._children(element, in_article)
            self.flush()
            self.kind = outer_kind
        elif tag in _BLOCKS:
            self.flush()
            self.buffer.append(element.text or "")
            self._children(element, in_article)
            self.flush()
        else:
            self.buffer.append(element.text or "")
            self._children(element, in_article)

    def _children(self, element: etree._Element, in_article: bool) -> None:
        for child in element:
            if not _is_dropped(child, in_article):
                self.walk(child, in_article)
            self.buffer.append(child.tail or "")


def extract_html(
    data: bytes,
    charset: str | None,
    limits: DocumentLimits,
    media_type: str = "text/html",
) -> ExtractedDocument:
    text = _decode(data, charset)
    if not text.strip():
        return ExtractedDocument(media_type, None, None, "", ())
    parser = lxml_html.HTMLParser(remove_comments=True, no_network=True)
    try:
        root = lxml_html.document_fromstring(text, parser=parser)
    except (etree.ParserError, ValueError) as error:
        raise DocumentRefused("corrupt", f"the HTML cannot be parsed: {error}") from None
    limits.check_depth(_depth(root))
    page_title = " ".join((root.findtext(".//title") or "").split()) or None
    content = _landmark(root)
    in_article = content is not None
    if content is None:
        summary = Readability(text).summary(html_partial=True)
        content = lxml_html.fragment_fromstring(summary, create_parent="div", parser=parser)
        in_article = True  # readability kept an article's own header and footer
    builder = BlockBuilder(limits)
    walker = _Walker(builder)
    walker.walk(content, in_article)
    walker.flush()
    title = walker.first_h1 or page_title
    return ExtractedDocument(media_type, title, None, builder.text, builder.blocks)
