"""What ``metacortex init`` refuses."""

from __future__ import annotations

from metacortex.errors import FailedPrecondition


class Malformed(FailedPrecondition):
    """An existing configuration file its application's format does not allow: it is
    left exactly as it is."""
