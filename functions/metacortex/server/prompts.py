"""The ``correct_memory`` prompt: a ready-made instruction to replace a wrong memory.

It produces one user message telling the model to save the corrected memory,
deprecate the wrong one as ``corrected`` (superseded by the new id), and report
both ids. It is offered only where both tools it relies on are available.
Bad arguments are JSON-RPC ``invalid params`` errors: prompts have no
``isError`` result.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

import mcp_types as types
from mcp.shared.exceptions import MCPError

from metacortex.domain import limits
from metacortex.errors import InvalidArgument
from metacortex.server.profiles import Profile

PROMPT_NAME: Final = "correct_memory"
_NEEDS: Final = frozenset({"save_context", "deprecate_context"})

PROMPT: Final = types.Prompt(
    name=PROMPT_NAME,
    title="Correct a memory",
    description=(
        "Replace a memory that is wrong: save the corrected version, deprecate the wrong one "
        "as 'corrected' (superseded by the new one), and report both ids."
    ),
    arguments=[
        types.PromptArgument(
            name="incorrect_memory_id", description="Id of the wrong memory.", required=True
        ),
        types.PromptArgument(
            name="corrected_content",
            description="The correct memory, self-contained.",
            required=True,
        ),
        types.PromptArgument(
            name="topic", description="Topic of the corrected memory.", required=False
        ),
        types.PromptArgument(
            name="valid_from",
            description="ISO 8601 instant the corrected fact starts being true.",
            required=False,
        ),
        types.PromptArgument(
            name="valid_until",
            description="ISO 8601 instant the corrected fact stops being true.",
            required=False,
        ),
    ],
)


def prompts_for(profile: Profile) -> list[types.Prompt]:
    return [PROMPT.model_copy(deep=True)] if profile.allowed_tools >= _NEEDS else []


def render(
    profile: Profile, name: str, arguments: Mapping[str, str] | None
) -> types.GetPromptResult:
    if name != PROMPT_NAME or not profile.allowed_tools >= _NEEDS:
        raise MCPError(types.INVALID_PARAMS, f"unknown prompt {name[:64]!r}")
    args = dict(arguments or {})
    try:
        save_arguments = _save_arguments(args)
        wrong_id = limits.check_id(args.get("incorrect_memory_id", ""), "incorrect_memory_id")
    except InvalidArgument as error:
        raise MCPError(types.INVALID_PARAMS, error.message) from None
    unknown = sorted(set(args) - {argument.name for argument in PROMPT.arguments or ()})
    if unknown:
        raise MCPError(types.INVALID_PARAMS, f"unknown argument {unknown[0][:64]!r}")
    text = (
        f"The memory {wrong_id} is wrong. Correct it with the memory tools:\n"
        "1. Call save_context with exactly these arguments:\n"
        f"{json.dumps(save_arguments, ensure_ascii=False, indent=2)}\n"
        f"2. Call deprecate_context with id {json.dumps(wrong_id)}, superseding_id set to the "
        'id that save_context returned (item.id), and supersession_reason "corrected".\n'
        "3. Report both ids: the new memory's id and the deprecated memory's id. If a step "
        "fails, stop and report the error instead."
    )
    return types.GetPromptResult(
        description=f"Correct memory {wrong_id}",
        messages=[
            types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))
        ],
    )


def _save_arguments(args: Mapping[str, str]) -> dict[str, Any]:
    content = limits.check_content(args.get("corrected_content", "")).strip()
    if not content:
        raise InvalidArgument("corrected_content is required")
    save: dict[str, Any] = {"content": content}
    topic = args.get("topic")
    if topic:
        save["topic"] = limits.check_topic(topic)
    valid_from = limits.parse_instant(args.get("valid_from") or None, "valid_from")
    valid_until = limits.parse_instant(args.get("valid_until") or None, "valid_until")
    limits.check_validity(valid_from, valid_until)
    if valid_from is not None:
        save["valid_from"] = args["valid_from"]
    if valid_until is not None:
        save["valid_until"] = args["valid_until"]
    save["origin"] = "user_asserted"
    return save
