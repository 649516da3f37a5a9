"""Re-embed throughput through the Gemini wire fake, on each route (issue 12).

    .venv/bin/python bench/reembed.py                          # 1,000 memories, 50 ms, both routes
    .venv/bin/python bench/reembed.py --concurrency 1 4 8 16   # compare concurrency settings
    .venv/bin/python bench/reembed.py --count 200 --latency 0.1 --json

Seeds a real SQLite file with ``--count`` memories (a model-free embedder), then
times ``metacortex.operations.reembed.reembed`` with the real ``GeminiEmbedder``
and the real google-genai client talking real loopback HTTP to
``tests.gemini_wire.FakeGemini``, which answers every request after
``--latency`` seconds and enforces each route's documented limits (Vertex AI:
one text per request for ``gemini-embedding-001``; Gemini API: at most 100 per
batch). Reported per route and concurrency: wall time, texts/s, requests sent.
Every stored vector is then checked against the fake's vector for its own text
(exit status 1 otherwise).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import numpy as np
from google.genai import types
from google.oauth2.credentials import Credentials

from metacortex.config import Settings
from metacortex.operations.reembed import reembed
from metacortex.providers.gemini import GeminiEmbedder
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import Access, MemoryService
from metacortex.storage.sqlite import SQLiteStore

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.fakes import HashingEmbedder
from tests.gemini_wire import DIMS, FakeGemini, serve_over_http, wire_vector

ROUTES = ("vertex", "gemini-api")
# Static credentials for the fake's Vertex route: no ADC lookup, nothing secret.
FAKE_VERTEX_TOKEN = "bench-" + "static-token"


def seed(path: Path, count: int) -> None:
    store = SQLiteStore(path)
    try:
        service = MemoryService(store, HashingEmbedder(), merger=SentenceUnionMerger())
        for index in range(count):
            service.save(
                Access.admin(),
                content=f"Memory {index}: the launch checklist says item {index} is owned by Dana.",
                topic=f"topic-{index % 7}",
            )
    finally:
        store.close()


def embedder(route: str, url: str, concurrency: int) -> GeminiEmbedder:
    values: dict[str, Any] = {
        "gemini_embedding_dimensions": DIMS,
        "metacortex_embed_concurrency": concurrency,
    }
    if route == "vertex":
        values |= {"gemini_api_key": None, "google_cloud_project": "bench-proj"}
    else:
        values |= {"gemini_api_key": "bench-key", "google_cloud_project": None}
    settings = Settings(_env_file=None, **values)  # type: ignore[call-arg]
    return GeminiEmbedder.from_settings(
        settings,
        http_options=types.HttpOptions(base_url=url),
        credentials=Credentials(token=FAKE_VERTEX_TOKEN),  # type: ignore[no-untyped-call]
    )


def verify(path: Path) -> int:
    """Stored vectors that are not the fake's (normalized) vector for their own text."""
    with closing(sqlite3.connect(path)) as conn:
        rows = conn.execute("SELECT retrieval_text, embedding FROM memories").fetchall()
    wrong = 0
    for text, blob in rows:
        expected = np.asarray(wire_vector(text), dtype=np.float32)
        expected /= np.linalg.norm(expected)
        if not np.allclose(np.frombuffer(blob, dtype=np.float32), expected, rtol=1e-5):
            wrong += 1
    return wrong


def run(route: str, concurrency: int, count: int, latency: float, seeded: Path) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="reembed-bench-") as tmp:
        path = Path(tmp) / "m.sqlite3"
        path.write_bytes(seeded.read_bytes())
        path.chmod(0o600)
        fake = FakeGemini()
        with serve_over_http(fake, latency=latency) as url:
            store = SQLiteStore(path)
            try:
                started = time.perf_counter()
                summary = reembed(store, embedder(route, url, concurrency))
                seconds = time.perf_counter() - started
            finally:
                store.close()
        return {
            "route": route,
            "concurrency": concurrency,
            "memories": summary.count,
            "requests": len(fake.requests),
            "seconds": round(seconds, 2),
            "texts_per_second": round(summary.count / seconds, 1),
            "wrong_vectors": verify(path),
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per request")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8])
    parser.add_argument("--routes", nargs="+", choices=ROUTES, default=list(ROUTES))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    results = []
    with tempfile.TemporaryDirectory(prefix="reembed-seed-") as tmp:
        seeded = Path(tmp) / "seed.sqlite3"
        seed(seeded, args.count)
        for route in args.routes:
            for concurrency in args.concurrency:
                results.append(run(route, concurrency, args.count, args.latency, seeded))
                if not args.json:
                    r = results[-1]
                    print(
                        f"{r['route']:<11} concurrency {r['concurrency']:>3}: "
                        f"{r['memories']} memories in {r['seconds']:.2f} s = "
                        f"{r['texts_per_second']:.1f} texts/s, {r['requests']} requests, "
                        f"{r['wrong_vectors']} wrong vectors",
                        flush=True,
                    )
    if args.json:
        print(json.dumps({"latency": args.latency, "results": results}))
    return 1 if any(r["wrong_vectors"] or r["memories"] != args.count for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
