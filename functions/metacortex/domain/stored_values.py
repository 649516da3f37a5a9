"""Values of a stored record read strictly: the right type, or ``Refused`` naming the field.

Records that were not written by this server's tools (an archive, another
program's Firestore documents) are read field by field through these helpers.
Nothing is coerced: a string where a list of ids belongs is not iterated into
characters, a list where a topic belongs is not turned into its repr, a number
that is not an instant is not clamped.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any, Final, TypeVar

from metacortex.domain.limits import parse_instant
from metacortex.errors import InvalidArgument

E = TypeVar("E", bound=StrEnum)

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


class Refused(ValueError):
    """A record that is not taken; the message says which field and why."""


def kind(value: Any) -> str:
    if value is None:
        return "missing"
    names = {str: "a string", bool: "a boolean", list: "a list", dict: "a map"}
    return names.get(type(value), f"a {type(value).__name__}")


def text(value: Any, name: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise Refused(f"{name} is {kind(value)}, not a string")


def strings(value: Any, name: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list | tuple):
        raise Refused(f"{name} is {kind(value)}, not a list of strings")
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise Refused(f"{name}[{index}] is {kind(item)}, not a string")
    return tuple(value)


def member(enum_type: type[E], value: Any, name: str) -> E:
    allowed = ", ".join(item.value for item in enum_type)
    if not isinstance(value, str):
        raise Refused(f"{name} is {kind(value)}, not one of {allowed}")
    try:
        return enum_type(value)
    except ValueError:
        raise Refused(f"{name} {value!r} is not one of {allowed}") from None


def optional_member(enum_type: type[E], value: Any, name: str) -> E | None:
    return None if value is None else member(enum_type, value, name)


def number(value: Any, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Refused(f"{name} is {kind(value)}, not a number")
    if not math.isfinite(value):
        raise Refused(f"{name} is {value!r}, not a finite number")
    return float(value)


def instant(value: Any, name: str, notes: list[str] | None = None) -> datetime | None:
    """An instant from epoch milliseconds, a ``datetime`` (a Firestore Timestamp) or ISO
    8601 text, in UTC at millisecond precision; a conversion is noted in ``notes``."""
    if value is None:
        return None
    label = name.rsplit(".", 1)[-1]
    if isinstance(value, bool):
        raise Refused(f"{name} is a boolean, not a time")
    if isinstance(value, int | float):
        if not math.isfinite(value):
            raise Refused(f"{name} {value!r} is not a time")
        try:
            result = _EPOCH + timedelta(milliseconds=int(value))
        except OverflowError:
            raise Refused(f"{name} {value!r} (epoch ms) is outside years 1-9999") from None
        if notes is not None:
            notes.append(f"{label}: epoch ms -> Timestamp")
        return result
    if isinstance(value, datetime):
        # A plain datetime: the Firestore client's subclass does not survive replace().
        value = datetime(*value.timetuple()[:6], value.microsecond, tzinfo=value.tzinfo)
    if isinstance(value, datetime | str):
        try:
            parsed = parse_instant(value, name)
        except InvalidArgument as error:
            shown = f"; got {value[:80]!r}" if isinstance(value, str) else ""
            raise Refused(error.message + shown) from None
        if isinstance(value, str) and notes is not None:
            notes.append(f"{label}: ISO text -> Timestamp")
        return parsed
    raise Refused(f"{name} is {kind(value)}, not a time")
