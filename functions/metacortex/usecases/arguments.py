"""A tool argument read into one of the domain's enumerations, or a clear error."""

from __future__ import annotations

from typing import TypeVar

from metacortex.domain.records import BranchState, Initiator, Origin, SupersessionReason
from metacortex.errors import InvalidArgument

E = TypeVar("E", BranchState, Origin, SupersessionReason, Initiator)


def parse_enum(enum_type: type[E], value: str | None, field_name: str) -> E | None:
    if value is None:
        return None
    try:
        return enum_type(value)
    except ValueError:
        allowed = ", ".join(member.value for member in enum_type)
        raise InvalidArgument(f"{field_name} must be one of {allowed}; got {value!r}") from None
