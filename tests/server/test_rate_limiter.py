"""The rate limiter's memory is bounded (issue 19 item 12): ``guard/ratelimit.py``.

The counterpart is an attacker choosing keys (30 KB addresses once grew the
sign-in limiter by 150 MB in 20 s). The clock is a plain function of time passed
in, so a minute passes without waiting for it.
"""

from __future__ import annotations

import gc
import tracemalloc

from metacortex.guard import ratelimit
from metacortex.guard.ratelimit import MAX_KEY_CHARS, RateLimiter


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_thousand_30_kb_keys_hold_less_than_a_megabyte() -> None:
    limiter = RateLimiter()
    gc.collect()
    tracemalloc.start()
    try:
        for n in range(1000):
            limiter.acquire(f"ip:{n}" + "x" * 30_000, 5)
        snapshot = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    # What is still held of what this test and the limiter allocated (other threads of
    # the test process allocate too, elsewhere).
    mine = snapshot.filter_traces(
        [tracemalloc.Filter(True, __file__), tracemalloc.Filter(True, ratelimit.__file__)]
    )
    held = sum(stat.size for stat in mine.statistics("filename"))

    assert held < 1_000_000
    assert len(limiter) == 1000


def test_a_long_key_is_still_limited_as_itself() -> None:
    limiter = RateLimiter()
    key = "ip:" + "y" * (10 * MAX_KEY_CHARS)

    assert [limiter.acquire(key, 2) for _ in range(3)][:2] == [None, None]
    assert limiter.acquire(key, 2) is not None
    assert limiter.acquire(key[:-1] + "z", 2) is None  # a different long key: its own bucket


def test_past_max_keys_the_least_recently_used_bucket_makes_room() -> None:
    clock = Clock()
    limiter = RateLimiter(max_keys=100, clock=clock)
    limiter.acquire("overall", 1)
    for n in range(1000):
        limiter.acquire(f"ip:{n}", 5)
        if n % 50 == 0:
            assert limiter.acquire("overall", 1) is not None  # kept: it stays in use

    assert len(limiter) == 100


def test_a_bucket_untouched_for_a_minute_is_forgotten_and_a_busy_one_is_not() -> None:
    clock = Clock()
    limiter = RateLimiter(clock=clock)
    for _ in range(5):
        limiter.acquire("ip:quiet", 5)
    assert limiter.acquire("ip:busy", 1) is None
    clock.now += 59.0
    assert limiter.acquire("ip:busy", 1) is not None  # not refilled yet
    assert len(limiter) == 2
    clock.now += 1.0

    limiter.acquire("ip:other", 5)

    assert len(limiter) == 2  # "quiet" refilled completely, so it is gone
    assert limiter.acquire("ip:quiet", 5) is None  # and starts full, as it would have been
