"""Text in images read offline (issue 40): accuracy, findability, time and memory.

Generates cards of rendered text (``bench/ocr_images.py``: title, a line with a made-up
key phrase, words, a total) in every font available (Pillow's own and the DejaVu
fonts present), at several sizes, rotations and noise levels. For each image:

- character accuracy: 1 - (Levenshtein distance / characters) between the text read
  and the text drawn, whitespace collapsed;
- whether the key phrase was read exactly;
- the time its save takes (OCR, embedding, insert), wall clock and this process's CPU
  time (both threads of the OCR runtime; less sensitive to other work on the machine).

Each image is saved, with no words of the caller's, through the offline default
service (SQLite, the local embedding model, OCR: what ``metacortex serve`` builds);
what is read is the saved memory's text. Then each key phrase is searched for: the
share found at rank 1. Memory: this process's resident size before the service,
after its models loaded, and at its peak.

    .venv/bin/python bench/ocr.py [--sizes 16,24,36] [--angles 0,3,90,180] [--noise 0,0.04]
"""

from __future__ import annotations

import argparse
import base64
import resource
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from rapidfuzz.distance import Levenshtein

from bench.ocr_images import Sample, fonts, sample
from metacortex import ocr
from metacortex.composition import build_service
from metacortex.config import Settings
from metacortex.errors import InvalidArgument
from metacortex.service import Access


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def accuracy(read: str, truth: str) -> float:
    read, truth = " ".join(read.split()), " ".join(truth.split())
    return max(0.0, 1.0 - Levenshtein.distance(read, truth) / max(len(truth), 1))


def numbers(text: str) -> list[float]:
    return [float(part) for part in text.split(",") if part]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="16,24,36", help="font sizes, pixels")
    parser.add_argument("--angles", default="0,3,90,180", help="rotations, degrees")
    parser.add_argument("--noise", default="0,0.04", help="shares of pixels made noise")
    args = parser.parse_args()

    samples: list[Sample] = []
    for font in fonts():
        for size in numbers(args.sizes):
            for angle in numbers(args.angles):
                for noise in numbers(args.noise):
                    index = len(samples)
                    samples.append(
                        sample(index, font=font, size=int(size), angle=angle, noise=noise)
                    )
    with tempfile.TemporaryDirectory() as directory:
        before = rss_mb()
        settings = Settings(_env_file=None, metacortex_data_dir=Path(directory))  # type: ignore[call-arg]
        service = build_service(settings)
        admin = Access.admin()
        service.save(  # loads the OCR models
            admin,
            content="warm-up",
            image_base64=base64.b64encode(samples[0].png).decode(),
            image_mime_type="image/png",
        )
        loaded = rss_mb()
        rows: list[Row] = []
        for item in samples:
            start, cpu = time.perf_counter(), time.process_time()
            try:
                saved = service.save(
                    admin,
                    image_base64=base64.b64encode(item.png).decode(),
                    image_mime_type="image/png",
                )
            except InvalidArgument:  # no text read at all: refused
                rows.append(
                    Row(
                        item,
                        0.0,
                        False,
                        time.perf_counter() - start,
                        None,
                        time.process_time() - cpu,
                    )
                )
                continue
            seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
            text = saved["item"]["content"].removeprefix(ocr.TEXT_HEADING).strip()
            rows.append(
                Row(
                    item,
                    accuracy(text, item.text),
                    item.key in text,
                    seconds,
                    saved["item"]["id"],
                    cpu,
                )
            )
        for row in rows:
            found = service.search(admin, query=row.sample.key, limit=1)["matches"]
            row.first = (
                row.memory_id is not None and bool(found) and found[0]["id"] == row.memory_id
            )
        service.store.close()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    print(f"OCR of {len(samples)} generated images (fonts: {', '.join(fonts())})")
    report("all", rows)
    for name, key in (
        ("font", lambda r: r.sample.font),
        ("size", lambda r: f"{r.sample.size}px"),
        ("angle", lambda r: f"{r.sample.angle:g} deg"),
        ("noise", lambda r: f"noise {r.sample.noise:g}"),
    ):
        groups: dict[str, list[Row]] = defaultdict(list)
        for row in rows:
            groups[str(key(row))].append(row)
        for group, members in groups.items():
            report(f"  {name} {group}", members)
    print(
        f"memory: RSS {before:.0f} MB before the service, {loaded:.0f} MB with the local "
        f"embedding and OCR models loaded, peak {peak:.0f} MB"
    )
    return 0


@dataclass
class Row:
    sample: Sample
    accuracy: float
    key_read: bool
    seconds: float
    memory_id: str | None
    cpu: float = 0.0
    first: bool = False


def report(label: str, rows: list[Row]) -> None:
    times = sorted(row.seconds for row in rows)
    print(
        f"{label:<28} {len(rows):>4} images  chars {statistics.mean(r.accuracy for r in rows):.3f} "
        f"(median {statistics.median(r.accuracy for r in rows):.3f})  key read "
        f"{sum(r.key_read for r in rows) / len(rows):.2f}  rank 1 "
        f"{sum(r.first for r in rows) / len(rows):.2f}  save median "
        f"{statistics.median(times):.2f} s, p95 {times[int(0.95 * (len(times) - 1))]:.2f} s, "
        f"CPU median {statistics.median(r.cpu for r in rows):.2f} s"
    )


if __name__ == "__main__":
    raise SystemExit(main())
