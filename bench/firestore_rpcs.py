"""Count the Firestore RPCs of every operation, on the real emulator, as the corpus grows.

Every RPC goes through a gRPC client interceptor (``tests/rpc_counting.py``)
that records its kind, documents returned and bytes; sequential depth counts
RPCs that overlap in time as one level. ``--hold-ms`` holds every response
that long (a delay proxy: the simulated round trip), so that overlap does not
depend on the emulator's speed; it must exceed the time the client takes to
issue its largest fan-out (~40 neighbour queries), hence 200 ms by default.
The client's own work is the CPU time this process used during the operation
(all its threads: building queries, gRPC, decoding, scoring, and for a search
the local MiniLM query embedding, ~5-10 ms, where production calls Gemini),
which a busy machine does not inflate the way it inflates wall time. With the
depth it gives an estimated production p50 at 5 and 15 ms round trips
(``estimate_ms``: depth x RTT + client CPU + ~30 ms of find_nearest server
time on the first level; other server time is taken as within the RTT).

The corpus is LoCoMo's dev split, one memory per turn, saved through the
service: conversation 30 (369 memories), then 41 (1,032), then 26, 42 and 43
(2,760). At each size the operations are measured on conversation 30's topic:

- search with the topic filter and without it (its first ``--questions`` questions);
- save (a new memory, after the embedding: the dedupe pre-check is before);
- consolidate 10 drafts (``source_ids``), deprecate with a superseding id;
- erase one record (``MemoryService.erase``: the read, the transaction, the
  lineage query), three times.

    .venv/bin/python bench/firestore_rpcs.py                 # all three sizes
    .venv/bin/python bench/firestore_rpcs.py --sizes 1 --questions 5 --json out.json

Before/after: run it with ``PYTHONPATH`` pointing at another checkout's
``functions`` directory to measure that code with this script.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.locomo import DATASET, emulator_for, questions_of, turns_of
from metacortex.providers.local import MiniLMEmbedder
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import Access, MemoryService
from metacortex.storage.firestore import FirestoreStore
from tests.rpc_counting import CountingClient, RpcRecorder, Tally

STAGES = (("30",), ("41",), ("26", "42", "43"))
TOPIC = "locomo-30"
PROJECT = "demo-metacortex-rpcs"


# Production latency model (docs/benchmarks.md): every sequential level costs one
# round trip; find_nearest adds its server time on the first level; the client's
# own work (query building, decoding, scoring) is what the run took besides the
# held round trips.
FIND_NEAREST_MS = 30.0


def estimate_ms(depth: float, client_ms: float, rtt_ms: float, nearest: bool) -> float:
    return depth * rtt_ms + client_ms + (FIND_NEAREST_MS if nearest else 0.0)


def _summary(tallies: list[Tally], seconds: list[float], cpu: list[float]) -> dict[str, Any]:
    client = [c * 1000 for c in cpu]
    nearest = any("RunQuery(find_nearest)" in t.kinds for t in tallies)
    depth = statistics.median(t.depth for t in tallies)
    return {
        "client_ms_p50": statistics.median(client),
        "est_p50_ms_5": estimate_ms(depth, statistics.median(client), 5.0, nearest),
        "est_p50_ms_15": estimate_ms(depth, statistics.median(client), 15.0, nearest),
        "runs": len(tallies),
        "rpcs": statistics.mean(t.rpcs for t in tallies),
        "depth_mean": statistics.mean(t.depth for t in tallies),
        "depth_max": max(t.depth for t in tallies),
        "documents": statistics.mean(t.documents for t in tallies),
        "documents_max": max(t.documents for t in tallies),
        "billable_reads": statistics.mean(t.billable_reads for t in tallies),
        "kbytes": statistics.mean(t.bytes for t in tallies) / 1024,
        "wall_ms_p50": statistics.median(seconds) * 1000,
        "kinds_last": tallies[-1].kinds,
    }


def measure(recorder: RpcRecorder, operations: list[Callable[[], Any]]) -> dict[str, Any]:
    tallies: list[Tally] = []
    seconds: list[float] = []
    cpu: list[float] = []
    for operation in operations:
        started, used = time.perf_counter(), time.process_time()
        _, tally = recorder.measure(operation)
        seconds.append(time.perf_counter() - started)
        cpu.append(time.process_time() - used)
        tallies.append(tally)
    return _summary(tallies, seconds, cpu)


def run(stages: int, questions: int, hold_ms: float) -> list[dict[str, Any]]:
    recorder = RpcRecorder()
    client = CountingClient(recorder, project=PROJECT)
    store = FirestoreStore(client, "memory_vectors_rpcs")
    embedder = MiniLMEmbedder.load()
    service = MemoryService(store, embedder, merger=SentenceUnionMerger())
    admin = Access.admin()
    conversation = json.loads((DATASET / "30.json").read_text(encoding="utf-8"))
    asked = [question for question, _ in questions_of(conversation)][:questions]
    saved = 0
    results: list[dict[str, Any]] = []
    for stage in STAGES[:stages]:
        recorder.hold_s = 0.0
        for stem in stage:
            data = json.loads((DATASET / f"{stem}.json").read_text(encoding="utf-8"))
            for turn in turns_of(data):
                service.save(admin, content=turn.content, topic=f"locomo-{stem}")
                saved += 1
        recorder.hold_s = hold_ms / 1000
        row: dict[str, Any] = {"memories": saved, "hold_ms": hold_ms}
        row["search_topic"] = measure(
            recorder,
            [partial(service.search, admin, query=q, filter_topic=TOPIC) for q in asked],
        )
        row["search_all"] = measure(
            recorder, [partial(service.search, admin, query=q) for q in asked]
        )
        # Embedding happens before the store is touched; count only the store's part.
        stamp = f"stage {len(results)}"
        row["save"] = measure(
            recorder,
            [
                partial(
                    service.save, admin, content=f"A new note {i} at {stamp}.", topic="bench-save"
                )
                for i in range(3)
            ],
        )
        recorder.hold_s = 0.0
        drafts = [
            service.save(
                admin, content=f"Draft {i} of {stamp}: {i}.", topic="bench-drafts", draft=True
            )["item"]["id"]
            for i in range(10)
        ]
        recorder.hold_s = hold_ms / 1000
        row["consolidate_10"] = measure(
            recorder,
            [partial(service.consolidate, admin, topic="bench-drafts", source_ids=drafts)],
        )
        recorder.hold_s = 0.0
        pair = [
            service.save(admin, content=f"Fact {k} of {stamp}.", topic="bench-deprecate")["item"][
                "id"
            ]
            for k in ("old", "new")
        ]
        recorder.hold_s = hold_ms / 1000
        row["deprecate"] = measure(
            recorder,
            [partial(service.deprecate, admin, id=pair[0], superseding_id=pair[1])],
        )
        recorder.hold_s = 0.0
        doomed = [
            service.save(admin, content=f"Erase me {i} at {stamp}.", topic="bench-erase")["item"][
                "id"
            ]
            for i in range(3)
        ]
        recorder.hold_s = hold_ms / 1000
        row["erase"] = measure(
            recorder,
            [
                partial(service.erase, admin, ids=[memory_id], erased_by="bench")
                for memory_id in doomed
            ],
        )
        results.append(row)
        print(format_row(row), flush=True)
    store.close()
    return results


OPERATIONS = ("search_topic", "search_all", "save", "consolidate_10", "deprecate", "erase")


def format_row(row: dict[str, Any]) -> str:
    lines = [f"## {row['memories']} memories (hold {row['hold_ms']} ms per RPC)"]
    lines.append(
        "| operation | RPCs | depth (mean / max) | docs (mean / max) | billable reads | KiB | "
        "client ms p50 | est. p50 ms at 5 / 15 ms RTT | kinds (last run) |"
    )
    lines.append("|---|---|---|---|---|---|---|---|---|")
    for name in OPERATIONS:
        s = row[name]
        kinds = ", ".join(f"{k} {v}" for k, v in s["kinds_last"].items())
        lines.append(
            f"| {name} | {s['rpcs']:.1f} | {s['depth_mean']:.1f} / {s['depth_max']} | "
            f"{s['documents']:.0f} / {s['documents_max']} | {s['billable_reads']:.0f} | "
            f"{s['kbytes']:.0f} | {s['client_ms_p50']:.0f} | "
            f"{s['est_p50_ms_5']:.0f} / {s['est_p50_ms_15']:.0f} | {kinds} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--sizes", type=int, default=3, help="how many corpus sizes (1-3)")
    parser.add_argument("--questions", type=int, default=10, help="searches per measurement")
    parser.add_argument(
        "--hold-ms", type=float, default=200.0, help="simulated round trip per RPC (delay proxy)"
    )
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    with emulator_for("firestore"):
        results = run(max(1, min(args.sizes, len(STAGES))), args.questions, args.hold_ms)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
