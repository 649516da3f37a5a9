"""A server's status lines (``metacortex: ...`` on stderr), apart from its banner on
stdout: what ``serve`` is doing while it starts and stops."""

from __future__ import annotations

import sys


def status(message: str) -> None:
    print(f"metacortex: {message}", file=sys.stderr, flush=True)
