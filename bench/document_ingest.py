"""How fast a document goes in: a 100-page PDF end to end, step by step (issue 31, §4).

    .venv/bin/python bench/document_ingest.py                   # SQLite + the local model
    .venv/bin/python bench/document_ingest.py --pages 100 --repeat 2
    .venv/bin/python bench/document_ingest.py --store firestore # the emulator: RPCs and writes

The document is a report set by fpdf2 in one column (running title, page numbers,
numbered sections of numbered sentences: ``bench/documents_corpus.sentences``), cut to
``--pages`` pages. Printed, each with its time:

- extraction in the reader process (``extract_isolated``): pages per second;
- cutting into passages;
- the model's ceiling on the same texts: ``embed_documents`` of every passage's retrieval
  text alone, in one call (texts per second);
- ``create_document`` end to end on a fresh store (reading, cutting, embedding, writing):
  passages per second, and that rate over the ceiling's;
- the store's own write (``add_document``), from the above;
- on Firestore (``--store firestore``, the real emulator through a counting channel:
  ``tests/rpc_counting.py``): the RPCs of the write by kind, the documents written, and
  both per 500 passages.

``--bytes-mb N`` measures only the original bytes' way in and out: a file of N MiB of
random bytes (no text, no passages) written with ``add_document`` and read back with
``document_bytes``, with the RPCs of each on Firestore (docs/DOCUMENTS.md, "Where the
bytes go").
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from fpdf import FPDF

from bench.documents_corpus import plain, sentences
from metacortex.documents import DocumentLimits, extract_isolated
from metacortex.documents.isolation import shut_down
from metacortex.documents.passages import DEFAULT_TARGET_CHARS, cut_passages
from metacortex.providers.local import MiniLMEmbedder
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import Access, MemoryService, ServiceOptions
from metacortex.storage.base import MemoryStore
from metacortex.storage.sqlite import SQLiteStore

ADMIN = Access.admin()
PDF = "application/pdf"


class _Report(FPDF):
    def header(self) -> None:
        if self.page_no() > 1:
            self.set_font("Helvetica", "I", 8)
            self.cell(0, 6, "Annual Report of the Synthetic Works", align="C")
            self.ln(10)

    def footer(self) -> None:
        self.set_y(-15)
        self.set_font("Helvetica", "", 8)
        self.cell(0, 10, str(self.page_no()), align="C")


def report_pdf(pages: int) -> bytes:
    """A one-column report of exactly ``pages`` pages: sections of four paragraphs."""
    pool = iter(plain(s) for s in sentences(60 * pages))
    pdf = _Report(format="A4")
    pdf.set_auto_page_break(auto=True, margin=20)
    pdf.add_page()
    section = 0
    while True:
        section += 1
        pdf.set_font("Helvetica", "B", 13)
        pdf.multi_cell(0, 8, f"{section}. Results of part {section}", new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("Helvetica", "", 10)
        for _ in range(4):
            text = " ".join(next(pool) for _ in range(4))
            if pdf.page_no() == pages and pdf.get_y() > pdf.h - 60:
                return bytes(pdf.output())
            pdf.multi_cell(0, 5, text, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(2)


def timed(action: Callable[[], Any]) -> tuple[Any, float]:
    started = time.perf_counter()
    result = action()
    return result, time.perf_counter() - started


@contextmanager
def opened(kind: str, folder: Path) -> Iterator[tuple[MemoryStore, Any]]:
    """A fresh store of ``kind``, and the RPC recorder on Firestore (None on SQLite)."""
    if kind == "sqlite":
        store = SQLiteStore(folder / "documents.sqlite3")
        try:
            yield store, None
        finally:
            store.close()
        return
    import os

    from metacortex.storage.firestore import FirestoreStore
    from tests.firestore_support import PROJECT, Emulator, find_emulator
    from tests.rpc_counting import CountingClient, RpcRecorder

    command, why = find_emulator()
    if command is None:
        raise SystemExit(f"the Firestore emulator cannot run here: {why}")
    emulator = Emulator(command)
    emulator.wait_ready()
    os.environ["FIRESTORE_EMULATOR_HOST"] = emulator.host
    recorder = RpcRecorder()
    firestore_store = FirestoreStore(CountingClient(recorder, project=PROJECT), "memory_vectors")
    try:
        yield firestore_store, recorder
    finally:
        firestore_store.close()
        emulator.stop()


def run(pages: int, store_kind: str) -> dict[str, Any]:
    data = report_pdf(pages)
    limits = DocumentLimits()
    extracted, extract_s = timed(lambda: extract_isolated(data, PDF, limits))
    passages, cut_s = timed(lambda: cut_passages(extracted, DEFAULT_TARGET_CHARS))
    embedder = MiniLMEmbedder.load()
    texts = [p.retrieval_text(extracted.title or "report") for p in passages]
    embedder.embed_documents(texts[:8])  # warm the session
    _, ceiling_s = timed(lambda: embedder.embed_documents(texts))
    row: dict[str, Any] = {
        "pages": extracted.page_count,
        "bytes": len(data),
        "extract_s": extract_s,
        "pages_per_s": (extracted.page_count or 0) / extract_s,
        "passages": len(passages),
        "cut_s": cut_s,
        "ceiling_texts_per_s": len(texts) / ceiling_s,
    }
    with (
        tempfile.TemporaryDirectory() as folder,
        opened(store_kind, Path(folder)) as (
            store,
            recorder,
        ),
    ):
        service = MemoryService(
            store, embedder, merger=SentenceUnionMerger(), options=ServiceOptions()
        )
        writes: dict[str, Any] = {}
        original = store.add_document

        def add_timed(write: Any) -> Any:
            if recorder is not None:
                recorder.reset()
            outcome, writes["add_document_s"] = timed(lambda: original(write))
            if recorder is not None:
                writes["tally"] = recorder.tally()
            return outcome

        store.add_document = add_timed  # type: ignore[method-assign]
        added, total_s = timed(
            lambda: service.create_document(ADMIN, data=data, media_type=PDF, source="report.pdf")
        )
    count = added["passages"]["added"]
    row |= {
        "end_to_end_s": total_s,
        "passages_per_s": count / total_s,
        "share_of_ceiling": (count / total_s) / row["ceiling_texts_per_s"],
        "add_document_s": writes["add_document_s"],
    }
    tally = writes.get("tally")
    if tally is not None:
        row |= {
            "rpcs": tally.rpcs,
            "kinds": tally.kinds,
            "writes": tally.writes,
            "commits_per_500_passages": tally.kinds.get("Commit", 0) * 500 / count,
            "writes_per_500_passages": tally.writes * 500 / count,
        }
    return row


def bytes_round_trip(megabytes: int, store_kind: str) -> dict[str, Any]:
    import os as _os

    from metacortex.domain.documents import Document
    from metacortex.domain.records import Attribution, new_memory_id, utc_now
    from metacortex.storage.base import DocumentWrite

    data = _os.urandom(megabytes * 1024 * 1024)
    document = Document(
        id=new_memory_id(),
        title="bytes",
        media_type="application/pdf",
        size=len(data),
        sha256=__import__("hashlib").sha256(data).hexdigest(),
        created_at=utc_now(),
        added_by=Attribution("owner", "bench"),
        topic="general",
    )
    row: dict[str, Any] = {"megabytes": megabytes}
    with (
        tempfile.TemporaryDirectory() as folder,
        opened(store_kind, Path(folder)) as (
            store,
            recorder,
        ),
    ):
        if recorder is not None:
            recorder.reset()
        _, row["write_s"] = timed(
            lambda: store.add_document(DocumentWrite(document=document, data=data, text=""))
        )
        if recorder is not None:
            row["write_rpcs"] = recorder.tally().kinds
            recorder.reset()
        back, row["read_s"] = timed(lambda: store.document_bytes(document.id))
        if recorder is not None:
            row["read_rpcs"] = recorder.tally().kinds
        assert back == data
    return row


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--pages", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--store", choices=["sqlite", "firestore"], default="sqlite")
    parser.add_argument("--bytes-mb", type=int, help="measure only a file of this many MiB")
    args = parser.parse_args()
    if args.bytes_mb:
        for key, value in bytes_round_trip(args.bytes_mb, args.store).items():
            print(f"{key:<12} {value:.3f}" if isinstance(value, float) else f"{key:<12} {value}")
        return 0
    rows = []
    try:
        for _ in range(args.repeat):
            row = run(args.pages, args.store)
            rows.append(row)
            for key, value in row.items():
                shown = f"{value:.3f}" if isinstance(value, float) else value
                print(f"{key:<26} {shown}")
            print(flush=True)
    finally:
        shut_down()
    if len(rows) > 1:
        for key in ("pages_per_s", "ceiling_texts_per_s", "passages_per_s", "end_to_end_s"):
            print(f"median {key:<20} {statistics.median(r[key] for r in rows):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
