"""Bulk ingest with the local model (issue 23): restore, re-embed and single saves.

    .venv/bin/python bench/ingest.py                       # 5,000 memories
    .venv/bin/python bench/ingest.py --memories 2000 --saves 100 --profile
    .venv/bin/python bench/ingest.py --dataset ../../shared/datasets/locomo/dev  # from a worktree

A portable backup of ``--memories`` memories (the LoCoMo development split's turns,
as bench/locomo.py saves them, one topic per conversation; cycled with a numbered
suffix past its 2,760 turns) is written once (into a store filled with a
model-free embedder, so building it costs nothing), then restored into a fresh
SQLite store with the local model, then that store is re-embedded; finally
``--saves`` single saves (``save_context`` of one memory) are timed.

For restore and re-embed: memories/s end to end, the seconds inside the model
(``embed_documents``) and everything else, and its share of the time (the
target: under a fifth). ``--profile`` prints where the non-model time goes.
The load average is printed before and after: these cores are shared.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.locomo import DATASET, turns_of
from metacortex.operations.backup import export_portable, restore_portable
from metacortex.operations.reembed import reembed
from metacortex.providers.local import MiniLMEmbedder
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import Access, MemoryService
from metacortex.storage.base import EmbeddingIdentity
from metacortex.storage.sqlite import SQLiteStore
from tests.fakes import HashingEmbedder

if TYPE_CHECKING:
    from metacortex.storage.base import Vector


class TimedEmbedder:
    """The real model, with the seconds spent inside it counted."""

    def __init__(self, inner: MiniLMEmbedder) -> None:
        self._inner = inner
        self.seconds = 0.0

    @property
    def identity(self) -> EmbeddingIdentity:
        return self._inner.identity

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        started = time.perf_counter()
        try:
            return self._inner.embed_documents(texts)
        finally:
            self.seconds += time.perf_counter() - started

    def embed_query(self, text: str) -> Vector:
        return self._inner.embed_query(text)

    def knows(self, word: str) -> bool:
        return self._inner.knows(word)

    def words_near(self, word: str) -> dict[str, int]:
        return self._inner.words_near(word)


def turns(dataset: Path) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for path in sorted(dataset.glob("*.json")):
        conversation = json.loads(path.read_text(encoding="utf-8"))
        out.extend((f"locomo-{path.stem}", t.content) for t in turns_of(conversation))
    if not out:
        raise SystemExit(f"no LoCoMo files in {dataset}; pass --dataset")
    return out


def build_backup(folder: Path, memories: int, dataset: Path) -> Path:
    backup = folder / f"backup-{memories}"
    if (backup / "manifest.json").is_file():
        return backup
    source = turns(dataset)
    store = SQLiteStore(folder / f"source-{memories}.sqlite3")
    embedder = HashingEmbedder()
    store.bind_embedding(embedder.identity)
    service = MemoryService(store, embedder, merger=SentenceUnionMerger())
    admin = Access.admin()
    for i in range(memories):
        topic, text = source[i % len(source)]
        lap = i // len(source)
        service.save(admin, content=text if lap == 0 else f"{text} (#{lap})", topic=topic)
    export_portable(store, backup, embedder.identity.key())
    store.close()
    return backup


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def line(label: str, count: int, seconds: float, model: float) -> None:
    other = seconds - model
    print(
        f"{label:<9} {count:>6} memories  {seconds:7.1f} s  {count / seconds:6.1f} /s   "
        f"model {model:6.1f} s   other {other:5.1f} s ({other / seconds:4.0%})",
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=5000)
    parser.add_argument("--saves", type=int, default=200)
    parser.add_argument("--dataset", type=Path, default=DATASET)
    parser.add_argument("--folder", type=Path, help="keep the backup here for later runs")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.folder or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        backup = build_backup(folder, args.memories, args.dataset)
        embedder = TimedEmbedder(MiniLMEmbedder.load())
        embedder.embed_documents(["warm up"])
        embedder.seconds = 0.0
        print(f"load average before: {load()}")
        target = folder / f"restored-{os.getpid()}.sqlite3"
        store = SQLiteStore(target)
        store.bind_embedding(embedder.identity)
        profiler = cProfile.Profile() if args.profile else None
        started = time.perf_counter()
        if profiler:
            profiler.enable()
        summary = restore_portable(store, embedder, backup)
        if profiler:
            profiler.disable()
        line("restore", summary.restored, time.perf_counter() - started, embedder.seconds)
        embedder.seconds = 0.0
        started = time.perf_counter()
        count = reembed(store, embedder).count
        line("reembed", count, time.perf_counter() - started, embedder.seconds)
        service = MemoryService(store, embedder, merger=SentenceUnionMerger())
        admin = Access.admin()
        times = []
        for i in range(args.saves):
            started = time.perf_counter()
            service.save(admin, content=f"single save {i}: a fresh note about {i * 7}", topic="s")
            times.append(time.perf_counter() - started)
        if times:
            p50, mean = statistics.median(times) * 1e3, statistics.fmean(times) * 1e3
            print(f"save      {len(times):>6} single saves  p50 {p50:.1f} ms  mean {mean:.1f} ms")
        store.close()
        target.unlink()
        print(f"load average after:  {load()}")
        if profiler:
            stats = pstats.Stats(profiler)
            stats.sort_stats("tottime").print_stats(25)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
