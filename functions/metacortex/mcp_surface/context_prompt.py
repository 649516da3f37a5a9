"""The ``context`` prompt: the newest active memories of a topic (or of all), ready to attach.

It reads one space (its ``space`` argument, else the credential's default), and
ends by naming up to three of the caller's other spaces, the ones written to
most recently, so the model knows where else to look.

A user message holding the most recent active memories, newest first, whole,
until the next one would not fit ``max_chars`` (the caller's size budget,
counted in characters of the message's text, heading and closing note
included). When even the newest does not fit, it is cut to the budget, marked
with an ellipsis. The closing note says when older memories were left out, so
the model knows to search for them.

Offered where ``memory://recent`` is (a read tool and the ``active`` state);
the memories' content only where ``fetch_context`` is allowed, their summaries
otherwise, as ``memory://recent`` does (``mcp_surface/resources.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import mcp_types as types

from metacortex.access.model import Directory
from metacortex.access.profiles import Profile
from metacortex.domain import limits
from metacortex.domain.records import Attribution, Memory, to_wire_time
from metacortex.domain.text import summarize
from metacortex.errors import InvalidArgument
from metacortex.mcp_surface.resources import reads_bodies, reads_recent
from metacortex.service import MemoryService

PROMPT_NAME: Final = "context"
DEFAULT_MAX_CHARS: Final = 8_000
MIN_MAX_CHARS: Final = 1_000
MAX_MAX_CHARS: Final = 200_000
# At most this many memories are read (one store query); a budget larger than they
# need shows them all and says older ones exist.
MAX_MEMORIES: Final = 50
# Other spaces named at the end, and how many are looked at to rank them (one query each).
OTHER_SPACES: Final = 3
OTHER_SPACES_READ: Final = 12
_CLOSING_RESERVE: Final = 200  # room kept for the closing note

PROMPT: Final = types.Prompt(
    name=PROMPT_NAME,
    title="Memory context",
    description=(
        "The most recent active memories of a topic (or of every topic), newest first, "
        "ready to attach to a conversation, within a size budget."
    ),
    arguments=[
        types.PromptArgument(
            name="topic",
            description="Only memories of this topic (all topics when omitted).",
            required=False,
        ),
        types.PromptArgument(
            name="space",
            description="The space to read (a key from list_spaces); your default when omitted.",
            required=False,
        ),
        types.PromptArgument(
            name="max_chars",
            description=(
                f"Size budget of the message in characters, {MIN_MAX_CHARS}-{MAX_MAX_CHARS} "
                f"(default {DEFAULT_MAX_CHARS})."
            ),
            required=False,
        ),
    ],
)
_ARGUMENTS: Final = frozenset(argument.name for argument in PROMPT.arguments or ())


def offered(profile: Profile) -> bool:
    return reads_recent(profile)


def parse_arguments(arguments: Mapping[str, str] | None) -> tuple[str | None, int]:
    """``(topic, max_chars)``, or InvalidArgument saying what is wrong (``space`` is
    read by ``render``)."""
    args = dict(arguments or {})
    unknown = sorted(set(args) - _ARGUMENTS)
    if unknown:
        raise InvalidArgument(
            f"unknown argument {unknown[0][:64]!r}; accepted: {', '.join(sorted(_ARGUMENTS))}"
        )
    topic = args.get("topic") or None
    if topic is not None:
        topic = limits.check_topic(topic, "topic")
    raw = (args.get("max_chars") or "").strip()
    if not raw:
        return topic, DEFAULT_MAX_CHARS
    if not raw.isascii() or not raw.isdigit():
        raise InvalidArgument(f"max_chars must be a whole number of characters; got {raw[:40]!r}")
    budget = int(raw)
    if not MIN_MAX_CHARS <= budget <= MAX_MAX_CHARS:
        raise InvalidArgument(
            f"max_chars must be between {MIN_MAX_CHARS} and {MAX_MAX_CHARS}; got {budget}"
        )
    return topic, budget


def render(
    service: MemoryService, profile: Profile, arguments: Mapping[str, str] | None
) -> tuple[types.GetPromptResult, dict[str, Any]]:
    """The prompt for ``profile`` and a summary for its event (synchronous: one store
    query). InvalidArgument for bad arguments."""
    topic, budget = parse_arguments(arguments)
    access = profile.access
    space = access.space((arguments or {}).get("space") or None)
    recent = service.recent(access, topic=topic, limit=MAX_MEMORIES, space=space)
    bodies = reads_bodies(profile)
    where = f"the topic {topic!r}" if topic else "every topic"
    where += f" in the space {space!r}"
    others = _other_spaces(service, profile, space)
    if not recent.memories:
        text = f"MetaCortex holds no active memories about {where} yet."
        shown = 0
    else:
        text, shown = _fit(recent.memories, where, bodies, budget - len(others), access.names)
    left_out = shown < len(recent.memories) or recent.more
    if left_out:
        text += (
            f"\n\n(Only the {shown} most recent fit within {budget} characters; older ones "
            "exist: the memory tools find them.)"
        )
    text += others
    result = types.GetPromptResult(
        description=f"Recent memories of {where}",
        messages=[
            types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))
        ],
    )
    return result, {
        "space": space,
        "item_count": shown,
        "has_more": left_out,
        "chars": len(text),
    }


def _other_spaces(service: MemoryService, profile: Profile, space: str) -> str:
    """A closing line naming up to ``OTHER_SPACES`` other spaces the caller holds, those
    written to most recently first (one store query per space looked at)."""
    access = profile.access
    latest: list[tuple[Memory, str]] = []
    for key in [k for k in access.readable_spaces() if k != space][:OTHER_SPACES_READ]:
        newest = service.recent(access, limit=1, space=key).memories
        if newest:
            latest.append((newest[0], key))
    latest.sort(key=lambda pair: (pair[0].created_at, pair[1]), reverse=True)
    if not latest:
        return ""
    named = "; ".join(
        f"{key!r} ({_space_name(access.directory, key)}, "
        f"last saved {to_wire_time(memory.created_at)[:10]})"
        for memory, key in latest[:OTHER_SPACES]
    )
    return f"\n\nYou may also read other spaces (pass space to the memory tools): {named}."


def _space_name(directory: Directory, key: str) -> str:
    space = directory.spaces.get(key)
    return space.name if space is not None else key


def _fit(
    memories: list[Memory], where: str, bodies: bool, budget: int, names: Mapping[str, str]
) -> tuple[str, int]:
    kind = "memories" if bodies else "memory summaries (this endpoint does not offer the full text)"
    text = (
        f"Here is what MetaCortex remembers about {where}: the most recent active {kind}, "
        "newest first. They were saved earlier and may be outdated; prefer what the user "
        "says now."
    )
    limit = budget - _CLOSING_RESERVE
    shown = 0
    for memory in memories:
        block = _block(memory, bodies, names)
        if len(text) + len(block) > limit:
            if shown == 0:
                room = max(limit - len(text), 1)
                text += block[: room - 1].rstrip() + "…"
                shown = 1
            break
        text += block
        shown += 1
    return text, shown


def _name(who: Attribution, names: Mapping[str, str]) -> str:
    return names.get(who.person, who.person)


def _block(memory: Memory, bodies: bool, names: Mapping[str, str]) -> str:
    body = memory.content if bodies else summarize(memory.content)
    saved = f"saved {to_wire_time(memory.created_at)[:10]}"
    if memory.created_by is not None:
        saved += f" by {_name(memory.created_by, names)}"
    if memory.changed_by is not None:
        saved += f", changed by {_name(memory.changed_by, names)}"
    heading = f"{memory.topic} · {saved} · id {memory.id}"
    return f"\n\n## {heading}\n{body.strip()}"
