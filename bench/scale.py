"""Search, start-up and memory as the corpus grows (issue 23), through the real server.

    .venv/bin/python bench/scale.py                          # 10,000 / 30,000 / 100,000
    .venv/bin/python bench/scale.py --sizes 10000,30000 --reuse
    .venv/bin/python bench/scale.py --reuse --json out.json  # corpora built once, kept
    .venv/bin/python bench/scale.py --reuse --model-memories 10000  # the rest hashed
    .venv/bin/python bench/scale.py --reuse --spaces 5      # the corpus over five spaces

For each size a corpus is built, then measured:

- corpus: every turn of the LoCoMo development split (../shared/datasets/locomo/dev,
  speaker, session date and text, as ``bench/locomo.py`` saves them), then generated
  turns up to the size (the first half of one turn, the second half of another, a
  fixed seed), spread over 50 topics. Record ``i`` is the same at every size, so a
  larger corpus starts as a copy of the largest smaller one already built and only
  the rest is restored.
- spaces (``--spaces N``, issue 30): the 50 topics are dealt over N spaces
  (``space-0`` ... ``space-<N-1>``, made with ``access.registry.Registry`` before any
  memory is written), topic ``t`` in space ``t % N``, so every space holds an equal
  share and a topic lives in one space. With 1 (the default) everything is in the
  space ``default``, as before spaces. Corpora of N spaces are kept apart, under
  ``<work-dir>/spaces-N/``.
- restore: the corpus is written as a portable backup and restored with
  ``metacortex restore`` (the normal restore path: re-embeds every memory with the
  local model); the rate is memories restored per second of that command. With
  ``--model-memories N`` only the first N go through restore and the rest are
  written through the store's transaction with hashed bag-of-words vectors (same
  dimension, same write path, the same cost to search): on a busy shared machine
  the model embeds at tens per second and 100,000 would take hours.
- start to first answer: ``metacortex serve`` is started on the corpus's data
  directory (a subprocess, loopback HTTP, admin token); the time from the spawn to
  the first successful ``search_context`` answer over MCP (official SDK client), and
  the server's CPU time by then (user + system, all threads): on shared cores the
  wall time waits for the neighbours, the CPU time hardly.
- search: LoCoMo questions through ``search_context`` (default limit), one at a
  time, ``--searches`` restricted to a random topic and as many over a whole space
  (no topic), after ``--warmup`` unmeasured searches; p50 / p95 of each. With
  several spaces every search names its space (``space`` argument): the topic's, or
  a random one; with one, no search names one (the default space: every topic).
- server CPU per search: the server process's user + system time (/proc/<pid>/stat,
  all threads) across each search, averaged: on shared cores the wall-clock
  latencies above move with the other work, this much less. Also per search, from
  the scheduler's own nanosecond counters of the server's threads
  (/proc/<pid>/task/*/schedstat): the CPU time's p95, and the time its threads
  spent runnable but waiting for a core (mean, summed over threads, so it can pass
  the wall time when several wait at once): what the neighbours cost the search.
- RSS: the server's VmRSS (/proc/<pid>/status) after the warm-up and measured
  searches (at least 100).

With ``--reuse`` the corpora are kept under ``--work-dir`` (default
~/.cache/metacortex-bench/scale/<size>/) and reused when complete. The cores are
shared: the load average is printed (and kept in ``--json``) before and after each
size.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import random
import re
import secrets
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt
from mcp import Client

from metacortex.access.model import DEFAULT_SPACE
from metacortex.access.registry import Registry
from metacortex.domain.records import BranchState, Memory, Modality
from metacortex.providers.local import DIMENSION, MODEL_NAME
from metacortex.storage.base import EmbeddingIdentity, StoreTransaction
from metacortex.storage.sqlite import SQLiteStore

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.load import connect, load_client_modules
from bench.load import server_environment as load_environment
from bench.locomo import DATASET, questions_of, turns_of
from tests.processes import WatchedProcess

METACORTEX: Final = Path(sys.executable).parent / "metacortex"
TOPICS: Final = 50
SEED: Final = 23
DEFAULT_SIZES: Final = (10_000, 30_000, 100_000)
DEFAULT_WORK_DIR: Final = Path.home() / ".cache" / "metacortex-bench" / "scale"
DATABASE: Final = "metacortex.sqlite3"
COMPLETE: Final = "complete.json"
_START: Final = datetime(2023, 1, 1, tzinfo=UTC)
_READY: Final = re.compile(r"is ready at (http://\S+)")


def topic_name(index: int) -> str:
    return f"scale-topic-{index % TOPICS:02d}"


def space_name(index: int, spaces: int) -> str:
    """The space of record (or topic) ``index`` in a corpus over ``spaces`` spaces."""
    return DEFAULT_SPACE if spaces <= 1 else f"space-{index % TOPICS % spaces}"


def corpus_dir(work_dir: Path, spaces: int) -> Path:
    """Where the corpora of ``spaces`` spaces are kept, one folder per size."""
    return work_dir if spaces <= 1 else work_dir / f"spaces-{spaces}"


def corpus_texts(dataset: Path, size: int) -> list[str]:
    """The first ``size`` memory texts: LoCoMo turns, then generated ones."""
    turns = [
        turn.content
        for path in sorted(dataset.glob("*.json"))
        for turn in turns_of(json.loads(path.read_text(encoding="utf-8")))
    ]
    texts = turns[:size]
    rng = random.Random(SEED)
    while len(texts) < size:
        first, second = rng.choice(turns), rng.choice(turns)
        head = first.split(" ")
        tail = second.split(": ", 1)[-1].split(" ")
        texts.append(" ".join(head[: max(3, len(head) // 2)] + tail[len(tail) // 2 :]))
    return texts


def corpus_memory(index: int, text: str, spaces: int) -> Memory:
    at = _START + timedelta(minutes=7 * index)
    return Memory(
        id=f"scale-{index:07d}",
        content=text,
        retrieval_text=text,
        topic=topic_name(index),
        space=space_name(index, spaces),
        branch_state=BranchState.ACTIVE,
        modality=Modality.TEXT,
        created_at=at,
        updated_at=at,
    )


def write_backup(folder: Path, texts: list[str], spaces: int) -> None:
    """A ``metacortex-portable`` v1 folder, as ``metacortex backup`` writes it."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for index, text in enumerate(texts):
        memory = corpus_memory(index, text, spaces)
        record = {
            "id": memory.id,
            "content": memory.content,
            "retrieval_text": memory.retrieval_text,
            "metadata": memory.metadata(),
        }
        lines.append(json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":")))
    data = ("\n".join(lines) + "\n").encode("utf-8")
    (folder / "memories.ndjson").write_bytes(data)
    manifest = {
        "format": "metacortex-portable",
        "format_version": 1,
        "archive": "memories.ndjson",
        "count": len(texts),
        "sha256": hashlib.sha256(data).hexdigest(),
        "source_embedding": "bench",
        "vectors": False,
    }
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")


def server_environment(data_dir: Path, token: str = "") -> dict[str, str]:
    return load_environment(data_dir, token or secrets.token_urlsafe(32))


def memory_count(data_dir: Path) -> int:
    database = data_dir / DATABASE
    if not database.exists():
        return 0
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0])


@dataclass
class Built:
    restored: int  # through `metacortex restore` (the local model) in this build
    seconds: float
    filled: int  # written with hashed vectors (``--model-memories``)
    reused: bool

    @property
    def rate(self) -> float:
        return self.restored / self.seconds if self.seconds else 0.0


def hashed_vector(text: str) -> npt.NDArray[np.float32]:
    """A unit vector from the text's words hashed into the model's dimensions: the same
    shape and cost in search as the model's, for filling a corpus without the model."""
    vector = np.zeros(DIMENSION, dtype=np.float32)
    for word in text.lower().split():
        digest = hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest()
        value = int.from_bytes(digest, "little")
        vector[value % DIMENSION] += 1.0 if value >> 63 else -1.0
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm else vector


def make_spaces(data_dir: Path, spaces: int) -> None:
    """The corpus's spaces, made as the owner makes them (``Registry.add_space``); those
    already there are kept (a resumed build)."""
    if spaces <= 1:
        return
    store = SQLiteStore(data_dir / DATABASE)
    try:
        registry = Registry(store)
        known = set(registry.directory().spaces)
        for index in range(spaces):
            key = space_name(index, spaces)
            if key not in known:
                registry.add_space(key, f"Scale space {index}")
    finally:
        store.close()


def fill(data_dir: Path, texts: list[str], spaces: int) -> int:
    """Write the corpus's records missing from the store with hashed vectors, through
    the store's own transaction (what restore calls, minus the model), one
    transaction per space and thousand records."""
    store = SQLiteStore(data_dir / DATABASE)
    try:
        store.bind_embedding(EmbeddingIdentity(MODEL_NAME, DIMENSION))
        present = memory_count(data_dir)
        written = 0
        for start in range(present, len(texts), 1000):
            by_space: dict[str, list[Memory]] = {}
            for i in range(start, min(start + 1000, len(texts))):
                memory = corpus_memory(i, texts[i], spaces)
                by_space.setdefault(memory.space, []).append(memory)

            for space, batch in by_space.items():

                def write(txn: StoreTransaction, batch: list[Memory] = batch) -> int:
                    for memory in batch:
                        txn.put(memory, hashed_vector(memory.retrieval_text))
                    return len(batch)

                written += store.transaction(write, space=space)
        return written
    finally:
        store.close()


def build(
    work_dir: Path, size: int, dataset: Path, reuse: bool, model_memories: int, spaces: int
) -> Built:
    """The corpus of ``size`` memories over ``spaces`` spaces in
    ``corpus_dir(work_dir, spaces)/<size>/data``: the first ``model_memories`` restored
    with ``metacortex restore``, the rest filled with hashed vectors. With ``reuse`` a
    complete corpus is kept and an incomplete one resumed."""
    work_dir = corpus_dir(work_dir, spaces)
    folder = work_dir / str(size)
    data_dir = folder / "data"
    marker = folder / COMPLETE
    if reuse and marker.exists() and memory_count(data_dir) == size:
        noted = json.loads(marker.read_text())
        return Built(noted["restored"], noted["seconds"], noted["filled"], reused=True)
    if not reuse:
        shutil.rmtree(folder, ignore_errors=True)
    data_dir.mkdir(parents=True, exist_ok=True)
    if memory_count(data_dir) == 0:
        # Start from the largest complete smaller corpus: its records are this one's first.
        smaller = sorted(
            (int(p.name) for p in work_dir.iterdir() if p.name.isdigit() and int(p.name) < size),
            reverse=True,
        )
        for other in smaller:
            source = work_dir / str(other)
            if (source / COMPLETE).exists():
                with (
                    sqlite3.connect(source / "data" / DATABASE) as src,
                    sqlite3.connect(data_dir / DATABASE) as dst,
                ):
                    src.backup(dst)
                break
    make_spaces(data_dir, spaces)
    texts = corpus_texts(dataset, size)
    by_model = min(size, model_memories)
    before = memory_count(data_dir)
    restored, seconds = 0, 0.0
    if before < by_model:
        write_backup(folder / "backup", texts[:by_model], spaces)
        print(f"restoring {by_model - before} memories into {data_dir}", flush=True)
        started = time.perf_counter()
        subprocess.run(  # noqa: S603 - our own command
            [str(METACORTEX), "restore", str(folder / "backup"), "--data-dir", str(data_dir)],
            env=server_environment(data_dir),
            check=True,
            cwd=folder,
        )
        seconds = time.perf_counter() - started
        restored = memory_count(data_dir) - before
        shutil.rmtree(folder / "backup")
    filled = fill(data_dir, texts, spaces) if size > by_model else 0
    marker.write_text(json.dumps({"restored": restored, "seconds": seconds, "filled": filled}))
    return Built(restored, seconds, filled, reused=False)


def vm_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def questions(dataset: Path) -> list[str]:
    return [
        question
        for path in sorted(dataset.glob("*.json"))
        for question, _ in questions_of(json.loads(path.read_text(encoding="utf-8")))
    ]


async def search(client: Client, query: str, topic: str | None, space: str | None) -> float:
    arguments: dict[str, Any] = {"query": query}
    if topic is not None:
        arguments["filter_topic"] = topic
    if space is not None:
        arguments["space"] = space
    started = time.perf_counter()
    result = await client.call_tool("search_context", arguments)
    elapsed = time.perf_counter() - started
    if result.is_error or result.structured_content is None:
        raise RuntimeError(f"search_context failed: {result.content}")
    return elapsed


@dataclass
class Measured:
    size: int
    spaces: int
    load_average: float  # 1-minute load average before the size's run
    load_average_after: float  # and after it: the cores are shared
    start_to_first_answer_s: float
    start_cpu_s: float  # the server's CPU time from its spawn to the first answer
    rss_mb: float
    topic_p50_ms: float
    topic_p95_ms: float
    all_p50_ms: float  # a whole space: every topic of the store when it has one space
    all_p95_ms: float
    topic_cpu_ms: float  # server CPU per search (mean): less sensitive to shared cores
    all_cpu_ms: float
    topic_cpu_p95_ms: float  # the same per search (scheduler counters), p95
    all_cpu_p95_ms: float
    topic_wait_ms: float  # server threads runnable but without a core, per search (mean)
    all_wait_ms: float
    restore_per_s: float
    restored: int
    filled: int


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))] * 1000


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def scheduled(pid: int) -> dict[str, tuple[int, int]]:
    """Per live thread of the process: nanoseconds run on a core and waited runnable for
    one so far (the scheduler's counters)."""
    found = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            fields = (task / "schedstat").read_text().split()
        except FileNotFoundError:  # the thread ended
            continue
        found[task.name] = (int(fields[0]), int(fields[1]))
    return found


def scheduled_between(
    before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]
) -> tuple[float, float]:
    """Seconds run and waited between two readings, by the threads alive at the second (a
    thread ended meanwhile is lost; the server's pools keep theirs)."""
    ran = waited = 0
    for tid, (run_ns, wait_ns) in after.items():
        run_before, wait_before = before.get(tid, (0, 0))
        ran += run_ns - run_before
        waited += wait_ns - wait_before
    return ran / 1e9, waited / 1e9


@dataclass
class Kind:
    """One kind of search's figures in a run: wall, server CPU and run-queue wait."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    wait: list[float] = field(default_factory=list)


async def timed(
    client: Client, pid: int, kind: Kind, query: str, topic: str | None, space: str | None
) -> None:
    before = scheduled(pid)
    kind.wall.append(await search(client, query, topic, space))
    ran, waited = scheduled_between(before, scheduled(pid))
    kind.cpu.append(ran)
    kind.wait.append(waited)


@dataclass
class ServerRun:
    first_answer: float
    start_cpu: float
    rss_mb: float
    in_topic: Kind
    everywhere: Kind
    in_topic_cpu: float  # server CPU seconds over the in-topic searches
    everywhere_cpu: float


@dataclass
class Searches:
    """The searches a run makes, drawn from one seeded sequence: a random question in a
    random topic (and that topic's space), or in a random space (no topic). With one
    space no search names it, as before spaces (the same sequence as then)."""

    queries: list[str]
    spaces: int
    rng: random.Random

    def in_topic(self) -> tuple[str, str, str | None]:
        query, topic = self.rng.choice(self.queries), self.rng.randrange(TOPICS)
        return query, topic_name(topic), self._space(topic)

    def in_space(self) -> tuple[str, None, str | None]:
        query = self.rng.choice(self.queries)
        return query, None, self._space(self.rng.randrange(self.spaces) if self.spaces > 1 else 0)

    def _space(self, index: int) -> str | None:
        return space_name(index, self.spaces) if self.spaces > 1 else None


async def measure_server(
    data_dir: Path, queries: list[str], searches: int, warmup: int, spaces: int
) -> ServerRun:
    token = secrets.token_urlsafe(32)
    load_client_modules()
    started = time.perf_counter()
    server = WatchedProcess(
        [str(METACORTEX), "serve", "--port", "0"],
        "is ready at http://",
        env=server_environment(data_dir, token),
        cwd=data_dir.parent,
    )
    try:
        server.wait_ready(180, "metacortex serve")
        url = next(m[1] for line in server.log if (m := _READY.search(line))) + "/mcp"
        picks = Searches(queries, spaces, random.Random(SEED))
        async with connect(url, token) as client:
            await search(client, *picks.in_space())
            first_answer = time.perf_counter() - started
            start_cpu = cpu_seconds(server.pid)
            for _ in range(warmup):
                await search(client, *picks.in_topic())
            run = ServerRun(first_answer, start_cpu, 0.0, Kind(), Kind(), 0.0, 0.0)
            for _ in range(searches):  # interleaved, so both see the same machine
                before = cpu_seconds(server.pid)
                await timed(client, server.pid, run.in_topic, *picks.in_topic())
                between = cpu_seconds(server.pid)
                await timed(client, server.pid, run.everywhere, *picks.in_space())
                run.in_topic_cpu += between - before
                run.everywhere_cpu += cpu_seconds(server.pid) - between
        run.rss_mb = vm_rss_mb(server.pid)
    finally:
        server.stop()
    return run


def run_size(args: argparse.Namespace, size: int, queries: list[str]) -> Measured:
    load = os.getloadavg()[0]
    print(
        f"--- {size:,} memories in {args.spaces} space(s); load average {os.getloadavg()}",
        flush=True,
    )
    built = build(args.work_dir, size, args.dataset, args.reuse, args.model_memories, args.spaces)
    data_dir = corpus_dir(args.work_dir, args.spaces) / str(size) / "data"
    run = asyncio.run(measure_server(data_dir, queries, args.searches, args.warmup, args.spaces))
    in_topic, everywhere = run.in_topic.wall, run.everywhere.wall
    after = os.getloadavg()
    print(f"    load average after {after}", flush=True)
    return Measured(
        size=size,
        spaces=args.spaces,
        load_average=load,
        load_average_after=after[0],
        start_to_first_answer_s=run.first_answer,
        start_cpu_s=run.start_cpu,
        rss_mb=run.rss_mb,
        topic_cpu_ms=run.in_topic_cpu / len(in_topic) * 1000,
        all_cpu_ms=run.everywhere_cpu / len(everywhere) * 1000,
        topic_cpu_p95_ms=percentile(run.in_topic.cpu, 0.95),
        all_cpu_p95_ms=percentile(run.everywhere.cpu, 0.95),
        topic_wait_ms=statistics.mean(run.in_topic.wait) * 1000,
        all_wait_ms=statistics.mean(run.everywhere.wait) * 1000,
        topic_p50_ms=statistics.median(in_topic) * 1000,
        topic_p95_ms=percentile(in_topic, 0.95),
        all_p50_ms=statistics.median(everywhere) * 1000,
        all_p95_ms=percentile(everywhere, 0.95),
        restore_per_s=built.rate,
        restored=built.restored,
        filled=built.filled,
    )


def print_table(rows: list[Measured]) -> None:
    print(
        "| corpus | spaces | start to first answer (server CPU) | RSS "
        "| search in a topic p50 / p95 | search in a space (every topic) p50 / p95 "
        "| server CPU per search, topic / space "
        "(mean, p95) | server threads waiting for a core per search, topic / space "
        "| restore | load avg before / after |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row.size:,} | {row.spaces} | {row.start_to_first_answer_s:.2f} s "
            f"({row.start_cpu_s:.2f} s) "
            f"| {row.rss_mb:.0f} MB "
            f"| {row.topic_p50_ms:.0f} / {row.topic_p95_ms:.0f} ms "
            f"| {row.all_p50_ms:.0f} / {row.all_p95_ms:.0f} ms "
            f"| {row.topic_cpu_ms:.0f} / {row.all_cpu_ms:.0f} ms, "
            f"p95 {row.topic_cpu_p95_ms:.0f} / {row.all_cpu_p95_ms:.0f} ms "
            f"| {row.topic_wait_ms:.1f} / {row.all_wait_ms:.1f} ms "
            f"| {row.restore_per_s:.0f} /s ({row.restored:,} restored, {row.filled:,} filled) "
            f"| {row.load_average:.2f} / {row.load_average_after:.2f} |"
        )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument(
        "--sizes",
        default=",".join(str(s) for s in DEFAULT_SIZES),
        help="comma list of corpus sizes (default 10000,30000,100000)",
    )
    parser.add_argument("--work-dir", type=Path, default=DEFAULT_WORK_DIR)
    parser.add_argument(
        "--reuse", action="store_true", help="reuse complete corpora kept in --work-dir"
    )
    parser.add_argument("--dataset", type=Path, default=DATASET)
    parser.add_argument("--searches", type=int, default=100, help="measured searches of each kind")
    parser.add_argument("--warmup", type=int, default=20, help="unmeasured searches first")
    parser.add_argument(
        "--model-memories",
        type=int,
        default=sys.maxsize,
        help="restore only the first N memories through the model; fill the rest with "
        "hashed vectors (search cost is the same; the model is slow on a busy machine)",
    )
    parser.add_argument(
        "--spaces",
        type=int,
        default=1,
        help="spread the corpus over N spaces (its topics dealt over them) and search "
        "inside one space; 1 (default): everything in the space 'default'",
    )
    parser.add_argument(
        "--build-only", action="store_true", help="build (or check) the corpora, measure nothing"
    )
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    os.umask(0o077)  # the corpora are memories: private, as the server expects
    sizes = sorted(int(s) for s in args.sizes.split(","))
    if not 1 <= args.spaces <= TOPICS:
        parser.error(f"--spaces takes 1 to {TOPICS} (the corpus's topics are dealt over them)")
    args.work_dir.mkdir(parents=True, exist_ok=True)
    queries = questions(args.dataset)
    if not queries:
        print(f"no LoCoMo files in {args.dataset}; pass --dataset", file=sys.stderr)
        return 2
    print(f"{os.cpu_count()} CPUs; load average {os.getloadavg()}")
    if args.build_only:
        for size in sizes:
            built = build(
                args.work_dir, size, args.dataset, args.reuse, args.model_memories, args.spaces
            )
            print(
                f"{size:,}: {built.restored:,} restored at {built.rate:.0f}/s, "
                f"{built.filled:,} filled"
            )
        return 0
    rows = [run_size(args, size, queries) for size in sizes]
    print_table(rows)
    if args.json:
        args.json.write_text(json.dumps([asdict(row) for row in rows], indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
