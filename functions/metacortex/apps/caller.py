"""What a view is told about the caller, in a linked tool result's ``_meta``.

A view offers an action (save, correct, deprecate) only where the credential
may take it: the tools it holds and its level in each space. This travels in
the result's ``_meta`` (hosts hand it to the view, never to the model), so
``content`` and ``structuredContent`` stay exactly what they were. It is a
courtesy to the person, not a check: every action is a tool call that the
server checks again as it checks any other.
"""

from __future__ import annotations

from typing import Any, Final

from metacortex.access.profiles import Profile
from metacortex.apps.views import VIEW_OF_TOOL

CALLER_KEY: Final = "metacortex/caller"


def result_meta(profile: Profile, tool_name: str) -> dict[str, Any] | None:
    """``{"metacortex/caller": {...}}`` for a tool with a view; None otherwise."""
    if tool_name not in VIEW_OF_TOOL:
        return None
    access = profile.access
    return {
        CALLER_KEY: {
            "tools": list(profile.tools),
            "spaces": {key: level.word for key, level in sorted(profile.levels.items())},
            "default_space": access.default_space,
            "may_write_lifecycle": profile.may_write_lifecycle,
        }
    }
