"""Progress for long operator tasks: a bar with rate and ETA on a terminal, quiet otherwise."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from tqdm import tqdm


class Progress(Protocol):
    def advance(self, count: int) -> None: ...


class _Silent:
    def advance(self, count: int) -> None:
        return None


class _Bar:
    def __init__(self, bar: tqdm[Any]) -> None:
        self._bar = bar

    def advance(self, count: int) -> None:
        self._bar.update(count)


@contextmanager
def progress(label: str, total: int | None, unit: str = "memory") -> Iterator[Progress]:
    """A tqdm bar on stderr when it is a terminal; nothing in pipes, tests and CI logs."""
    if not sys.stderr.isatty():
        yield _Silent()
        return
    with tqdm(total=total, desc=label, unit=f" {unit}", file=sys.stderr, dynamic_ncols=True) as bar:
        yield _Bar(bar)
