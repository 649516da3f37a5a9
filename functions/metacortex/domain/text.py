"""Short text forms shown in result lists."""

from __future__ import annotations

import re

SUMMARY_CHARS = 220
_WHITESPACE = re.compile(r"\s+")


def summarize(content: str, limit: int = SUMMARY_CHARS) -> str:
    """Whitespace collapsed, at most ``limit`` characters (an ellipsis marks a cut)."""
    collapsed = _WHITESPACE.sub(" ", content).strip()
    if len(collapsed) <= limit:
        return collapsed
    return collapsed[: limit - 1].rstrip() + "…"
