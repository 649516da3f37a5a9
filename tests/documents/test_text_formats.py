"""Plain text, Markdown and CSV; media types and charsets."""

from __future__ import annotations

import pytest

from metacortex.documents import (
    BlockKind,
    DocumentLimits,
    extract,
    media_type_for_path,
    parse_media_type,
)
from metacortex.errors import DocumentRefused

MARKDOWN = """---
title: Harbour notes
author: someone
---
# Survey

Boats were *counted*
at dawn.

## Piers

- North pier
- South pier
  1. its east side

| Pier | Boats |
|------|-------|
| North | 12 |

```
raw  code
```

# Next part

> A quoted line.
"""


def test_markdown_headings_make_the_heading_path_of_what_follows() -> None:
    document = extract(MARKDOWN.encode(), "text/markdown", DocumentLimits())
    assert document.title == "Harbour notes"
    assert [(b.kind, b.text, b.heading_path) for b in document.blocks] == [
        (BlockKind.HEADING, "Survey", ("Survey",)),
        (BlockKind.PARAGRAPH, "Boats were counted at dawn.", ("Survey",)),
        (BlockKind.HEADING, "Piers", ("Survey", "Piers")),
        (BlockKind.LIST_ITEM, "North pier", ("Survey", "Piers")),
        (BlockKind.LIST_ITEM, "South pier", ("Survey", "Piers")),
        (BlockKind.LIST_ITEM, "its east side", ("Survey", "Piers")),
        (BlockKind.TABLE_ROW, "Pier: North; Boats: 12", ("Survey", "Piers")),
        (BlockKind.PARAGRAPH, "raw  code", ("Survey", "Piers")),
        (BlockKind.HEADING, "Next part", ("Next part",)),
        (BlockKind.PARAGRAPH, "A quoted line.", ("Next part",)),
    ]
    for block in document.blocks:
        assert document.text[block.start : block.end] == block.text


def test_markdown_nested_past_the_limit_is_refused_not_cut_silently() -> None:
    deep = ">" * 5000 + " deep thought\n"
    with pytest.raises(DocumentRefused) as refused:
        extract(deep.encode(), "text/markdown", DocumentLimits(max_depth=50))
    assert refused.value.reason == "bomb"
    nested = ">" * 40 + " deep thought\n"
    document = extract(nested.encode(), "text/markdown", DocumentLimits(max_depth=50))
    assert document.text == "deep thought"


def test_each_csv_row_is_a_block_that_names_its_columns() -> None:
    data = b"name;city;note\nAda;London;\nGrace;Arlington;admiral\n\n"
    document = extract(data, "text/csv", DocumentLimits())
    assert [b.text for b in document.blocks] == [
        "name: Ada; city: London",
        "name: Grace; city: Arlington; note: admiral",
    ]
    assert {b.kind for b in document.blocks} == {BlockKind.TABLE_ROW}


def test_a_tab_separated_file_and_a_quoted_comma_are_read_as_cells() -> None:
    tsv = extract(b"a\tb\n1\t2\n", "text/tab-separated-values", DocumentLimits())
    assert tsv.blocks[0].text == "a: 1; b: 2"
    quoted = extract(b'who,said\nAda,"yes, and no"\n', "text/csv", DocumentLimits())
    assert quoted.blocks[0].text == "who: Ada; said: yes, and no"


def test_plain_text_paragraphs_split_at_blank_lines_and_keep_their_line_breaks() -> None:
    data = b"Shopping list\n\nmilk\neggs\n\n\n  \nThe end.\r\n"
    document = extract(data, "text/plain", DocumentLimits())
    assert [b.text for b in document.blocks] == ["Shopping list", "milk\neggs", "The end."]
    assert document.title == "Shopping list"


def test_text_in_windows_1252_or_with_a_byte_order_mark_decodes() -> None:
    assert extract("café".encode("cp1252"), "text/plain", DocumentLimits()).text == "café"
    assert extract("café".encode("utf-16"), "text/plain", DocumentLimits()).text == "café"
    latin = extract("café".encode("latin-1"), "text/plain; charset=latin-1", DocumentLimits())
    assert latin.text == "café"


def test_binary_sent_as_text_is_refused_as_not_text() -> None:
    with pytest.raises(DocumentRefused) as refused:
        extract(b"\x00\x01\x02PNG\x00", "text/plain", DocumentLimits())
    assert refused.value.reason == "not_text"


def test_an_unknown_media_type_is_refused_with_the_supported_list() -> None:
    with pytest.raises(DocumentRefused) as refused:
        extract(b"GIF89a", "image/gif", DocumentLimits())
    assert refused.value.reason == "unsupported_type"
    assert "application/pdf" in refused.value.message


def test_an_empty_file_has_no_text_and_no_blocks() -> None:
    document = extract(b"", "text/plain", DocumentLimits())
    assert (document.text, document.blocks, document.title) == ("", (), None)


def test_media_types_are_read_from_names_and_extensions() -> None:
    assert parse_media_type("Text/Markdown; charset=UTF-8") == ("text/markdown", "UTF-8")
    assert parse_media_type("application/xhtml+xml") == ("text/html", None)
    assert media_type_for_path("notes/Paper.PDF") == "application/pdf"
    assert media_type_for_path("a.docx") == (
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    )
    assert media_type_for_path("photo.jpg") is None
