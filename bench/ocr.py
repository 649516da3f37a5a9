"""Text in images read offline (issue 40): accuracy, findability, time and memory.

Generates cards of rendered text (``bench/ocr_images.py``: title, a line with a made-up
key phrase, words, a total) in every font available (Pillow's own and the DejaVu
fonts present), at several sizes, rotations and noise levels. For each image:

- character accuracy: 1 - (Levenshtein distance / characters) between the text read
  and the text drawn, whitespace collapsed;
- whether the key phrase was read exactly;
- time to read it (``OcrEngine.read``, one image at a time, after a warm-up image).

Then every image is saved, with no words of the caller's, through the offline default
service (SQLite, the local embedding model, OCR: what ``metacortex serve`` builds), and
each key phrase is searched for: the share found at rank 1. Memory: this process's
resident size before the OCR models load, after, and at its peak.

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
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from rapidfuzz.distance import Levenshtein

from bench.ocr_images import Sample, fonts, sample
from metacortex import ocr
from metacortex.composition import build_service
from metacortex.config import Settings
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
    parser.add_argument("--no-search", action="store_true", help="skip the search step")
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
    before = rss_mb()
    engine = ocr.OcrEngine()
    engine.read(samples[0].png)  # loads the models
    loaded = rss_mb()
    results: list[tuple[Sample, float, bool, float]] = []
    for item in samples:
        start = time.perf_counter()
        text = engine.read(item.png)
        seconds = time.perf_counter() - start
        results.append((item, accuracy(text, item.text), item.key in text, seconds))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    def report(label: str, rows: list[tuple[Sample, float, bool, float]]) -> None:
        accs = [row[1] for row in rows]
        keys = sum(row[2] for row in rows)
        times = sorted(row[3] for row in rows)
        print(
            f"{label:<28} {len(rows):>4} images  chars {statistics.mean(accs):.3f} "
            f"(median {statistics.median(accs):.3f})  key read {keys / len(rows):.2f}  "
            f"time median {statistics.median(times):.2f} s, p95 "
            f"{times[int(0.95 * (len(times) - 1))]:.2f} s"
        )

    print(f"OCR of {len(samples)} generated images (fonts: {', '.join(fonts())})")
    report("all", results)
    for name, key in (
        ("font", lambda r: r[0].font),
        ("size", lambda r: f"{r[0].size}px"),
        ("angle", lambda r: f"{r[0].angle:g} deg"),
        ("noise", lambda r: f"noise {r[0].noise:g}"),
    ):
        groups: dict[str, list[tuple[Sample, float, bool, float]]] = defaultdict(list)
        for row in results:
            groups[str(key(row))].append(row)
        for group, rows in groups.items():
            report(f"  {name} {group}", rows)
    print(
        f"memory: RSS {before:.0f} MB before the models, {loaded:.0f} MB after one image, "
        f"peak {peak:.0f} MB"
    )
    if args.no_search:
        return 0

    with tempfile.TemporaryDirectory() as directory:
        settings = Settings(_env_file=None, metacortex_data_dir=Path(directory))  # type: ignore[call-arg]
        service = build_service(settings)
        admin = Access.admin()
        ids: list[str | None] = []
        for item in samples:
            try:
                saved = service.save(
                    admin,
                    image_base64=base64.b64encode(item.png).decode(),
                    image_mime_type="image/png",
                )
                ids.append(saved["item"]["id"])
            except Exception:  # noqa: BLE001 - an image with no text read is refused
                ids.append(None)
        first = 0
        by_angle: dict[float, list[bool]] = defaultdict(list)
        for item, memory_id in zip(samples, ids, strict=True):
            found = service.search(admin, query=item.key, limit=1)["matches"]
            hit = memory_id is not None and bool(found) and found[0]["id"] == memory_id
            first += hit
            by_angle[item.angle].append(hit)
        service.store.close()
    print(f"key phrase found at rank 1: {first}/{len(samples)} ({first / len(samples):.2f})")
    for angle, hits in sorted(by_angle.items()):
        print(f"  angle {angle:g} deg: {sum(hits) / len(hits):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
