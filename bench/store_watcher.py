"""What the SQLite store's watcher costs a process at rest, and how fast it reacts.

The watcher (``storage/sqlite_scrub.py``) wakes every second in each process that
holds records in memory, asks SQLite whether another connection committed
(``PRAGMA data_version``) and, only then, whether anything was erased. Measured here:

1. one tick with nothing changed, and one after another connection's write that
   erased nothing (mean over ``--ticks``);
2. the process's CPU time (all threads, ``time.process_time``) over ``--seconds``
   at rest with the watcher running, then over as long with it stopped: the
   difference is the watcher's share;
3. the time from another connection's erase (its commit) until this process has
   dropped the record from memory (``SQLiteStore.erasures_forgotten``), over
   ``--erasures`` erasures: bounded by the one-second interval.

    .venv/bin/python bench/store_watcher.py --memories 10000

Vectors come from the tests' hashing embedder (384 dimensions, the local model's size).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from metacortex.domain.records import BranchState, Memory, Modality, new_memory_id, utc_now
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import Access, MemoryService
from metacortex.storage.base import StoreTransaction
from metacortex.storage.sqlite import SQLiteStore
from tests.fakes import HashingEmbedder

if TYPE_CHECKING:
    from metacortex.storage.base import Vector


def _fill(store: SQLiteStore, embedder: HashingEmbedder, count: int) -> list[str]:
    store.bind_embedding(embedder.identity)
    ids: list[str] = []
    now = utc_now()
    for start in range(0, count, 1000):
        texts = [
            f"Note {i}: the meeting moved to room {i % 97}." for i in range(start, start + 1000)
        ]
        vectors = embedder.embed_documents(texts)
        memories = [
            Memory(
                new_memory_id(),
                text,
                text,
                f"t{i % 20}",
                BranchState.ACTIVE,
                Modality.TEXT,
                now,
                now,
            )
            for i, text in enumerate(texts[: count - start])
        ]

        def write(
            txn: StoreTransaction,
            memories: list[Memory] = memories,
            vectors: list[Vector] = vectors,
        ) -> None:
            for memory, vector in zip(memories, vectors, strict=False):
                txn.put(memory, vector)

        store.transaction(write)
        ids += [memory.id for memory in memories]
    return ids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--ticks", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--erasures", type=int, default=20)
    args = parser.parse_args()
    embedder = HashingEmbedder(384)
    owner = Access.admin()
    with tempfile.TemporaryDirectory() as directory:
        database = Path(directory) / "m.sqlite3"
        store = SQLiteStore(database)
        other = SQLiteStore(database)  # another process's connection, as far as SQLite goes
        service = MemoryService(store, embedder, merger=SentenceUnionMerger())
        writer = MemoryService(other, embedder, merger=SentenceUnionMerger())
        ids = _fill(store, embedder, args.memories)
        service.search(owner, query="meeting room", limit=5)  # records in memory: watching
        scrubber = store._scrubber
        tick = scrubber._tick

        started = time.perf_counter()
        for _ in range(args.ticks):
            tick()
        idle_tick_us = (time.perf_counter() - started) / args.ticks * 1e6
        changed = []
        for i in range(min(args.ticks, 1000)):
            writer.save(owner, content=f"A write by the other connection, number {i}")
            started = time.perf_counter()
            tick()
            changed.append(time.perf_counter() - started)
        changed_tick_us = statistics.mean(changed) * 1e6

        rest = threading.Event()
        cpu = time.process_time()
        rest.wait(args.seconds)
        watching = time.process_time() - cpu
        scrubber._ticker.close()
        cpu = time.process_time()
        rest.wait(args.seconds)
        stopped = time.process_time() - cpu

        fresh = SQLiteStore(database)
        MemoryService(fresh, embedder, merger=SentenceUnionMerger()).search(owner, query="room")
        reactions = []
        for memory_id in ids[: args.erasures]:
            writer.erase(owner, ids=[memory_id], erased_by="bench")
            erased = time.perf_counter()
            assert fresh.erasures_forgotten(timeout=10)
            reactions.append(time.perf_counter() - erased)
        fresh.close()
        other.close()
        store.close()

    print(f"memories: {args.memories}")
    print(f"tick, nothing changed: {idle_tick_us:.1f} us")
    print(f"tick after another connection's write (no erase): {changed_tick_us:.1f} us")
    print(
        f"CPU at rest over {args.seconds:g} s: watcher on {watching * 1000:.1f} ms, "
        f"off {stopped * 1000:.1f} ms"
    )
    print(
        f"erase -> forgotten in another store: p50 {statistics.median(reactions) * 1000:.0f} ms,"
        f" max {max(reactions) * 1000:.0f} ms"
    )


if __name__ == "__main__":
    main()
