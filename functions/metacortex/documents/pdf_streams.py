"""A decompression budget for pdfminer.six's Flate streams.

Trigger: a 10 KB PDF can hold a Flate stream that inflates to gigabytes, and
pdfminer inflates each stream in one ``zlib.decompress`` call before anything can
look at its size. Why here: pdfminer has no size limit of its own and calls the
``zlib`` module it imported (``pdfminer.pdftypes.zlib``), so that name is pointed at
this stand-in, which inflates at most what is left of the current document's
budget and raises ``ExpansionExceeded`` past it. Outcome: a Flate bomb stops after
``DocumentLimits.expansion_budget`` bytes, long before the memory cap of the
extraction process would. Outside ``expansion_budget`` (any other pdfminer user in
the process) it behaves exactly like ``zlib``. Other filters (LZW, run-length) are
left to the memory cap and the deadline: generators use Flate for text.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

import pdfminer.pdftypes


class ExpansionExceeded(Exception):
    """The document's streams inflate past its budget."""


@dataclass(slots=True)
class _Budget:
    left: int

    def spend(self, produced: int) -> None:
        self.left -= produced
        if self.left < 0:
            raise ExpansionExceeded


_BUDGET: ContextVar[_Budget | None] = ContextVar("pdf_expansion_budget", default=None)


class _BoundedDecompressor:
    """``zlib.decompressobj()`` that spends the budget (pdfminer's fallback for
    streams with a broken checksum feeds one of these byte by byte)."""

    def __init__(self, budget: _Budget) -> None:
        self._inner = zlib.decompressobj()
        self._budget = budget

    def decompress(self, data: bytes, max_length: int = 0) -> bytes:
        cap = self._budget.left + 1
        out = self._inner.decompress(data, min(max_length, cap) if max_length else cap)
        self._budget.spend(len(out))
        if self._inner.unconsumed_tail:
            raise ExpansionExceeded
        return out

    def flush(self) -> bytes:
        out = self._inner.flush()
        self._budget.spend(len(out))
        return out

    @property
    def eof(self) -> bool:
        return self._inner.eof


class _BoundedZlib:
    """What ``pdfminer.pdftypes`` sees as ``zlib``."""

    error = zlib.error

    @staticmethod
    def decompress(data: bytes) -> bytes:
        budget = _BUDGET.get()
        if budget is None:
            return zlib.decompress(data)
        inflater = _BoundedDecompressor(budget)
        out = inflater.decompress(data)
        if not inflater.eof:
            raise zlib.error("incomplete or truncated stream")  # as zlib.decompress says
        return out

    @staticmethod
    def decompressobj() -> object:
        budget = _BUDGET.get()
        return zlib.decompressobj() if budget is None else _BoundedDecompressor(budget)


pdfminer.pdftypes.zlib = _BoundedZlib  # type: ignore[attr-defined,assignment]


@contextmanager
def expansion_budget(limit: int) -> Iterator[None]:
    """Flate streams inflated inside this block may produce ``limit`` bytes in all."""
    token = _BUDGET.set(_Budget(limit))
    try:
        yield
    finally:
        _BUDGET.reset(token)
