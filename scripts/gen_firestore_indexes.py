"""Write firestore.indexes.json from the Firestore store's own query shapes.

    .venv/bin/python scripts/gen_firestore_indexes.py          # write the file
    .venv/bin/python scripts/gen_firestore_indexes.py --check  # exit 1 if it drifted

The vector dimension is GEMINI_EMBEDDING_DIMENSIONS and the collection
MEMORY_COLLECTION (Settings with the cloud defaults), so the indexes always
match what the deployed code queries.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "functions"))

from metacortex.config import Settings
from metacortex.storage.firestore_queries import firestore_index_specs

INDEX_FILE = Path(__file__).resolve().parent.parent / "firestore.indexes.json"


def render(settings: Settings) -> str:
    specs = firestore_index_specs(settings.gemini_embedding_dimensions, settings.memory_collection)
    return json.dumps(specs, indent=2) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args()
    expected = render(Settings(deployment="cloud"))
    if args.check:
        current = INDEX_FILE.read_text(encoding="utf-8") if INDEX_FILE.exists() else ""
        if current != expected:
            print(
                f"{INDEX_FILE.name} does not match the code's query shapes for this configuration; "
                "run: .venv/bin/python scripts/gen_firestore_indexes.py",
                file=sys.stderr,
            )
            return 1
        print(f"{INDEX_FILE.name} matches the code")
        return 0
    INDEX_FILE.write_text(expected, encoding="utf-8")
    print(f"wrote {INDEX_FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
