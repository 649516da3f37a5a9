"""DOCX read with python-docx from files python-docx writes here; hostile packages
(an encrypted Office file, a ZIP bomb, XML nested thousands deep) are refused."""

from __future__ import annotations

import io
import zipfile

import pytest
from docx import Document

from metacortex.documents import BlockKind, DocumentLimits, extract
from metacortex.documents.media import DOCX
from metacortex.errors import DocumentRefused
from tests.documents.craft import zip_of


def _report() -> bytes:
    document = Document()
    document.core_properties.title = "Harbour Survey"
    document.sections[0].header.paragraphs[0].text = "Confidential running header"
    document.add_heading("Harbour Survey", level=0)
    document.add_paragraph("The survey covered three piers.")
    document.add_heading("Methods", level=1)
    document.add_paragraph("Boats were counted at dawn.")
    document.add_paragraph("North pier", style="List Bullet")
    document.add_paragraph("South pier", style="List Number")
    document.add_heading("Counts", level=2)
    table = document.add_table(rows=3, cols=2)
    for row, (pier, boats) in enumerate([("Pier", "Boats"), ("North", "12"), ("South", "7")]):
        table.cell(row, 0).text = pier
        table.cell(row, 1).text = boats
    document.add_paragraph("Counts were checked twice.")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def test_a_word_document_gives_headings_paragraphs_list_items_and_table_rows_in_order() -> None:
    document = extract(_report(), DOCX, DocumentLimits())
    assert [(b.kind, b.text) for b in document.blocks] == [
        (BlockKind.HEADING, "Harbour Survey"),
        (BlockKind.PARAGRAPH, "The survey covered three piers."),
        (BlockKind.HEADING, "Methods"),
        (BlockKind.PARAGRAPH, "Boats were counted at dawn."),
        (BlockKind.LIST_ITEM, "North pier"),
        (BlockKind.LIST_ITEM, "South pier"),
        (BlockKind.HEADING, "Counts"),
        (BlockKind.TABLE_ROW, "Pier: North; Boats: 12"),
        (BlockKind.TABLE_ROW, "Pier: South; Boats: 7"),
        (BlockKind.PARAGRAPH, "Counts were checked twice."),
    ]
    assert document.title == "Harbour Survey"
    rows = [b for b in document.blocks if b.kind is BlockKind.TABLE_ROW]
    assert rows[0].heading_path == ("Harbour Survey", "Methods", "Counts")
    assert "Confidential running header" not in document.text


def test_an_encrypted_office_file_is_refused_as_encrypted() -> None:
    # Word saves a password-protected .docx as an OLE compound file: this signature.
    ole = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504) + b"EncryptedPackage" * 64
    with pytest.raises(DocumentRefused) as refused:
        extract(ole, DOCX, DocumentLimits())
    assert refused.value.reason == "encrypted"
    assert "password" in refused.value.message


def test_a_zip_bomb_is_refused_from_its_declared_sizes_before_inflating() -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as package:
        package.writestr("[Content_Types].xml", b"<Types/>")
        with package.open("word/document.xml", "w", force_zip64=True) as part:
            for _ in range(160):
                part.write(b" " * (1 << 20))  # 160 MiB of spaces
    bomb = out.getvalue()
    assert len(bomb) < 400_000
    with pytest.raises(DocumentRefused) as refused:
        extract(bomb, DOCX, DocumentLimits())
    assert refused.value.reason == "bomb"
    assert "METACORTEX_DOCUMENT_MAX_EXPANSION" in refused.value.message


def test_xml_nested_deeper_than_the_limit_is_refused_as_a_bomb() -> None:
    deep = b"<document>" + b"<a>" * 5000 + b"</a>" * 5000 + b"</document>"
    with pytest.raises(DocumentRefused) as refused:
        extract(zip_of({"word/document.xml": deep}), DOCX, DocumentLimits())
    assert refused.value.reason == "bomb"
    assert "METACORTEX_DOCUMENT_MAX_DEPTH" in refused.value.message


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("a truncated package", _report()[:3000]),
        ("a ZIP without a Word body", zip_of({"hello.txt": b"hello"})),
        ("a Word body that is not XML", zip_of({"word/document.xml": b"<w:document><p>"})),
    ],
)
def test_a_damaged_package_is_refused_as_corrupt(name: str, data: bytes) -> None:
    with pytest.raises(DocumentRefused) as refused:
        extract(data, DOCX, DocumentLimits())
    assert refused.value.reason == "corrupt", name
