"""Re-embedding 1,000 memories through the Gemini providers, on each route.

    .venv/bin/python bench/reembed.py [--memories 1000] [--latency-ms 50] [--concurrency 1,8,16]

A SQLite store of ``--memories`` memories is re-embedded with ``GeminiEmbedder``
(the real google-genai client) whose HTTP is answered by the wire fake
(``tests/gemini_wire.py``), which enforces each route's documented limits and
waits ``--latency-ms`` before every answer, as a real round trip would. Routes:

- ``vertex``: Vertex AI, gemini-embedding-001 takes one text per request, so the
  requests go out ``METACORTEX_EMBED_CONCURRENCY`` at a time;
- ``gemini-api``: the Gemini API, batchEmbedContents of up to 100 texts.

Printed per route and concurrency: requests, seconds, texts per second.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx2
from google.genai import types
from google.oauth2.credentials import Credentials

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from metacortex.config import Settings
from metacortex.operations.reembed import reembed
from metacortex.providers.gemini import GeminiEmbedder
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import Access, MemoryService
from metacortex.storage.sqlite import SQLiteStore
from tests.fakes import HashingEmbedder
from tests.gemini_wire import DIMS, FakeGemini


def settings(route: str, concurrency: int) -> Settings:
    values: dict[str, Any] = {
        "gemini_embedding_dimensions": DIMS,
        "metacortex_embed_concurrency": concurrency,
    }
    if route == "vertex":
        values |= {"gemini_api_key": None, "google_cloud_project": "bench-project"}
    else:
        values |= {"gemini_api_key": "AIzaBENCH-not-a-real-key", "google_cloud_project": None}
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


def run(
    route: str, concurrency: int, memories: int, latency: float, folder: Path
) -> dict[str, Any]:
    path = folder / f"{route}-{concurrency}.sqlite3"
    service = MemoryService(SQLiteStore(path), HashingEmbedder(), merger=SentenceUnionMerger())
    for i in range(memories):
        service.save(Access.admin(), content=f"memory {i}: a note about topic {i % 13}")
    fake = FakeGemini(latency=latency)
    http = httpx2.Client(
        transport=httpx2.MockTransport(fake.handle),
        limits=httpx2.Limits(max_connections=64, max_keepalive_connections=64),
    )
    embedder = GeminiEmbedder.from_settings(
        settings(route, concurrency),
        http_options=types.HttpOptions(httpx_client=http),
        credentials=Credentials(token="bench"),  # type: ignore[no-untyped-call]  # noqa: S106 (fake)
    )
    started = time.perf_counter()
    summary = reembed(service.store, embedder)
    seconds = time.perf_counter() - started
    service.store.close()
    http.close()
    return {
        "route": route,
        "concurrency": concurrency,
        "texts": summary.count,
        "requests": len(fake.requests),
        "seconds": round(seconds, 2),
        "texts_per_second": round(summary.count / seconds, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--concurrency", default="1,8,16")
    args = parser.parse_args()
    levels = [int(part) for part in args.concurrency.split(",")]
    print(f"{args.memories} memories, {args.latency_ms:g} ms per request", flush=True)
    print("| route | concurrency | requests | seconds | texts/s |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as scratch:
        for route in ("vertex", "gemini-api"):
            for level in levels:
                row = run(route, level, args.memories, args.latency_ms / 1000, Path(scratch))
                print(
                    f"| {row['route']} | {row['concurrency']} | {row['requests']} | "
                    f"{row['seconds']} | {row['texts_per_second']} |",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
