"""What fact extraction sends and receives per save, on LoCoMo turns (docs/gemini.md).

Every turn of a LoCoMo dev conversation is saved through ``MemoryService`` with
extraction on; the real google-genai client talks to the fake Gemini of the tests
(``tests/gemini_wire.py``) on a loopback port, which answers each turn with one fact
(the turn itself) and no relation, and counts tokens as words and punctuation marks.
So the prompt side is exactly what production sends (instruction, the turn, up to five
candidates' summaries); the answer side is a lower bound (no thinking tokens, one fact).
Real token counts and prices need the real API: see the formula in docs/gemini.md.

    .venv/bin/python bench/extraction_cost.py                  # conversation 26, 200 turns
    .venv/bin/python bench/extraction_cost.py --turns 0        # every turn
    .venv/bin/python bench/extraction_cost.py --dataset /work/shared/datasets/locomo/dev
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from google.genai import types  # noqa: E402

from bench.locomo import DATASET, turns_of  # noqa: E402
from metacortex.config import Settings  # noqa: E402
from metacortex.providers.gemini_extract import GeminiExtractor  # noqa: E402
from metacortex.providers.offline_merge import SentenceUnionMerger  # noqa: E402
from metacortex.service import Access, MemoryService  # noqa: E402
from metacortex.storage.sqlite import SQLiteStore  # noqa: E402
from tests.extraction.wire import request_text, structured_reply  # noqa: E402
from tests.fakes import HashingEmbedder  # noqa: E402
from tests.gemini_wire import FakeGemini, serve_over_http  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversation", default="26")
    parser.add_argument("--turns", type=int, default=200, help="0: every turn")
    parser.add_argument("--dataset", type=Path, default=DATASET, help="the LoCoMo dev folder")
    args = parser.parse_args()
    conversation = json.loads((args.dataset / f"{args.conversation}.json").read_text("utf-8"))
    turns = turns_of(conversation)
    turns = turns[: args.turns] if args.turns else turns

    fake = FakeGemini()
    values: dict[str, Any] = {
        "gemini_api_key": "AIzaBENCH-not-a-real-key-000000000000",
        "metacortex_use_gemini_generation": True,
        "metacortex_extraction": "gemini",
    }
    settings = Settings(_env_file=None, **values)  # type: ignore[call-arg]
    reports: list[dict[str, Any]] = []
    prompt_chars: list[int] = []
    with serve_over_http(fake) as url, tempfile.TemporaryDirectory() as folder:
        extractor = GeminiExtractor.from_settings(
            settings, http_options=types.HttpOptions(base_url=url)
        )
        store = SQLiteStore(Path(folder) / "m.sqlite3")
        service = MemoryService(
            store, HashingEmbedder(), merger=SentenceUnionMerger(), extractor=extractor
        )
        admin = Access.admin()
        for turn in turns:
            fact = turn.content.split("): ", 1)[-1]
            fake.script.append(structured_reply({"facts": [{"text": fact}]}))
            result = service.save(admin, content=turn.content, topic="locomo")
            reports.append(result["extraction"])
            prompt_chars.append(len(request_text(FakeGemini.body(fake.requests[-1]))))
        store.close()

    def summary(values: list[int]) -> str:
        ordered = sorted(values)
        p95 = ordered[int(0.95 * (len(ordered) - 1))]
        mean, median = statistics.fmean(values), statistics.median(values)
        return f"mean {mean:.0f}, median {median:.0f}, p95 {p95}"

    print(f"{len(reports)} saves of LoCoMo conversation {args.conversation}")
    print("model calls per save:", summary([r["model_calls"] for r in reports]))
    print("prompt characters:   ", summary(prompt_chars))
    print("prompt tokens (fake):", summary([r["prompt_tokens"] for r in reports]))
    print("output tokens (fake):", summary([r["output_tokens"] for r in reports]))


if __name__ == "__main__":
    main()
