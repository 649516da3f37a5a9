"""Documents on every store (issue 31): a file becomes passages that every result cites,
the same bytes are stored once, a new version keeps what did not change, a failure leaves
nothing, erasing leaves tombstones, and nothing crosses a space.

Files are real: Markdown and text as written here, PDFs made by fpdf2, read by the product's
reader process (``documents.extract_isolated``)."""

from __future__ import annotations

import base64
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from metacortex.access.model import Level
from metacortex.documents.isolation import shut_down
from metacortex.domain.records import (
    BranchState,
    DocumentRef,
    SupersessionReason,
)
from metacortex.domain.relations import Relation
from metacortex.errors import Conflict, DocumentRefused, Forbidden, InvalidArgument, NotFound
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import Access, MemoryService
from metacortex.storage.base import DocumentWrite, MemoryFilter, MemoryStore
from tests.contract.test_spaces import Team
from tests.documents.craft import pdf_of_pages
from tests.documents.records import document_record, passage_records
from tests.fakes import HashingEmbedder

PDF = "application/pdf"
GARDEN = """# Garden plan

## Tomatoes

Plant the tomatoes in May, once the last frost is over. Stake them early.

## Beans

The runner beans climb the north fence; pick them every other day in August.

## Compost

Turn the compost heap every fortnight and keep it as damp as a wrung sponge.
"""


class CountingEmbedder(HashingEmbedder):
    """The test embedder, counting the texts it embeds for storage."""

    def __init__(self) -> None:
        super().__init__()
        self.embedded: list[str] = []

    def embed_documents(self, texts: Sequence[str]) -> list[Any]:
        self.embedded += list(texts)
        return super().embed_documents(texts)


@pytest.fixture(scope="module", autouse=True)
def _reader_hosts() -> Iterator[None]:
    """The reader processes these tests start end with them."""
    yield
    shut_down()


@pytest.fixture
def embedder() -> CountingEmbedder:
    return CountingEmbedder()


@pytest.fixture
def documents(store: MemoryStore, embedder: CountingEmbedder) -> MemoryService:
    return MemoryService(store, embedder, merger=SentenceUnionMerger())


def _add(service: MemoryService, access: Access, text: str, **kw: Any) -> dict[str, Any]:
    kw.setdefault("media_type", "text/markdown")
    return service.create_document(access, content=text, **kw)


def _passages(store: MemoryStore, document_id: str, space: str = "default") -> list[Any]:
    return store.document_passages(document_id, space=space)


def test_a_markdown_document_becomes_passages_that_search_finds_citing_title_and_section(
    documents: MemoryService, admin: Access
) -> None:
    added = _add(documents, admin, GARDEN, source="notes/garden.md", topic="home")
    document = added["document"]
    assert added["write_status"] == "created"
    assert document["title"] == "Garden plan"
    assert document["source"] == "notes/garden.md"
    assert document["media_type"] == "text/markdown"
    assert document["passage_count"] == added["passages"]["added"] == 3
    assert document["added_by"]["person_id"] == "owner"

    [match] = documents.search(admin, query="when do the tomatoes go in", limit=1)["matches"]
    cited = match["metadata"]["document"]
    assert cited["id"] == document["id"]
    assert cited["title"] == "Garden plan"
    assert cited["section"] == "Garden plan > Tomatoes"
    assert cited["page"] is None
    assert match["metadata"]["provenance"]["origin"] == "document"
    assert match["metadata"]["topic"] == "home"
    fetched = documents.fetch(admin, id=match["id"])["item"]
    assert fetched["metadata"]["document"] == cited
    assert "Plant the tomatoes in May" in fetched["content"]
    listed = documents.list_memories(admin, filter_origin="document")["items"]
    assert {item["metadata"]["document"]["id"] for item in listed} == {document["id"]}


def test_a_pdf_passage_cites_the_page_it_is_printed_on(
    documents: MemoryService, admin: Access
) -> None:
    # A page of about 700 characters each: a passage half full ends at a page break.
    pages = [
        "Invoices are paid within thirty days of their date. " * 14,
        "Refunds need the original receipt and are paid within five working days. " * 10,
        "Support answers by email on weekdays between nine and five. " * 12,
    ]
    pdf = pdf_of_pages(pages, title="Shop terms")
    added = documents.create_document(
        admin, content_base64=base64.b64encode(pdf).decode(), media_type=PDF
    )
    document = added["document"]
    assert document["title"] == "Shop terms"
    assert document["page_count"] == 3
    [match] = documents.search(admin, query="refunds receipt", limit=1)["matches"]
    assert match["metadata"]["document"]["page"] == 2
    assert match["metadata"]["document"]["title"] == "Shop terms"


def test_the_same_bytes_again_return_the_stored_document_and_embed_nothing(
    documents: MemoryService, admin: Access, embedder: CountingEmbedder, store: MemoryStore
) -> None:
    first = _add(documents, admin, GARDEN, source="notes/garden.md")
    embedded = len(embedder.embedded)
    again = _add(documents, admin, GARDEN, source="elsewhere/copy.md")
    assert again["write_status"] == "duplicate"
    assert again["document"]["id"] == first["document"]["id"]
    assert len(embedder.embedded) == embedded
    assert len(_passages(store, first["document"]["id"])) == 3
    assert len(documents.list_documents(admin)["documents"]) == 1


def test_a_changed_version_keeps_unchanged_passages_unembedded_and_retires_the_others(
    documents: MemoryService, admin: Access, embedder: CountingEmbedder, store: MemoryStore
) -> None:
    first = _add(documents, admin, GARDEN, source="notes/garden.md")["document"]
    old = {p.document.content_hash: p for p in _passages(store, first["id"])}
    embedder.embedded.clear()
    changed = GARDEN.replace("north fence", "south fence") + (
        "\n## Peas\n\nSow the peas in March along the wire.\n"
    )
    second = _add(documents, admin, changed, source="notes/garden.md")
    assert second["write_status"] == "replaced"
    assert second["passages"] == {"added": 2, "kept": 2, "retired": 1}
    assert len(embedder.embedded) == 2  # the beans passage as edited, and the peas
    new = second["document"]
    assert new["version"] == 2
    assert new["supersedes"] == first["id"]

    current = _passages(store, new["id"])
    assert len(current) == 4
    kept = [p for p in current if p.document.content_hash in old]
    assert sorted(p.id for p in kept) == sorted(
        old[p.document.content_hash].id for p in kept
    )  # same records, moved to the new version
    [beans] = [p for p in current if "south fence" in p.content]
    [retired] = [p for p in _passages(store, first["id"]) if "north fence" in p.content]
    assert retired.branch_state is BranchState.DEPRECATED
    assert retired.superseded_by == beans.id
    assert retired.supersession_reason is SupersessionReason.CHANGED
    assert retired.valid_until is not None
    assert [p.id for p in _passages(store, first["id"])] == [retired.id]

    before = store.get_document(first["id"])
    assert before is not None
    assert before.superseded_by == new["id"]
    assert [d["id"] for d in documents.list_documents(admin)["documents"]] == [new["id"]]
    hits = documents.search(admin, query="runner beans fence")["matches"]
    assert beans.id in [hit["id"] for hit in hits]
    assert retired.id not in [hit["id"] for hit in hits]


def test_a_new_version_under_another_topic_takes_its_kept_passages_there(
    documents: MemoryService, admin: Access, store: MemoryStore
) -> None:
    _add(documents, admin, GARDEN, source="g.md", topic="home")
    second = _add(
        documents, admin, GARDEN + "\n## Peas\n\nPeas in March.\n", source="g.md", topic="garden"
    )
    assert second["passages"]["kept"] == 3
    assert {p.topic for p in _passages(store, second["document"]["id"])} == {"garden"}
    assert documents.search(admin, query="tomatoes frost", filter_topic="home")["matches"] == []


def test_a_scanned_pdf_is_kept_with_no_text_to_index_and_no_passages(
    documents: MemoryService, admin: Access, store: MemoryStore
) -> None:
    scan = pdf_of_pages([None, None])
    added = documents.create_document(
        admin, content_base64=base64.b64encode(scan).decode(), media_type=PDF, title="Lease"
    )
    document = added["document"]
    assert document["no_text"] == "no text to index; OCR is not offered"
    assert document["passage_count"] == 0
    assert document["pages_without_text"] == [1, 2]
    assert "OCR is not offered" in added["message"]
    assert store.document_bytes(document["id"]) == scan
    assert _passages(store, document["id"]) == []
    assert documents.list_documents(admin)["documents"][0]["id"] == document["id"]


def test_get_document_pages_its_text_so_a_long_document_never_comes_whole(
    documents: MemoryService, admin: Access
) -> None:
    pages = [f"Page {n} holds the clause number {n} of the agreement. " * 20 for n in range(1, 8)]
    pdf = pdf_of_pages(pages, title="Agreement")
    document = documents.create_document(
        admin, content_base64=base64.b64encode(pdf).decode(), media_type=PDF
    )["document"]
    first = documents.get_document(admin, id=document["id"], limit_chars=1000)
    assert len(first["text"]) == 1000
    assert first["offset"] == 0
    assert first["next_offset"] == 1000
    assert first["page"] == 1
    whole = ""
    offset: int | None = 0
    while offset is not None:
        part = documents.get_document(admin, id=document["id"], offset=offset, limit_chars=3000)
        whole += part["text"]
        offset = part["next_offset"]
    assert len(whole) == document["text_chars"]
    fifth = documents.get_document(admin, id=document["id"], page=5, limit_chars=200)
    assert fifth["page"] == 5
    assert fifth["text"].startswith("Page 5 holds")
    assert fifth["pages"] == [{"page": 5, "offset": fifth["offset"]}]
    with pytest.raises(InvalidArgument, match="page must be between 1 and 7"):
        documents.get_document(admin, id=document["id"], page=8)


def test_list_documents_pages_newest_first_with_a_cursor(
    documents: MemoryService, admin: Access
) -> None:
    ids = [
        _add(documents, admin, f"# Note {n}\n\nThe note number {n}.\n")["document"]["id"]
        for n in range(5)
    ]
    first = documents.list_documents(admin, limit=3)
    assert [d["id"] for d in first["documents"]] == ids[::-1][:3]
    rest = documents.list_documents(admin, limit=3, cursor=first["next_cursor"])
    assert [d["id"] for d in rest["documents"]] == ids[::-1][3:]
    assert rest["next_cursor"] is None


def test_fetch_with_neighbours_brings_the_passages_around_one_in_reading_order(
    documents: MemoryService, admin: Access, store: MemoryStore
) -> None:
    sections = "\n".join(f"## Part {n}\n\nThe body of part {n} of the manual.\n" for n in range(6))
    document = _add(documents, admin, "# Manual\n\n" + sections)["document"]
    passages = _passages(store, document["id"])
    middle = passages[3]
    found = documents.fetch(admin, id=middle.id, neighbours=2)
    assert [item["id"] for item in found["neighbours"]["before"]] == [
        passages[1].id,
        passages[2].id,
    ]
    assert [item["id"] for item in found["neighbours"]["after"]] == [
        passages[4].id,
        passages[5].id,
    ]
    assert "neighbours" not in documents.fetch(admin, id=middle.id)


def test_erasing_a_document_erases_every_version_its_passages_and_bytes(
    documents: MemoryService, admin: Access, store: MemoryStore
) -> None:
    first = _add(documents, admin, GARDEN, source="g.md")["document"]
    second = _add(documents, admin, GARDEN + "\n## Peas\n\nPeas in March.\n", source="g.md")
    passages = [p.id for d in (first, second["document"]) for p in _passages(store, d["id"])]
    result = documents.erase_document(admin, id=first["id"], erased_by="owner (test)")
    assert sorted(result["erased_document_ids"]) == sorted([first["id"], second["document"]["id"]])
    assert result["erased_passage_count"] == len(passages) == 4  # three kept, one added
    assert store.get_many(passages) == [None] * len(passages)
    assert set(store.tombstones(passages)) == set(passages)
    for document_id in result["erased_document_ids"]:
        assert store.get_document(document_id) is None
        assert store.document_bytes(document_id) is None
    assert documents.list_documents(admin)["documents"] == []
    assert documents.search(admin, query="tomatoes frost")["matches"] == []
    with pytest.raises(NotFound, match="no document"):
        documents.get_document(admin, id=first["id"])


def test_only_an_access_that_may_erase_erases_a_document(
    documents: MemoryService, admin: Access
) -> None:
    document = _add(documents, admin, GARDEN)["document"]
    agent = Access(admin.readable_states, admin.default_state, may_write_lifecycle=True)
    with pytest.raises(Forbidden):
        documents.erase_document(agent, id=document["id"], erased_by="agent")


def test_documents_and_their_passages_never_cross_a_space(
    store: MemoryStore, embedder: CountingEmbedder
) -> None:
    team = Team(store)
    service = MemoryService(store, embedder, merger=SentenceUnionMerger())
    ann = team.access(team.ann, {"family": Level.WRITE}, "family")
    added = _add(service, ann, GARDEN, source="garden.md")
    document = added["document"]
    assert document["space"] == "family"
    assert added["document"]["added_by"]["name"] == "Ann"
    owner = team.owner()
    assert service.list_documents(owner, space="work")["documents"] == []
    assert service.search(owner, query="tomatoes frost", space="work")["matches"] == []
    with pytest.raises(NotFound):
        service.get_document(owner, id=document["id"], space="work")
    # The same bytes in another space are another document.
    elsewhere = _add(service, owner, GARDEN, source="garden.md", space="work")
    assert elsewhere["write_status"] == "created"
    assert elsewhere["document"]["id"] != document["id"]
    work_passages = _passages(store, elsewhere["document"]["id"], "work")
    assert {p.space for p in work_passages} == {"work"}
    assert _passages(store, document["id"], "work") == []
    # Erasing one space's copy leaves the other's bytes.
    service.erase_document(owner, id=elsewhere["document"]["id"], erased_by="owner", space="work")
    assert store.document_bytes(document["id"], space="family") == GARDEN.encode()


def test_a_reader_may_read_documents_but_not_add_one(
    store: MemoryStore, embedder: CountingEmbedder
) -> None:
    team = Team(store)
    service = MemoryService(store, embedder, merger=SentenceUnionMerger())
    _add(service, team.owner(), GARDEN, space="family")
    ben = team.access(team.ben, {"family": Level.READ}, "family")
    assert len(service.list_documents(ben)["documents"]) == 1
    with pytest.raises(Forbidden, match="may only read"):
        _add(service, ben, "# Mine\n\nMine.\n")


def test_a_failed_write_leaves_no_document_no_memories_and_no_bytes(
    store: MemoryStore, embedder: HashingEmbedder, admin: Access
) -> None:
    """The store is handed a write whose last passage names another document: it fails
    after the passages before it were written (on Firestore: committed in earlier
    batches), and everything must be gone."""
    service = MemoryService(store, embedder, merger=SentenceUnionMerger())
    document = document_record()
    records = passage_records(document, 620)
    stray = records[-1].with_changes(
        document=DocumentRef(id="another-document", title="x", start=0, end=1, content_hash="h")
    )
    vectors = embedder.embed_documents([r.retrieval_text for r in records])
    write = DocumentWrite(
        document=document,
        data=b"bytes of a document that failed",
        text="x" * 10_000,
        passages=[*zip(records[:-1], vectors[:-1], strict=True), (stray, vectors[-1])],
    )
    with pytest.raises(ValueError, match="not a passage of this document"):
        store.add_document(write)
    assert store.get_document(document.id) is None
    assert store.find_document(sha256=document.sha256) is None
    assert store.document_bytes(document.id) is None
    assert store.get_many([r.id for r in records]) == [None] * len(records)
    everything = MemoryFilter(states=tuple(BranchState))
    assert store.list_page(everything, 10, None) == []
    assert service.list_documents(admin)["documents"] == []
    # and the same document can be added afterwards
    ok = DocumentWrite(document=document, data=write.data, text=write.text)
    assert store.add_document(ok).created


def test_a_second_first_version_of_one_source_is_a_conflict(store: MemoryStore) -> None:
    first = document_record(source="same.md", sha="1" * 64)
    store.add_document(DocumentWrite(document=first, data=b"one", text="one"))
    rival = document_record(source="same.md", sha="2" * 64)
    with pytest.raises(Conflict, match="another version"):
        store.add_document(DocumentWrite(document=rival, data=b"two", text="two"))


def test_bad_input_is_refused_with_what_to_do(documents: MemoryService, admin: Access) -> None:
    with pytest.raises(InvalidArgument, match=r"as content \(text\) or content_base64"):
        documents.create_document(admin)
    with pytest.raises(InvalidArgument, match="not valid base64"):
        documents.create_document(admin, content_base64="%%%", media_type=PDF)
    with pytest.raises(InvalidArgument, match="media_type is required"):
        documents.create_document(admin, content_base64="aGVsbG8=")
    with pytest.raises(DocumentRefused, match="not read") as refused:
        documents.create_document(admin, content="x", media_type="image/png")
    assert refused.value.reason == "unsupported_type"
    with pytest.raises(DocumentRefused) as corrupt:
        documents.create_document(
            admin, content_base64=base64.b64encode(b"%PDF-1.4 garbage").decode(), media_type=PDF
        )
    assert corrupt.value.reason == "corrupt"
    assert documents.list_documents(admin)["documents"] == []


# ------------------------------------------------- passages' relations (issue 32 §1)
def _links(store: MemoryStore, ids: Sequence[str]) -> dict[tuple[str, str, str], Relation]:
    """Every relation touching ``ids`` (valid or not), by (source, type, target)."""
    return {
        (r.source, r.type.value, r.target): r
        for r in store.relations_of(list(ids), include_invalid=True)
    }


def _in_order(store: MemoryStore, document_id: str) -> list[str]:
    return [p.id for p in _passages(store, document_id)]


def test_each_passage_is_part_of_its_document_and_next_leads_to_the_one_after_it(
    documents: MemoryService, admin: Access, store: MemoryStore
) -> None:
    document = _add(documents, admin, GARDEN, source="garden.md")["document"]
    tomatoes, beans, compost = _in_order(store, document["id"])
    links = _links(store, [tomatoes, beans, compost])
    assert set(links) == {
        (tomatoes, "part_of", document["id"]),
        (beans, "part_of", document["id"]),
        (compost, "part_of", document["id"]),
        (tomatoes, "next", beans),
        (beans, "next", compost),
    }
    assert all(r.valid for r in links.values())
    part_of = links[(beans, "part_of", document["id"])]
    assert (part_of.target_state, part_of.target_summary) == ("", "Garden plan")
    assert part_of.created_by is not None
    assert part_of.created_by.person == "owner"

    [match] = documents.search(admin, query="runner beans north fence", limit=1)["matches"]
    assert match["id"] == beans
    related = {(r["type"], r["direction"], r["id"]) for r in match["related"]}
    assert related == {
        ("part_of", "outgoing", document["id"]),
        ("next", "outgoing", compost),
        ("next", "incoming", tomatoes),
    }
    [title] = [r["summary"] for r in match["related"] if r["type"] == "part_of"]
    assert title == "Garden plan"


def test_a_new_version_keeps_relations_that_still_hold_and_invalidates_the_others(
    documents: MemoryService, admin: Access, store: MemoryStore
) -> None:
    first = _add(documents, admin, GARDEN, source="g.md")["document"]
    tomatoes, beans, compost = _in_order(store, first["id"])
    before = _links(store, [tomatoes, beans, compost])
    # Beans edited: tomatoes and compost kept, beans retired, a new beans passage.
    changed = GARDEN.replace("north fence", "south fence")
    second = _add(documents, admin, changed, source="g.md")["document"]
    kept_tomatoes, new_beans, kept_compost = _in_order(store, second["id"])
    assert (kept_tomatoes, kept_compost) == (tomatoes, compost)
    links = _links(store, [tomatoes, beans, compost, new_beans])
    valid = {key for key, r in links.items() if r.valid}
    invalid = {key for key, r in links.items() if not r.valid}
    assert valid == {
        (tomatoes, "part_of", second["id"]),
        (new_beans, "part_of", second["id"]),
        (compost, "part_of", second["id"]),
        (tomatoes, "next", new_beans),
        (new_beans, "next", compost),
    }
    assert invalid == set(before)  # the first version's: invalidated, none deleted
    for key in invalid:
        assert links[key].invalid_at is not None
        assert links[key].invalidated_by is not None
    assert links[(beans, "part_of", first["id"])].source_state == "deprecated"

    # A third version adding a section at the end: every relation that still holds stays
    # as it was (same assertion, same time); only the new passage's are added.
    third = _add(documents, admin, changed + "\n## Peas\n\nSow the peas in March.\n", source="g.md")
    peas = _in_order(store, third["document"]["id"])[-1]
    after = _links(store, [tomatoes, new_beans, compost, peas])
    for key in [(tomatoes, "next", new_beans), (new_beans, "next", compost)]:
        assert after[key].valid
        assert after[key].created_at == links[key].created_at
    assert after[(compost, "next", peas)].valid
    assert not after[(compost, "part_of", second["id"])].valid
    assert after[(compost, "part_of", third["document"]["id"])].valid


def test_erasing_a_document_leaves_no_relation_of_its_passages_behind(
    documents: MemoryService, admin: Access, store: MemoryStore
) -> None:
    first = _add(documents, admin, GARDEN, source="g.md")["document"]
    second = _add(documents, admin, GARDEN.replace("May", "June"), source="g.md")["document"]
    passages = [p.id for d in (first, second) for p in _passages(store, d["id"])]
    assert store.relations_of(passages, include_invalid=True)
    documents.erase_document(admin, id=second["id"], erased_by="owner (test)")
    ends = [*passages, first["id"], second["id"]]
    assert store.relations_of(ends, include_invalid=True) == []
