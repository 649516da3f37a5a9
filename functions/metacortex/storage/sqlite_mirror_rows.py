"""Rows of the ``memories`` table, as the vector mirror reads them, turned into columns."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import numpy as np

from metacortex.domain.records import SupersessionReason
from metacortex.storage.sqlite_vectors import (
    NO_LOWER,
    NO_UPPER,
    NONE,
    ORIGIN_CODES,
    STATE_CODES,
    VectorRows,
)

_STATES: Final = {state.value: code for state, code in STATE_CODES.items()}
_ORIGINS: Final = {origin.value: code for origin, code in ORIGIN_CODES.items()}
_CORRECTED: Final = SupersessionReason.CORRECTED.value


def mirror_rows(rows: Sequence[Sequence[Any]], dimension: int) -> VectorRows:
    """Columns of rows (seq, embedding, module_name, branch_state, origin, created_at,
    valid_from, valid_until, supersession_reason, change_seq, space) as read from
    ``memories``."""
    blobs = [row[1] for row in rows]
    width = 4 * dimension
    for row, blob in zip(rows, blobs, strict=True):
        if len(blob) != width:
            raise ValueError(
                f"memory seq {row[0]} has a {len(blob)}-byte vector; the store's "
                f"dimension {dimension} needs {width}: run `metacortex reembed`"
            )
    return VectorRows(
        seqs=np.fromiter((row[0] for row in rows), np.int64, len(rows)),
        embeddings=np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(rows), dimension),
        topics=[row[2] for row in rows],
        spaces=[row[10] for row in rows],
        states=np.fromiter((_STATES[row[3]] for row in rows), np.int8, len(rows)),
        origins=np.fromiter(
            (NONE if row[4] is None else _ORIGINS[row[4]] for row in rows), np.int8, len(rows)
        ),
        created=np.fromiter((row[5] for row in rows), np.int64, len(rows)),
        valid_from=np.fromiter(
            (NO_LOWER if row[6] is None else row[6] for row in rows), np.int64, len(rows)
        ),
        valid_until=np.fromiter(
            (NO_UPPER if row[7] is None else row[7] for row in rows), np.int64, len(rows)
        ),
        corrected=np.fromiter((row[8] == _CORRECTED for row in rows), np.bool_, len(rows)),
    )
