"""How fast the local model (all-MiniLM-L6-v2 int8, onnxruntime) embeds here (issue 23).

    .venv/bin/python bench/embed.py                    # every configuration below
    .venv/bin/python bench/embed.py --texts 1500 --only product,b256-tok,2x1
    .venv/bin/python bench/embed.py --repeat 2         # each configuration twice, interleaved
    .venv/bin/python bench/embed.py --dataset ../../shared/datasets/locomo/dev  # from a worktree

The texts are the LoCoMo development split's turns, as bench/locomo.py saves them
(speaker, date, text, photo caption), plus longer generated ones (a run of a
conversation's consecutive turns, 60-250 tokens) so that one in four is long;
shuffled with a fixed seed. Every configuration embeds the same texts; printed:
texts/s, tokens/s (real tokens, no padding) and the padding overhead. The load
average is printed before and after: these cores are shared, so compare
configurations in the same run (``--repeat`` interleaves them).

Configurations (the model, pooling and normalization never change):
- ``product``: ``MiniLMEmbedder.embed_documents`` as shipped (``b32-char`` is what
  it was before issue 23: batches of 32 sorted by character length);
- ``bN-none`` / ``bN-char`` / ``bN-tok``: batches of N, in arrival order, sorted by
  character length, or sorted by token length (tokenized once, padded per batch);
- ``...-t1`` / ``-t2``: intra_op_num_threads; ``-seq`` / ``-par``: execution mode;
  ``-basic`` / ``-ext``: graph optimization level (default: ALL);
- ``-nospin``: intra-op threads do not busy-wait (``session.intra_op.allow_spinning``);
- ``2x1``: two sessions of one thread each, two batches at once (one per core);
- ``tok-single``: the tokenizer called text by text instead of ``encode_batch``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.locomo import DATASET, turns_of
from metacortex.providers.local import (
    MAX_TOKENS,
    MiniLMEmbedder,
    installed_model_files,
    unit_vectors,
)


def corpus(
    count: int, dataset: Path = DATASET, seed: int = 23, long_share: float = 0.25
) -> list[str]:
    """LoCoMo turns, plus long texts (consecutive turns joined): ``long_share`` of all."""
    turns: list[str] = []
    for path in sorted(dataset.glob("*.json")):
        turns.extend(t.content for t in turns_of(json.loads(path.read_text(encoding="utf-8"))))
    if not turns:
        raise SystemExit(f"no LoCoMo files in {dataset}; pass --dataset")
    rng = random.Random(seed)
    long: list[str] = []
    for _ in range(round(len(turns) * long_share / (1 - long_share))):
        start = rng.randrange(len(turns) - 12)
        long.append(" ".join(turns[start : start + rng.randint(3, 12)]))
    texts = turns + long
    rng.shuffle(texts)
    while len(texts) < count:
        texts += texts
    return texts[:count]


@dataclass(frozen=True, slots=True)
class Config:
    name: str
    batch: int = 64
    order: str = "tok"  # none | char | tok
    threads: int = 2
    mode: str = "seq"  # seq | par
    level: str = "all"  # basic | ext | all
    sessions: int = 1
    batch_encode: bool = True
    spin: bool = True  # onnxruntime's intra-op threads busy-wait between tasks


def session(config: Config) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = config.threads
    options.inter_op_num_threads = 1
    if not config.spin:
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.execution_mode = (
        ort.ExecutionMode.ORT_PARALLEL if config.mode == "par" else ort.ExecutionMode.ORT_SEQUENTIAL
    )
    options.graph_optimization_level = {
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "ext": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    }[config.level]
    return ort.InferenceSession(
        str(installed_model_files().model), sess_options=options, providers=["CPUExecutionProvider"]
    )


def tokenizer() -> Any:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(installed_model_files().tokenizer))
    tok.enable_truncation(max_length=MAX_TOKENS)
    tok.no_padding()  # tokenizer.json pads to 128; batches are padded here, to their longest
    return tok


def runner(config: Config) -> tuple[Callable[[list[str]], tuple[np.ndarray, int]], Any]:
    """A function embedding texts in this configuration: (vectors, padded token count)."""
    sessions = [session(config) for _ in range(config.sessions)]
    tok = tokenizer()
    pool = ThreadPoolExecutor(config.sessions) if config.sessions > 1 else None

    def embed(texts: list[str]) -> tuple[np.ndarray, int]:
        inputs = [t or " " for t in texts]
        if config.batch_encode:
            rows = [e.ids for e in tok.encode_batch(inputs)]
        else:
            rows = [tok.encode(t).ids for t in inputs]
        if config.order == "tok":
            order = sorted(range(len(rows)), key=lambda i: len(rows[i]))
        elif config.order == "char":
            order = sorted(range(len(rows)), key=lambda i: len(inputs[i]))
        else:
            order = list(range(len(rows)))
        chunks = [order[s : s + config.batch] for s in range(0, len(order), config.batch)]
        out = np.zeros((len(rows), 384), dtype=np.float32)
        padded = sum(len(c) * max(len(rows[i]) for i in c) for c in chunks)

        def one(job: tuple[int, list[int]]) -> None:
            k, chunk = job
            out[chunk] = unit_vectors(sessions[k % len(sessions)], [rows[i] for i in chunk])

        if pool is None:
            for job in enumerate(chunks):
                one(job)
        else:
            list(pool.map(one, enumerate(chunks)))
        return out, padded

    return embed, pool


def product_runner() -> Callable[[list[str]], tuple[np.ndarray, int]]:
    embedder = MiniLMEmbedder(installed_model_files())

    def embed(texts: list[str]) -> tuple[np.ndarray, int]:
        return np.stack(embedder.embed_documents(texts)), 0

    return embed


def configurations() -> list[Config]:
    configs = [Config("product")]
    for batch in (32, 64, 128, 256):
        for order in ("none", "char", "tok"):
            configs.append(Config(f"b{batch}-{order}", batch=batch, order=order))
    configs += [
        Config("b32-tok-t1", batch=32, threads=1),
        Config("b32-tok-nospin", batch=32, spin=False),
        Config("b64-tok-t1", batch=64, threads=1),
        Config("b128-tok-t1", batch=128, threads=1),
        Config("b64-tok-par", batch=64, mode="par"),
        Config("b64-tok-basic", batch=64, level="basic"),
        Config("b64-tok-ext", batch=64, level="ext"),
        Config("2x1-b32", batch=32, threads=1, sessions=2),
        Config("2x1", batch=64, threads=1, sessions=2),
        Config("2x1-b128", batch=128, threads=1, sessions=2),
        Config("tok-single", batch=64, batch_encode=False),
    ]
    return configs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=1500)
    parser.add_argument("--only", help="comma-separated configuration names")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--dataset", type=Path, default=DATASET)
    parser.add_argument("--long", type=float, default=0.25, help="share of long texts (0: turns)")
    args = parser.parse_args()
    texts = corpus(args.texts, args.dataset, long_share=args.long)
    tok = tokenizer()
    tokens = sum(len(e.ids) for e in tok.encode_batch(texts))
    configs = configurations()
    if args.only:
        wanted = args.only.split(",")
        configs = [c for c in configs if c.name in wanted or c.name in ("product", "b32-char")]
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    mean = tokens / len(texts)
    print(f"{len(texts)} texts, {tokens} tokens (mean {mean:.1f}); {os.cpu_count()} cores")
    reference: np.ndarray | None = None
    print(f"{'configuration':<16} {'texts/s':>8} {'tokens/s':>9} {'padding':>8} {'max |Δ|':>9}")
    for _ in range(args.repeat):
        for config in configs:
            # One configuration's sessions alive at a time: each session's memory arena
            # keeps its peak (GBs for large batches of long texts).
            embed = product_runner() if config.name == "product" else runner(config)[0]
            embed(texts[:64])  # warm up
            started = time.perf_counter()
            vectors, padded = embed(texts)
            seconds = time.perf_counter() - started
            del embed
            gc.collect()
            if reference is None:
                reference = vectors
            delta = float(np.abs(vectors - reference).max())
            pad = f"{padded / tokens - 1:7.0%}" if padded else "      -"
            print(
                f"{config.name:<16} {len(texts) / seconds:8.1f} {tokens / seconds:9.0f} "
                f"{pad:>8} {delta:9.1e}",
                flush=True,
            )
    print(f"load average after:  {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
