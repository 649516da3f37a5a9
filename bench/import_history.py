"""Importing conversation history with the local model (issue 40 §3): a generated ChatGPT
or Claude export read, imported into a fresh SQLite store, then imported again.

    .venv/bin/python bench/import_history.py                          # chatgpt, 100 x 20
    .venv/bin/python bench/import_history.py --kind claude --conversations 50 --turns 40

The export is made by ``tests/importing/exports.py`` from the documented formats (user
turns one sentence, assistant turns three, 12 words each). Printed: the archive's size,
the seconds to read and check it, the import's messages/s end to end with the seconds
inside the model (``embed_documents``) and everything else, and the seconds of the second
import (which adds nothing). The load average is printed before and after: these cores
are shared.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.ingest import TimedEmbedder, load
from metacortex.access.rules import Access
from metacortex.importing.limits import ImportLimits
from metacortex.importing.run import import_export, read_export
from metacortex.providers.local import MiniLMEmbedder
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import MemoryService
from metacortex.storage.sqlite import SQLiteStore
from tests.importing.exports import chatgpt_export, claude_export, generated_chats


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kind", choices=("chatgpt", "claude"), default="chatgpt")
    parser.add_argument("--conversations", type=int, default=100)
    parser.add_argument("--turns", type=int, default=20)
    args = parser.parse_args()
    chats = generated_chats(args.conversations, args.turns)
    make = chatgpt_export if args.kind == "chatgpt" else claude_export
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        archive = folder / "export.zip"
        archive.write_bytes(make(chats))
        embedder = TimedEmbedder(MiniLMEmbedder.load())
        embedder.embed_documents(["warm up"])
        embedder.seconds = 0.0
        print(f"load average before: {load()}")
        started = time.perf_counter()
        export = read_export(archive, args.kind, ImportLimits())
        read = time.perf_counter() - started
        messages = sum(len(c.messages) for c in export.conversations)
        print(
            f"read      {archive.stat().st_size / 1e6:6.2f} MB zip, "
            f"{len(export.conversations)} conversations, {messages} messages: {read:.2f} s"
        )
        store = SQLiteStore(folder / "store.sqlite3")
        store.bind_embedding(embedder.identity)
        service = MemoryService(store, embedder, merger=SentenceUnionMerger())
        admin = Access.admin()
        started = time.perf_counter()
        summary = import_export(service, admin, export)
        seconds = time.perf_counter() - started
        other = seconds - embedder.seconds
        print(
            f"import    {messages} messages, {summary.added} passages  {seconds:7.1f} s  "
            f"{messages / seconds:6.1f} messages/s   model {embedder.seconds:6.1f} s   "
            f"other {other:5.1f} s ({other / seconds:4.0%})"
        )
        started = time.perf_counter()
        again = import_export(service, admin, export)
        print(
            f"again     {again.unchanged} unchanged, {again.added} passages added  "
            f"{time.perf_counter() - started:7.2f} s"
        )
        store.close()
        print(f"load average after:  {load()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
