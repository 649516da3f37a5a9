"""Instants as every store and the wire keep them: UTC, milliseconds, a ``Z`` suffix.
Below the record and its occurrence, which both write them."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now() -> datetime:
    """Now, in UTC, truncated to milliseconds (the precision every store keeps)."""
    now = datetime.now(UTC)
    return now.replace(microsecond=(now.microsecond // 1000) * 1000)


def to_wire_time(value: datetime) -> str:
    """ISO 8601 UTC with millisecond precision and a ``Z`` suffix."""
    value = value.astimezone(UTC)
    # Four-digit year always (strftime's %Y gives "1" for year 1 on glibc).
    return (
        f"{value.year:04d}-"
        + value.strftime("%m-%dT%H:%M:%S.")
        + (f"{value.microsecond // 1000:03d}Z")
    )
