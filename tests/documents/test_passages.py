"""Passages cut along the document's structure, with locators and stable hashes."""

from __future__ import annotations

import pytest

from bench.documents_corpus import paper_content, two_column_pdf
from metacortex.documents import DocumentLimits, extract
from metacortex.documents.model import ExtractedDocument
from metacortex.documents.passages import Passage, content_hash, cut_passages


def _markdown(body: str) -> ExtractedDocument:
    return extract(body.encode(), "text/markdown", DocumentLimits())


def _sections(paragraph: str = "A steady paragraph of words about piers and boats.") -> str:
    parts = []
    for number in range(1, 4):
        parts.append(f"# Part {number}\n")
        for sub in range(1, 3):
            parts.append(f"## Part {number}.{sub}\n")
            parts.extend(f"{paragraph} ({number}.{sub}.{n})\n" for n in range(6))
    return "\n".join(parts)


@pytest.fixture(scope="module")
def pdf_document() -> ExtractedDocument:
    return extract(two_column_pdf(paper_content()), "application/pdf", DocumentLimits())


def _check_spans(document: ExtractedDocument, passages: list[Passage]) -> None:
    for passage in passages:
        assert document.text[passage.start : passage.end] == passage.text
    assert [p.index for p in passages] == list(range(len(passages)))
    starts = [p.start for p in passages]
    assert starts == sorted(starts)


@pytest.mark.parametrize("target", [200, 500, 1000])
def test_passages_index_the_text_and_cover_every_block_once(
    pdf_document: ExtractedDocument, target: int
) -> None:
    passages = cut_passages(pdf_document, target)
    _check_spans(pdf_document, passages)
    for block in pdf_document.blocks:
        holders = [p for p in passages if p.start <= block.start < p.end]
        assert len(holders) == 1
    assert passages[-1].end == pdf_document.blocks[-1].end


def test_passages_stay_within_the_target_unless_one_heading_leads_them() -> None:
    document = _markdown(_sections())
    for target in (150, 300, 600):
        for passage in cut_passages(document, target):
            assert len(passage.text) <= target + 40, passage.text  # a heading may lead


def test_a_passage_never_spans_two_sections_and_carries_its_heading_path() -> None:
    document = _markdown(_sections())
    passages = cut_passages(document, 10_000)
    for passage in passages:
        number = passage.heading_path[-1].removeprefix("Part ")
        body = [part for part in passage.text.split("\n\n") if not part.startswith("Part ")]
        assert body
        assert all(f"({number}." in part for part in body)
    paths = [p.heading_path for p in passages]
    assert paths[0] == ("Part 1", "Part 1.1")
    assert len(paths) == len(set(paths)) == 6  # one passage per section at a large target


def test_a_heading_stays_with_the_text_that_follows_it() -> None:
    for target in (150, 300):
        for passage in cut_passages(_markdown(_sections()), target):
            assert not passage.text.split("\n\n")[-1].startswith("Part ")


def test_a_paragraph_longer_than_the_target_is_cut_at_sentence_ends() -> None:
    sentences = [f"Sentence number {n} talks about the harbour at dawn." for n in range(40)]
    document = _markdown(" ".join(sentences) + "\n")
    passages = cut_passages(document, 300)
    assert len(passages) > 5
    for passage in passages:
        assert len(passage.text) <= 300
        assert passage.text.startswith("Sentence number")
        assert passage.text.endswith("dawn.")
    _check_spans(document, passages)


def test_a_sentence_longer_than_the_target_is_cut_at_spaces() -> None:
    document = _markdown("word " * 200 + "\n")
    passages = cut_passages(document, 120)
    assert all(len(p.text) <= 120 for p in passages)
    assert " ".join(p.text for p in passages).split() == ["word"] * 200


def test_pdf_passages_cite_their_pages_and_mostly_one_page(
    pdf_document: ExtractedDocument,
) -> None:
    passages = cut_passages(pdf_document, 500)
    assert passages[0].page == 1
    assert passages[-1].page_end == pdf_document.page_count
    single = [p for p in passages if p.page == p.page_end]
    assert len(single) >= 0.8 * len(passages)


def test_unchanged_passages_of_a_new_version_keep_their_hash() -> None:
    first = _markdown(_sections())
    edited = _sections().replace("(2.1.3)", "(2.1.3) with one more clause")
    second = _markdown("Preface added at the top.\n\n" + edited)
    old = {p.content_hash for p in cut_passages(first, 400)}
    new = cut_passages(second, 400)
    changed = [p for p in new if p.content_hash not in old]
    assert {p.heading_path for p in changed} == {(), ("Part 2", "Part 2.1")}
    assert len(changed) < len(new) / 3


def test_the_hash_covers_the_heading_path_and_the_text_not_spacing() -> None:
    assert content_hash(("A",), "one  two\nthree") == content_hash(("A",), "one two three")
    assert content_hash(("A",), "text") != content_hash(("B",), "text")
    assert content_hash((), "text") != content_hash((), "text!")


def test_the_retrieval_text_names_the_document_and_section() -> None:
    passage = cut_passages(_markdown(_sections()), 10_000)[2]
    assert passage.retrieval_text("Harbour notes").startswith(
        "Harbour notes > Part 2 > Part 2.1\n\n"
    )
    assert passage.retrieval_text(None).startswith("Part 2 > Part 2.1\n\n")


def test_a_target_below_the_minimum_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="at least"):
        cut_passages(_markdown("text\n"), 10)


def test_an_empty_document_has_no_passages() -> None:
    assert cut_passages(_markdown(""), 500) == []
