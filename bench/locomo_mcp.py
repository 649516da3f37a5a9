"""LoCoMo as a new user meets it: ``metacortex serve`` on a fresh data directory, every
turn saved with ``save_context`` and every question asked with ``search_context`` over
MCP HTTP, with the official SDK's client (``mcp.Client``, stateless Streamable HTTP).

The memories are ``bench/locomo.py``'s (speaker, session date and turn; with
``--time-given`` without the date, given as ``occurred_at`` instead); each question
is one ``search_context`` in its conversation's topic with ``limit`` 10. Reported as
``bench/locomo_loco.py`` reports: per LoCoMo category and for the questions that name a
time (``bench.locomo.names_a_time``).

    .venv/bin/python bench/locomo_mcp.py --dataset ../../shared/datasets/locomo/dev
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.load import connect, local_server
from bench.locomo import DATASET, categorised, dataset_files, turns_of
from bench.locomo_loco import groups, line, report
from metacortex.operations.evaluation import Case


async def run(files: list[Path], time_given: bool) -> tuple[list[Case], list[list[str]], float]:
    cases: list[Case] = []
    rankings: list[list[str]] = []
    started = time.perf_counter()
    with local_server() as server:
        async with connect(server.url, server.token) as client:
            for path in files:
                conversation = json.loads(path.read_text(encoding="utf-8"))
                topic = f"locomo-{path.stem}"
                ids: dict[str, str] = {}
                for turn in turns_of(conversation, dated=not time_given):
                    arguments: dict[str, Any] = {"content": turn.content, "topic": topic}
                    if time_given and turn.when:
                        arguments["occurred_at"] = turn.when
                    saved = await client.call_tool("save_context", arguments)
                    if saved.is_error or saved.structured_content is None:
                        raise RuntimeError(f"save_context failed: {saved.content}")
                    ids[turn.dia_id] = str(saved.structured_content["item"]["id"])
                for question, evidence, category in categorised(conversation):
                    expected = tuple(ids[d] for d in evidence if d in ids)
                    if not expected:
                        continue
                    found = await client.call_tool(
                        "search_context", {"query": question, "filter_topic": topic, "limit": 10}
                    )
                    if found.is_error or found.structured_content is None:
                        raise RuntimeError(f"search_context failed: {found.content}")
                    rankings.append([str(m["id"]) for m in found.structured_content["matches"]])
                    cases.append(Case(question, expected, topic, f"{category} {question}"))
    return cases, rankings, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--dataset", type=Path, default=DATASET)
    parser.add_argument("--time-given", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    files = dataset_files(args.dataset)
    cases, rankings, seconds = asyncio.run(run(files, args.time_given))
    print(f"{len(cases)} questions over MCP HTTP in {seconds:.0f} s")
    parts = {label: report(rankings, cases, keep) for label, keep in groups(cases).items()}
    for label, part in parts.items():
        print(line(label, part))
    if args.json:
        args.json.write_text(json.dumps({k: v.to_dict() for k, v in parts.items()}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
