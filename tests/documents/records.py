"""Document versions and passage records built directly, for tests of the stores'
``add_document`` (the use case builds them the same way: ``usecases/document_passages``)."""

from __future__ import annotations

from collections.abc import Callable

from metacortex.documents.passages import Passage
from metacortex.domain.documents import Document
from metacortex.domain.records import Attribution, Memory, new_memory_id, utc_now
from metacortex.usecases.document_passages import passage_record


def document_record(*, sha: str = "a" * 64, source: str | None = None) -> Document:
    return Document(
        id=new_memory_id(),
        title="Test document",
        media_type="text/plain",
        size=10,
        sha256=sha,
        created_at=utc_now(),
        added_by=Attribution("owner", "test"),
        topic="general",
        source=source,
    )


def _sentence(number: int) -> str:
    return f"Passage {number} of the test document, about rivers and bridges."


def passage_records(
    document: Document, count: int, text: Callable[[int], str] = _sentence
) -> list[Memory]:
    """``count`` passages of ``document``, in order, each ``text(number)``."""
    now = utc_now()
    made = []
    for number in range(count):
        body = text(number)
        start = number * 100
        passage = Passage(number, body, ("Part",), start, start + len(body), None, None, "0" * 64)
        made.append(passage_record(document, passage, now))
    return made
