"""The model-facing surface as ``tests/server/snapshots/tool_surface.json`` freezes it.

Tests that check which tools an endpoint lists compare with this one file
(``test_tool_surface.py`` keeps it equal to what the server serves) instead of
writing the lists out again; the tool catalogue (``metacortex.tool_catalogue``)
is where the lists come from.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any, Final

SNAPSHOT: Final = Path(__file__).parent / "snapshots" / "tool_surface.json"


@cache
def _frozen() -> dict[str, Any]:
    frozen: dict[str, Any] = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    return frozen


def frozen_surface(profile_id: str) -> dict[str, Any]:
    """tools/list, resources, templates and prompts of a profile of the test settings
    (``default``: the admin endpoint; ``web``, ``reader``; ``laptop``: a stored client
    with the default tools)."""
    surface: dict[str, Any] = json.loads(json.dumps(_frozen()[profile_id]))
    return surface


def tool_names(profile_id: str) -> list[str]:
    """The tools the profile's endpoint lists, in tools/list order."""
    return [tool["name"] for tool in frozen_surface(profile_id)["tools"]]
