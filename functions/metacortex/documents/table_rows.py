"""A table row as text that stands alone: each value with its column's header."""

from __future__ import annotations

from collections.abc import Sequence


def row_text(header: Sequence[str], row: Sequence[str]) -> str:
    """``Name: Ada; Born: 1815``; a value without a header is kept bare."""
    parts = []
    for index, value in enumerate(row):
        value = " ".join(value.split())
        if not value:
            continue
        name = " ".join(header[index].split()) if index < len(header) else ""
        parts.append(f"{name}: {value}" if name else value)
    return "; ".join(parts)
