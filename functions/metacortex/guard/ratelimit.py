"""Request rate limits: one token bucket per key, in bounded memory.

A bucket holds up to a minute's worth of requests and refills continuously,
so a client may burst up to its per-minute limit and then proceeds at the
sustained rate. Buckets live in process memory: with several server
processes (Cloud Functions instances) each enforces the limit on its own
share of the traffic. Used only from the event loop, so no lock is needed.

Keys can come from anyone (a client address, a claimed id), so memory is
bounded three ways:

* a key longer than ``MAX_KEY_CHARS`` is kept as its sha256 digest;
* a bucket untouched for a minute has refilled completely, so it is the same
  as no bucket at all and is dropped (buckets are kept in least-recently-used
  order, so this looks only at the oldest ones);
* past ``max_keys`` buckets the least recently used one is dropped. That key
  then starts again with a full bucket: an attacker needs ``max_keys`` other
  keys within a minute to get there, and each of those is limited too.

Per-key cost is measured in ``bench/abuse.py limiter`` (docs/SERVER.md).
"""

from __future__ import annotations

import hashlib
import math
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

DEFAULT_MAX_KEYS: Final = 10_000
MAX_KEY_CHARS: Final = 128
_REFILL_SECONDS: Final = 60.0  # an untouched bucket is full again after this


@dataclass(slots=True)
class _Bucket:
    tokens: float
    updated: float


class RateLimiter:
    def __init__(
        self,
        *,
        max_keys: int = DEFAULT_MAX_KEYS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_keys < 1:
            raise ValueError("max_keys must be at least 1")
        self._clock = clock
        self._max_keys = max_keys
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()

    def __len__(self) -> int:
        """Buckets held now (at most ``max_keys``)."""
        return len(self._buckets)

    def acquire(self, key: str, per_minute: int) -> int | None:
        """Take one token; None when allowed, else whole seconds until one is available."""
        now = self._clock()
        self._forget_refilled(now)
        key = _bounded(key)
        rate = per_minute / 60.0
        bucket = self._buckets.pop(key, None)
        if bucket is None:
            if len(self._buckets) >= self._max_keys:
                self._buckets.popitem(last=False)
            bucket = _Bucket(tokens=float(per_minute), updated=now)
        self._buckets[key] = bucket  # now the most recently used
        bucket.tokens = min(float(per_minute), bucket.tokens + (now - bucket.updated) * rate)
        bucket.updated = now
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            return None
        return max(1, math.ceil((1.0 - bucket.tokens) / rate))

    def _forget_refilled(self, now: float) -> None:
        while self._buckets:
            oldest = next(iter(self._buckets.values()))
            if now - oldest.updated < _REFILL_SECONDS:
                return
            self._buckets.popitem(last=False)


def _bounded(key: str) -> str:
    if len(key) <= MAX_KEY_CHARS:
        return key
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
    return f"sha256:{digest}"
