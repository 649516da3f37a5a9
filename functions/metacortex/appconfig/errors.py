"""What ``metacortex init`` refuses."""

from __future__ import annotations

from metacortex.errors import FailedPrecondition


class Malformed(FailedPrecondition):
    """An existing configuration file its application's format does not allow: it is
    left exactly as it is."""


class Refused(FailedPrecondition):
    """A path init does not write (a link, a directory, a read-only file): it is left
    exactly as it is, and the message says what to do instead."""
