"""Per-profile request rate limits: one token bucket per profile.

A bucket holds up to a minute's worth of requests and refills continuously,
so a client may burst up to its per-minute limit and then proceeds at the
sustained rate. Buckets live in process memory: with several server
processes (Cloud Functions instances) each enforces the limit on its own
share of the traffic. Used only from the event loop, so no lock is needed.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(slots=True)
class _Bucket:
    tokens: float
    updated: float


class RateLimiter:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._buckets: dict[str, _Bucket] = {}

    def acquire(self, key: str, per_minute: int) -> int | None:
        """Take one token; None when allowed, else whole seconds until one is available."""
        now = self._clock()
        rate = per_minute / 60.0
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = _Bucket(tokens=float(per_minute), updated=now)
        bucket.tokens = min(float(per_minute), bucket.tokens + (now - bucket.updated) * rate)
        bucket.updated = now
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            return None
        return max(1, math.ceil((1.0 - bucket.tokens) / rate))
