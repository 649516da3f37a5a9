"""Web pages: the main text without navigation, measured candidates in
bench/html_extract.py; these pages are the bench's own, with known boilerplate."""

from __future__ import annotations

import pytest

from bench.html_extract import BOILERPLATE, HEADINGS, div_soup_page, docs_page, semantic_page
from metacortex.documents import BlockKind, DocumentLimits, extract
from metacortex.errors import DocumentRefused


@pytest.mark.parametrize("page", [semantic_page, div_soup_page, docs_page])
def test_a_page_gives_its_article_and_none_of_its_navigation(page: object) -> None:
    html, sentences = page()  # type: ignore[operator]
    document = extract(html.encode(), "text/html", DocumentLimits())
    flat = " ".join(document.text.split())
    assert [s for s in sentences if s not in flat] == []
    assert [b for b in BOILERPLATE if b.casefold() in flat.casefold()] == []
    assert [b.text for b in document.blocks if b.kind is BlockKind.HEADING] == list(HEADINGS)
    assert document.title == HEADINGS[0]


def test_headings_list_items_and_table_rows_keep_their_structure() -> None:
    html = b"""<html><head><title>Site | Piers</title><script>var x = "no";</script></head>
    <body><nav><a href="/">Home</a></nav><main>
    <h2>Counts</h2><p>Boats were <b>counted</b> at dawn.<br>Twice.</p>
    <ul><li>North pier</li><li>South <i>pier</i></li></ul>
    <table><thead><tr><th>Pier</th><th>Boats</th></tr></thead>
    <tbody><tr><td>North</td><td>12</td></tr></tbody></table>
    <pre>line one
line two</pre></main></body></html>"""
    document = extract(html, "text/html; charset=utf-8", DocumentLimits())
    assert [(b.kind, b.text) for b in document.blocks] == [
        (BlockKind.HEADING, "Counts"),
        (BlockKind.PARAGRAPH, "Boats were counted at dawn. Twice."),
        (BlockKind.LIST_ITEM, "North pier"),
        (BlockKind.LIST_ITEM, "South pier"),
        (BlockKind.TABLE_ROW, "Pier: North; Boats: 12"),
        (BlockKind.PARAGRAPH, "line one\nline two"),
    ]
    assert document.blocks[-1].heading_path == ("Counts",)
    assert document.title == "Site | Piers"


def test_the_charset_a_page_declares_decodes_it() -> None:
    html = '<html><head><meta charset="windows-1252"></head><body><main><p>Café crème</p>'
    document = extract(html.encode("cp1252"), "text/html", DocumentLimits())
    assert document.text == "Café crème"


def test_elements_nested_deeper_than_the_limit_are_refused_as_a_bomb() -> None:
    html = b"<html><body>" + b"<div>" * 3000 + b"deep" + b"</div>" * 3000 + b"</body></html>"
    with pytest.raises(DocumentRefused) as refused:
        extract(html, "text/html", DocumentLimits(max_depth=100))
    assert refused.value.reason == "bomb"
