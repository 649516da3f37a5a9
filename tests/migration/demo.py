"""``python -m tests.migration.demo [N]``: docs/MIGRATING.md's walk-through, run for real.

Starts Google's Firestore emulator, writes a corpus exactly as the TypeScript
MetaCortex writes it (``original_metacortex.py``: the corpus of
``test_original_corpus.py``, N more remembered memories, and three damaged
documents), then runs ``metacortex migrate firestore`` as an operator would, in
its own process: a dry run, ``--apply``, and ``--apply`` again. Prints each
command, its output and how long it took, with the load average.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from google.cloud import firestore

from tests.firestore_support import PROJECT, Emulator, find_emulator
from tests.migration.original_metacortex import MEMORY_COLLECTION
from tests.migration.support import the_original, the_originals_corpus

_TOPICS = ("kmp-networking", "release-timeline", "ui-settings", "ops", "android")


def _seed(client: firestore.Client, extra: int) -> None:
    original = the_original(client)
    the_originals_corpus(original)
    for n in range(extra):
        original.remember(
            f"Note {n}: the {_TOPICS[n % 5]} team agreed on item {n}.",
            _TOPICS[n % 5],
            draft=n % 7 == 0,
        )
    memories = client.collection(MEMORY_COLLECTION)
    memories.document("hand-edited-topic").set(
        {"content": "Edited by hand in the console", "metadata": {"branch_state": "active"}}
    )
    memories.document("imported-by-a-script").set(
        {
            "content": "Imported from a wiki export",
            "module_name": ["wiki"],
            "branch_state": "active",
            "created_at": "2025-02-30T10:00:00Z",
        }
    )
    memories.document("damaged-embedding").set(
        {
            "content": "Half-written by a failed backfill",
            "embedding": [{"value": 0.1}],
            "metadata": {
                "module_name": "ops",
                "branch_state": "active",
                "created_at": 1_767_225_600_000,
                "updated_at": 1_767_225_600_000,
                "modality": "text",
            },
        }
    )


def _run(arguments: list[str], env: dict[str, str], cwd: Path) -> None:
    print(f"$ metacortex {' '.join(arguments)}")
    started = time.perf_counter()
    finished = subprocess.run(  # noqa: S603 - our own CLI, fixed arguments
        [sys.executable, "-m", "metacortex.cli.main", *arguments],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    elapsed = time.perf_counter() - started
    print(finished.stderr + finished.stdout, end="")
    print(f"[{elapsed:.1f} s, load average {os.getloadavg()[0]:.2f}]\n")


def main() -> int:
    extra = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    command, why = find_emulator()
    if command is None:
        print(f"the Firestore emulator cannot run here: {why}", file=sys.stderr)
        return 1
    emulator = Emulator(command)
    try:
        emulator.wait_ready()
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("MCP_", "METACORTEX_"))},
            "FIRESTORE_EMULATOR_HOST": emulator.host,
            "GOOGLE_CLOUD_PROJECT": PROJECT,
            "MEMORY_COLLECTION": MEMORY_COLLECTION,
        }
        os.environ["FIRESTORE_EMULATOR_HOST"] = emulator.host
        _seed(firestore.Client(project=PROJECT), extra)
        with tempfile.TemporaryDirectory() as cwd:
            for arguments in (
                ["migrate", "firestore"],
                ["migrate", "firestore", "--apply"],
                ["migrate", "firestore", "--apply"],
            ):
                _run(arguments, env, Path(cwd))
    finally:
        emulator.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
