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
- the same searches as one whole ``search_context`` MCP call each, as a client sees it
  (``tests/mcp_counting.py``: the official SDK's client over loopback HTTP to the real
  app, the admin credential, the ``memory_events`` write the answer queues);
- save (a new memory, after the embedding: the dedupe pre-check is before);
- consolidate 10 drafts (``source_ids``), deprecate with a superseding id;
- erase one record (``MemoryService.erase``: the read, the transaction, the
  lineage query), three times;
- list a page of 10 in the topic (``list_memories``) and fetch one record by id;
- the stored-client directory's refresh (``ClientDirectory.refresh``, its clock
  driven by hand) after a client was paused or resumed (the change marker moved:
  the marker, then the clients, and with spaces the spaces and the people), and
  with nothing changed (the marker only).

Spaces (issue 30), when the code measured has them: the store holds five spaces
(``default`` and four made with ``Registry.add_space``); conversation 30 is also
saved into the space ``team`` (369 memories, at the first size only), and the
searches (topic and no topic) and the save are measured there too; ``list_spaces``
(one count per space) is measured at every size. Code from before spaces
(``--`` in those rows) measures everything in its one collection.

    .venv/bin/python bench/firestore_rpcs.py                 # all three sizes
    .venv/bin/python bench/firestore_rpcs.py --sizes 1 --questions 5 --json out.json
    .venv/bin/python bench/firestore_rpcs.py --dataset ../../shared/datasets/locomo/dev  # worktree
    .venv/bin/python bench/firestore_rpcs.py --sizes 1 --link-turns
        # each turn related to the one before it in its session (relates_to), so the
        # searches' results carry `related` neighbours (issue 32)

Before/after: run it with ``PYTHONPATH`` pointing at another checkout's
``functions`` directory to measure that code with this script (e.g. a ``git
archive`` of ``191bf6e``, the last commit before spaces).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from pydantic import SecretStr

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.locomo import DATASET, emulator_for, questions_of, session_of, turns_of
from metacortex.clients import ClientManager
from metacortex.config import Settings
from metacortex.providers.local import MiniLMEmbedder
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import Access, MemoryService
from metacortex.storage.firestore import FirestoreStore

try:  # where who may do what lives now; older checkouts kept it in server/ and clients/
    from metacortex.access.client_directory import ClientDirectory
    from metacortex.access.profiles import load_profiles
except ImportError:
    from metacortex.clients import ClientDirectory  # type: ignore[attr-defined, no-redef]
    from metacortex.server.profiles import load_profiles  # type: ignore[import-not-found, no-redef]
from tests.rpc_counting import CountingClient, RpcRecorder, Tally

try:  # the whole MCP call (this checkout's tests; an older checkout measures the same way)
    from tests.mcp_counting import served
except ImportError:  # pragma: no cover - run from a checkout without it
    served = None  # type: ignore[assignment]

STAGES = (("30",), ("41",), ("26", "42", "43"))
TOPIC = "locomo-30"
PROJECT = "demo-metacortex-rpcs"
# The spaces made besides ``default`` (with spaces): conversation 30 is saved into the
# first one as well; the others stay empty (list_spaces counts every space).
OTHER_SPACE = "team"
SPACES = (OTHER_SPACE, "family", "project", "archive")


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
        "depth_p50": depth,
        "billable_reads_p50": statistics.median(t.billable_reads for t in tallies),
    }


def measure(
    recorder: RpcRecorder,
    operations: list[Callable[[], Any]],
    setup: Callable[[], Any] | None = None,
) -> dict[str, Any]:
    """The operations' costs, one after another (``setup`` before each, not counted)."""
    tallies: list[Tally] = []
    seconds: list[float] = []
    cpu: list[float] = []
    for operation in operations:
        if setup is not None:
            setup()
        started, used = time.perf_counter(), time.process_time()
        _, tally = recorder.measure(operation)
        seconds.append(time.perf_counter() - started)
        cpu.append(time.process_time() - used)
        tallies.append(tally)
    return _summary(tallies, seconds, cpu)


def measure_calls(
    service: MemoryService, recorder: RpcRecorder, asked: list[str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Each question as one whole ``search_context`` MCP call (with the topic, then
    without): what the client's call cost, the events write included."""
    assert served is not None
    rows = []
    with served(service, recorder) as calls:
        for topic in ({"filter_topic": TOPIC}, {}):
            tallies: list[Tally] = []
            seconds: list[float] = []
            cpu: list[float] = []
            for question in asked:
                started, used = time.perf_counter(), time.process_time()
                _, tally = calls.call("search_context", {"query": question, **topic})
                seconds.append(time.perf_counter() - started)
                cpu.append(time.process_time() - used)
                tallies.append(tally)
            rows.append(_summary(tallies, seconds, cpu))
    return rows[0], rows[1]


def has_spaces() -> bool:
    """Whether the code measured has spaces (issue 30): a checkout from before has not
    (``metacortex.access`` now, ``metacortex.spaces`` in older checkouts)."""
    return any(
        importlib.util.find_spec(name) is not None
        for name in ("metacortex.access", "metacortex.spaces")
    )


def owner_in_spaces(store: FirestoreStore) -> Access:
    """The owner, after making ``SPACES`` as the owner does (``Registry.add_space``)."""
    try:
        from metacortex.access.registry import Registry
    except ImportError:  # an older checkout
        from metacortex.spaces.registry import Registry  # type: ignore[import-not-found, no-redef]

    registry = Registry(store)
    for key in SPACES:
        registry.add_space(key)
    return Access.admin(directory=registry.directory())


class Refreshes:
    """One server process's stored-client directory over the store, its clock driven by
    hand: each refresh is due, after a client was paused or resumed (``changed``) or
    with nothing changed."""

    def __init__(self, store: FirestoreStore) -> None:
        settings = Settings(  # type: ignore[call-arg]
            _env_file=None,
            mcp_admin_token=SecretStr("admin-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6"),
            metacortex_client_refresh_seconds=10.0,
        )
        self._now = 0.0
        self._directory = ClientDirectory(
            load_profiles(settings), settings, clock=lambda: self._now
        )
        self._manager = ClientManager(store, settings)
        self._manager.create("bench-agent")
        self._paused = False
        self._directory.attach(store)

    def change(self) -> None:
        """Pause or resume the client (unmeasured): the change marker moves."""
        if self._paused:
            self._manager.resume("bench-agent")
        else:
            self._manager.pause("bench-agent")
        self._paused = not self._paused

    def refresh(self) -> None:
        self._now += 10.0
        self._directory.refresh()


def run(
    stages: int,
    questions: int,
    hold_ms: float,
    dataset: Path = DATASET,
    link_turns: bool = False,
) -> list[dict[str, Any]]:
    recorder = RpcRecorder()
    client = CountingClient(recorder, project=PROJECT)
    store = FirestoreStore(client, "memory_vectors_rpcs")
    embedder = MiniLMEmbedder.load()
    service = MemoryService(store, embedder, merger=SentenceUnionMerger())
    spaced = has_spaces()
    admin = owner_in_spaces(store) if spaced else Access.admin()
    # Only with spaces does a call name one: code from before has no such argument.
    in_other: dict[str, Any] = {"space": OTHER_SPACE}
    refreshes = Refreshes(store)
    conversation = json.loads((dataset / "30.json").read_text(encoding="utf-8"))
    asked = [question for question, _ in questions_of(conversation)][:questions]
    saved = 0
    results: list[dict[str, Any]] = []
    for number, stage in enumerate(STAGES[:stages]):
        recorder.hold_s = 0.0
        for stem in stage:
            data = json.loads((dataset / f"{stem}.json").read_text(encoding="utf-8"))
            before: dict[str, str] = {}  # per space, the previous turn's id in its session
            session = ""
            for turn in turns_of(data):
                fresh = session_of(turn.dia_id) != session
                session = session_of(turn.dia_id)
                for where in ({}, in_other) if spaced and number == 0 else ({},):
                    key = str(where.get("space", ""))
                    links = (
                        [{"id": before[key], "type": "relates_to", "note": "replies to"}]
                        if link_turns and not fresh
                        else None
                    )
                    extra: dict[str, Any] = {"relations": links} if links else {}
                    topic = TOPIC if where else f"locomo-{stem}"
                    result = service.save(
                        admin, content=turn.content, topic=topic, **where, **extra
                    )
                    before[key] = result["item"]["id"]
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
        if served is not None:
            row["search_mcp_topic"], row["search_mcp_all"] = measure_calls(service, recorder, asked)
        if spaced:
            row["search_topic_other_space"] = measure(
                recorder,
                [
                    partial(service.search, admin, query=q, filter_topic=TOPIC, **in_other)
                    for q in asked
                ],
            )
            row["search_all_other_space"] = measure(
                recorder, [partial(service.search, admin, query=q, **in_other) for q in asked]
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
        if spaced:
            row["save_other_space"] = measure(
                recorder,
                [
                    partial(
                        service.save,
                        admin,
                        content=f"A new note {i} at {stamp}.",
                        topic="bench-save",
                        **in_other,
                    )
                    for i in range(3)
                ],
            )
        row["list"] = measure(
            recorder,
            [partial(service.list_memories, admin, filter_topic=TOPIC, limit=10)] * 3,
        )
        some_id = service.list_memories(admin, filter_topic=TOPIC, limit=1)["items"][0]["id"]
        row["fetch"] = measure(recorder, [partial(service.fetch, admin, id=some_id)] * 3)
        if spaced:
            row["list_spaces"] = measure(recorder, [partial(service.list_spaces, admin)] * 3)
        row["refresh_changed"] = measure(recorder, [refreshes.refresh] * 3, setup=refreshes.change)
        row["refresh_unchanged"] = measure(recorder, [refreshes.refresh] * 3)
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


OPERATIONS = (
    "search_topic",
    "search_all",
    "search_mcp_topic",
    "search_mcp_all",
    "search_topic_other_space",
    "search_all_other_space",
    "save",
    "save_other_space",
    "list",
    "fetch",
    "list_spaces",
    "refresh_changed",
    "refresh_unchanged",
    "consolidate_10",
    "deprecate",
    "erase",
)


def format_row(row: dict[str, Any]) -> str:
    lines = [f"## {row['memories']} memories (hold {row['hold_ms']} ms per RPC)"]
    lines.append(
        "| operation | RPCs | depth (p50 / mean / max) | docs (mean / max) | "
        "billable reads (p50 / mean) | KiB | "
        "client ms p50 | est. p50 ms at 5 / 15 ms RTT | kinds (last run) |"
    )
    lines.append("|---|---|---|---|---|---|---|---|---|")
    for name in OPERATIONS:
        if name not in row:
            lines.append(f"| {name} | -- | | | | | | | code without spaces |")
            continue
        s = row[name]
        kinds = ", ".join(f"{k} {v}" for k, v in s["kinds_last"].items())
        lines.append(
            f"| {name} | {s['rpcs']:.1f} | {s['depth_p50']:g} / {s['depth_mean']:.1f} / "
            f"{s['depth_max']} | {s['documents']:.0f} / {s['documents_max']} | "
            f"{s['billable_reads_p50']:g} / {s['billable_reads']:.0f} | "
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
    parser.add_argument(
        "--dataset", type=Path, default=DATASET, help="LoCoMo's dev split (from a worktree)"
    )
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument(
        "--link-turns",
        action="store_true",
        help="save each turn with a relates_to relation to the one before it in its session",
    )
    args = parser.parse_args()
    with emulator_for("firestore"):
        results = run(
            max(1, min(args.sizes, len(STAGES))),
            args.questions,
            args.hold_ms,
            args.dataset,
            args.link_turns,
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
