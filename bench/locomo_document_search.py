"""LoCoMo conversations ingested as documents: hit@5 and MRR per format and passage size
(issue 31, section 4), through the product's own create_document and search.

    .venv/bin/python bench/locomo_document_search.py      # turns; 400 700 1000 1500 per format
    .venv/bin/python bench/locomo_document_search.py --target 700 --format pdf
    .venv/bin/python bench/locomo_document_search.py --dataset ../../shared/datasets/locomo/dev

Protocol (``../shared/datasets/locomo/README.md``; ``bench/locomo.py`` is the per-turn
baseline): each conversation of the development split is one document
(``bench/locomo_documents.py``: Markdown, or a two-column PDF with running title and page
numbers), added with ``MemoryService.create_document`` (the reader process, passages of
the target size, the local MiniLM model) with the conversation as its topic, one fresh
SQLite store per format and size. Every category 1-4 question with evidence is a
``MemoryService.search`` restricted to its conversation's topic, ``limit=10``; a question
is answered at k when a top-k passage overlaps one of its evidence turns (the turns'
spans are found in the extracted text: ``turn_spans``, ``turns_in_passage``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.locomo import ingest
from bench.locomo_documents import DATASET, load, questions, render, turn_spans, turns_in_passage
from metacortex.documents import DocumentLimits, extract
from metacortex.documents.isolation import shut_down
from metacortex.documents.passages import cut_passages
from metacortex.operations.evaluation import Case, run_cases
from metacortex.providers.local import MiniLMEmbedder
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import Access, MemoryService, ServiceOptions
from metacortex.storage.sqlite import SQLiteStore

ADMIN = Access.admin()
# What a model reads of the results: passages in rank order while their text fits this
# many characters (at least the first). Comparable across passage sizes, and with the
# per-turn memories of bench/locomo.py (about 13 turns).
BUDGET_CHARS = 2000


def read_within(
    service: MemoryService, store: SQLiteStore, cases: list[Case], budget: int
) -> float:
    """The share of cases answered by the results a model reads within ``budget``
    characters (whole results, in rank order, at least one)."""
    answered = 0
    for case in cases:
        found = service.search(ADMIN, query=case.query, filter_topic=case.topic, limit=20)
        read = 0
        for rank, match in enumerate(found["matches"]):
            memory = store.get(match["id"])
            size = len(memory.content) if memory is not None else 0
            if rank > 0 and read + size > budget:
                break
            read += size
            if match["id"] in case.expected_ids:
                answered += 1
                break
    return answered / max(len(cases), 1)


def measure_turns(files: list[Path], embedder: MiniLMEmbedder) -> dict[str, Any]:
    """The per-turn baseline (bench/locomo.py's protocol): every turn saved as a memory."""
    with tempfile.TemporaryDirectory() as folder:
        store = SQLiteStore(Path(folder) / "turns.sqlite3")
        service = MemoryService(store, embedder, merger=SentenceUnionMerger())
        started = time.perf_counter()
        cases, _, saved = ingest(service, files, {})
        ingest_s = time.perf_counter() - started
        report = run_cases(service, cases, limit=10)
        within = read_within(service, store, cases, BUDGET_CHARS)
        store.close()
    return {
        "format": "turns",
        "target": 0,
        "passages": saved,
        "questions": len(cases),
        "answerable": len(cases),
        "hit@1": report.hit[1],
        "hit@5": report.hit[5],
        "hit@10": report.hit[10],
        "mrr": report.mrr,
        f"hit@{BUDGET_CHARS}chars": within,
        "search_p50_ms": report.latency_ms_p50,
        "ingest_s": ingest_s,
        "passages_per_s": saved / ingest_s if ingest_s else 0.0,
    }


def measure(
    files: list[Path],
    kind: str,
    target: int,
    embedder: MiniLMEmbedder,
    options: ServiceOptions | None = None,
) -> dict[str, Any]:
    """One fresh store: every conversation added as a document of ``kind``, then searched
    (``options``' ranking, passages of ``target`` characters)."""
    with tempfile.TemporaryDirectory() as folder:
        store = SQLiteStore(Path(folder) / "documents.sqlite3")
        options = replace(options or ServiceOptions(), passage_chars=target)
        service = MemoryService(store, embedder, merger=SentenceUnionMerger(), options=options)
        cases: list[Case] = []
        passages = 0
        ingest_s = 0.0
        unfound = 0
        for path in files:
            conversation = load(path)
            data, media_type = render(conversation, kind)
            topic = f"locomo-{path.stem}"
            started = time.perf_counter()
            added = service.create_document(
                ADMIN, data=data, media_type=media_type, topic=topic, source=f"{path.stem}.{kind}"
            )
            ingest_s += time.perf_counter() - started
            document_id = added["document"]["id"]
            # The stored passages are cut_passages of the same extraction, in order.
            extracted = extract(data, media_type, DocumentLimits())
            spans = turn_spans(extracted, conversation.turns)
            unfound += len(conversation.turns) - len(spans)
            cut = cut_passages(extracted, target)
            stored = store.document_passages(document_id)
            assert [(m.document.start if m.document else -1) for m in stored] == [
                p.start for p in cut
            ], "stored passages differ from the cut"
            passages += len(stored)
            holding: dict[str, list[str]] = {}
            for record, passage in zip(stored, cut, strict=True):
                for dia_id in turns_in_passage(passage, spans):
                    holding.setdefault(dia_id, []).append(record.id)
            for question, evidence in questions(path):
                expected = tuple(dict.fromkeys(i for d in evidence for i in holding.get(d, ())))
                cases.append(Case(question, expected, topic, question))
        answerable = [case for case in cases if case.expected_ids]
        report = run_cases(service, answerable, limit=10)
        within = read_within(service, store, answerable, BUDGET_CHARS)
        store.close()
    return {
        "format": kind,
        "target": target,
        "passages": passages,
        "questions": len(cases),
        "answerable": len(answerable),
        "turns_not_found": unfound,
        "hit@1": report.hit[1],
        "hit@5": report.hit[5],
        "hit@10": report.hit[10],
        # Unanswerable questions (evidence turns found in no passage) count as misses.
        "hit@5_all": report.hit[5] * len(answerable) / max(len(cases), 1),
        "mrr": report.mrr,
        f"hit@{BUDGET_CHARS}chars": within,
        "search_p50_ms": report.latency_ms_p50,
        "ingest_s": ingest_s,
        "passages_per_s": passages / ingest_s if ingest_s else 0.0,
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--dataset", type=Path, default=DATASET)
    parser.add_argument("--target", type=int, action="append", help="passage size(s)")
    parser.add_argument(
        "--format",
        choices=["turns", "markdown", "pdf"],
        action="append",
        help="default: all three (turns: one memory per turn, the per-turn baseline)",
    )
    parser.add_argument(
        "--no-time-reading",
        action="store_true",
        help="read no time from passages or questions (METACORTEX_TIME_READING=false)",
    )
    parser.add_argument("--json", type=Path, help="also write the rows to this file")
    args = parser.parse_args()
    options = ServiceOptions(read_times=not args.no_time_reading)
    files = sorted(args.dataset.glob("*.json"))
    if not files:
        print(f"no LoCoMo files in {args.dataset}; pass --dataset", file=sys.stderr)
        return 2
    embedder = MiniLMEmbedder.load()
    rows = []
    print(
        "| format | target chars | passages | questions (answerable) | hit@1 | hit@5 | hit@10"
        f" | MRR | hit within {BUDGET_CHARS:,} chars read | search p50 | ingest |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    try:
        for kind in args.format or ["turns", "markdown", "pdf"]:
            for target in [0] if kind == "turns" else args.target or [400, 700, 1000, 1500]:
                row = (
                    measure_turns(files, embedder)
                    if kind == "turns"
                    else measure(files, kind, target, embedder, options)
                )
                rows.append(row)
                print(
                    f"| {kind} | {target} | {row['passages']} | {row['questions']}"
                    f" ({row['answerable']}) | {row['hit@1']:.3f} | {row['hit@5']:.3f}"
                    f" | {row['hit@10']:.3f} | {row['mrr']:.3f}"
                    f" | {row[f'hit@{BUDGET_CHARS}chars']:.3f} | {row['search_p50_ms']:.1f} ms"
                    f" | {row['passages_per_s']:.0f} passages/s |",
                    flush=True,
                )
    finally:
        shut_down()
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    print(f"median search p50: {statistics.median(r['search_p50_ms'] for r in rows):.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
