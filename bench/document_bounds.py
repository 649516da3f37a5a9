"""What one small DOCX that expands to thousands of passages costs a server (issue 37).

The review's case: a 29.7 KB DOCX became 6,186 passages, 819 s of server time and
0.9 GB more server memory. Here python-docx writes one like it (``expanding_docx``: the
same paragraph 6,200 times, 64 KB, 5.5 million characters) and ``create_document`` adds
it to a fresh SQLite store with the local embedding model, in a child process each:

- ``bounded``: the default limits (``METACORTEX_DOCUMENT_MAX_CHARS`` 5,000,000, ...);
- ``unbounded``: the limits raised out of reach, as before issue 37.

Printed per run: the outcome, the wall time of the call, and the child's peak RSS
(``ru_maxrss``) before and after it.

    .venv/bin/python bench/document_bounds.py [--only bounded|unbounded]
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from docx import Document as WordDocument

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def expanding_docx(paragraphs: int = 6_200) -> bytes:
    """A small Word file that expands to thousands of passages: the same 896-character
    paragraph again and again (it compresses to almost nothing)."""
    document = WordDocument()
    line = "The quarterly figures repeat the same line for the audit trail. " * 14
    for _ in range(paragraphs):
        document.add_paragraph(line)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


_CHILD = """
import json, resource, sys, time
from pathlib import Path
sys.path.insert(0, {root!r})
from metacortex.documents import DocumentLimits
from metacortex.errors import MetaCortexError
from metacortex.providers.local import MiniLMEmbedder
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import Access, MemoryService
from metacortex.storage.sqlite import SQLiteStore
from metacortex.usecases.options import ServiceOptions

raised = dict(max_chars=10**9, max_passages=10**7, embed_seconds=3600.0)
limits = DocumentLimits(**raised) if {unbounded!r} else DocumentLimits()
embedder = MiniLMEmbedder.load()
service = MemoryService(
    SQLiteStore(Path({database!r})), embedder, merger=SentenceUnionMerger(),
    options=ServiceOptions(document_limits=lambda: limits),
)
data = Path({docx!r}).read_bytes()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.monotonic()
try:
    result = service.create_document(Access.admin(), data=data, media_type=(
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document"))
    outcome = f"{{result['write_status']}}: {{result['document']['passage_count']}} passages"
except MetaCortexError as error:
    outcome = f"refused: {{error.message}}"
seconds = time.monotonic() - started
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({{"outcome": outcome, "seconds": seconds, "rss_before_mb": before / 1024,
                  "rss_after_mb": after / 1024}}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--only", choices=("bounded", "unbounded"), help="run one case")
    only = parser.parse_args().only
    data = expanding_docx()
    with tempfile.TemporaryDirectory() as directory:
        docx = Path(directory) / "expanding.docx"
        docx.write_bytes(data)
        print(f"DOCX: {len(data):,} bytes")
        for name, unbounded in (("bounded", False), ("unbounded", True)):
            if only is not None and name != only:
                continue
            script = _CHILD.format(
                root=str(ROOT),
                unbounded=unbounded,
                database=str(Path(directory) / f"{name}.sqlite3"),
                docx=str(docx),
            )
            ran = subprocess.run(  # noqa: S603 - this interpreter, a fixed script
                [sys.executable, "-c", script], capture_output=True, text=True, check=True
            )
            figures = json.loads(ran.stdout.strip().splitlines()[-1])
            print(
                f"{name:>9}: {figures['seconds']:7.1f} s, peak RSS "
                f"{figures['rss_before_mb']:.0f} -> {figures['rss_after_mb']:.0f} MB; "
                f"{figures['outcome'][:140]}"
            )


if __name__ == "__main__":
    main()
