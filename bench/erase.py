"""Erase on the embedded store: which scrubbing steps are needed, and what erase costs.

1. Needed steps. The scenario of ``tests/test_sqlite_erase.py`` (notes, a record
   holding a marker, a long one rewritten by a deprecation, more notes, a search)
   at a few sizes; both records are deleted as ``SQLiteStore.erase`` does, with
   each of its three scrubbing steps left out in turn (``secure_delete``, FTS5
   ``optimize``, WAL checkpoint ``TRUNCATE``), and the marker's occurrences
   counted in the bytes of the ``.sqlite3``, ``-wal`` and ``-shm`` files
   (``secure_delete`` is set off explicitly: Debian's SQLite turns it on by
   default, other builds do not). Whether a step happens to be redundant depends
   on the file's state (an automatic FTS5 merge, a WAL reset): erase does all three.
2. Cost. ``MemoryService.erase`` of one record and of a batch of 100 at that
   size (wall time, p50 and max over ``--runs``), the FTS5 ``optimize`` and the
   checkpoint timed apart, and the first search afterwards in another store
   instance on the same file (its vector mirror drops the erased rows).

    .venv/bin/python bench/erase.py --memories 10000

Vectors come from the tests' hashing embedder (384 dimensions, the local model's
size): the cost of erasing does not depend on what the vectors mean.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from metacortex.domain.records import BranchState
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import Access, MemoryService
from metacortex.storage.base import MemoryFilter
from metacortex.storage.sqlite import SQLiteStore
from tests.fakes import HashingEmbedder

ADMIN = Access.admin()
MARKER = "zqxvmarkerkestrel"
WORDS = (
    "deploy release branch hotfix rollback canary metrics alert pager oncall schema "
    "migration index backup restore quota budget latency cache token garden lunch trip"
).split()


def _note(i: int) -> str:
    words = " ".join(WORDS[(i * k) % len(WORDS)] for k in (1, 3, 7, 11, 13))
    return f"Note {i}: {words}, written on day {i % 365} by agent {i % 7}."


def _fill(path: Path, memories: int) -> tuple[SQLiteStore, MemoryService]:
    store = SQLiteStore(path)
    service = MemoryService(store, HashingEmbedder(384), merger=SentenceUnionMerger())
    for i in range(memories):
        service.save(ADMIN, content=_note(i), topic=f"topic-{i % 20}")
    return store, service


def _occurrences(path: Path) -> dict[str, int]:
    found = {}
    for suffix in ("", "-wal", "-shm"):
        file = Path(f"{path}{suffix}")
        found[suffix or ".sqlite3"] = (
            file.read_bytes().count(MARKER.encode()) if file.exists() else 0
        )
    return found


def needed_steps(memories: int, directory: Path) -> list[dict[str, Any]]:
    """The scenario of tests/test_sqlite_erase.py: notes, a short record holding the
    marker, a long one rewritten by a deprecation, more notes, a search; then both
    records deleted with each scrubbing step left out in turn."""
    rows = []
    for secure, optimize, truncate in itertools.product((True, False), repeat=3):
        path = directory / f"steps-{memories}-{secure}-{optimize}-{truncate}.sqlite3"
        store = SQLiteStore(path)
        service = MemoryService(store, HashingEmbedder(384), merger=SentenceUnionMerger())
        for i in range(memories):
            if i == memories // 2:
                marked = service.save(ADMIN, content=f"The locker code is {MARKER}.")
                text = "A pasted document mentioning x. " + "Filler sentence here. " * 800
                long = service.save(ADMIN, content=text)
                service.deprecate(ADMIN, id=long["item"]["id"])
            service.save(ADMIN, content=f"Ordinary note {i} about apples, pears and {i * 7} plums")
        service.search(ADMIN, query="locker code")
        conn = store._conn()  # the store's own connection, as erase uses it
        conn.execute(f"PRAGMA secure_delete = {'ON' if secure else 'OFF'}")
        conn.execute("BEGIN IMMEDIATE")
        for record in (marked, long):
            row = conn.execute("SELECT seq FROM memories WHERE id = ?", (record["item"]["id"],))
            [seq] = row.fetchone()
            conn.execute("DELETE FROM memory_terms WHERE rowid = ?", (seq,))
            conn.execute("DELETE FROM memories WHERE seq = ?", (seq,))
        if optimize:
            conn.execute("INSERT INTO memory_terms (memory_terms) VALUES ('optimize')")
        conn.execute("COMMIT")
        if truncate:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        rows.append(
            {"memories": memories, "secure_delete": secure, "optimize": optimize}
            | {"truncate": truncate}
            | _occurrences(path)
        )
        store.close()
    return rows


def _timed(operation: Callable[[], Any]) -> float:
    started = time.perf_counter()
    operation()
    return (time.perf_counter() - started) * 1000


def cost(memories: int, runs: int, directory: Path) -> dict[str, Any]:
    path = directory / "cost.sqlite3"
    store, service = _fill(path, memories)
    reader_store = SQLiteStore(path)
    reader = MemoryService(reader_store, HashingEmbedder(384), merger=SentenceUnionMerger())
    reader.search(ADMIN, query="warm up")
    listed = store.list_page(MemoryFilter(states=(BranchState.ACTIVE,)), runs * 101, None)
    ids = [memory.id for memory in listed]
    one: list[float] = []
    batch: list[float] = []
    next_search: list[float] = []
    for run in range(runs):
        chunk = ids[runs + run * 100 : runs + (run + 1) * 100]
        one.append(_timed(partial(service.erase, ADMIN, ids=[ids[run]], erased_by="bench")))
        batch.append(_timed(partial(service.erase, ADMIN, ids=chunk, erased_by="bench")))
        next_search.append(_timed(partial(reader.search, ADMIN, query="deploy release")))
    conn = sqlite3.connect(path)
    optimize = _timed(
        lambda: conn.execute("INSERT INTO memory_terms (memory_terms) VALUES ('optimize')")
    )
    conn.commit()
    truncate = _timed(lambda: conn.execute("PRAGMA wal_checkpoint(TRUNCATE)"))
    conn.close()
    reader_store.close()
    store.close()
    size_mib = path.stat().st_size / 2**20

    def summary(values: list[float]) -> str:
        return f"{statistics.median(values):.0f} / {max(values):.0f}"

    return {
        "memories": memories,
        "file MiB": round(size_mib, 1),
        "erase 1, ms p50 / max": summary(one),
        "erase 100, ms p50 / max": summary(batch),
        "next search elsewhere, ms p50 / max": summary(next_search),
        "FTS5 optimize alone, ms": round(optimize),
        "checkpoint TRUNCATE alone, ms": round(truncate),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--steps-memories", type=int, nargs="+", default=[300, 3000], help="store sizes"
    )
    args = parser.parse_args()
    print(f"load average: {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch)
        print(
            "| memories | secure_delete | FTS5 optimize | checkpoint TRUNCATE "
            "| .sqlite3 | -wal | -shm |"
        )
        print("|---|---|---|---|---|---|---|")
        rows = [row for size in args.steps_memories for row in needed_steps(size, directory)]
        for row in rows:
            print(
                f"| {row['memories']} | {'on' if row['secure_delete'] else 'off'} | "
                f"{'yes' if row['optimize'] else 'no'} | {'yes' if row['truncate'] else 'no'} | "
                f"{row['.sqlite3']} | {row['-wal']} | {row['-shm']} |"
            )
        figures = cost(args.memories, args.runs, directory)
        print()
        print("| " + " | ".join(figures) + " |")
        print("|" + "---|" * len(figures))
        print("| " + " | ".join(str(value) for value in figures.values()) + " |")
    print(f"load average: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
