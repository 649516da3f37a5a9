"""The prompts: ``correct_memory`` (here) and ``context`` (``mcp_surface/context_prompt.py``).

``correct_memory`` is a ready-made instruction to replace a wrong memory: one
user message telling the model to save the corrected memory, deprecate the
wrong one as ``corrected`` (superseded by the new id), and report both ids. It
is offered only where both tools it relies on are listed. With ``space`` it
corrects a memory of that space: both calls it asks for name it (else they would
act in the default space, where the memory is not), and the space is resolved as
the tools resolve it, for writing (a space not granted reads as a missing one; a
space granted read only is refused, saying so).

Bad arguments are JSON-RPC ``invalid params`` errors: prompts have no
``isError`` result. Every get becomes one ``memory_events`` record
(``event_type: "prompt_get"``).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from functools import partial
from typing import Any, Final

import anyio.to_thread
import mcp_types as types
from mcp.shared.exceptions import MCPError

from metacortex.access.model import Level
from metacortex.access.profiles import Profile
from metacortex.domain import limits
from metacortex.errors import InvalidArgument, MetaCortexError, Unavailable
from metacortex.kernel.runtime import Runtime
from metacortex.mcp_surface import context_prompt
from metacortex.mcp_surface.recording import record_request
from metacortex.service import Access

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
        types.PromptArgument(
            name="space",
            description="The space the wrong memory is in (a key from list_spaces); "
            "your default when omitted.",
            required=False,
        ),
    ],
)


def prompts_for(profile: Profile) -> list[types.Prompt]:
    """What ``prompts/list`` shows this profile."""
    offered = [PROMPT] if set(profile.tools) >= _NEEDS else []
    offered += [context_prompt.PROMPT] if context_prompt.offered(profile) else []
    return [prompt.model_copy(deep=True) for prompt in offered]


async def get_prompt(
    runtime: Runtime,
    profile: Profile,
    name: str,
    arguments: Mapping[str, str] | None,
    protocol_version: str | None = None,
) -> types.GetPromptResult:
    """``prompts/get``: the prompt, or a JSON-RPC error; recorded."""
    started = time.perf_counter()
    offered = [prompt.name for prompt in prompts_for(profile)]
    if name not in offered:
        message = f"unknown prompt {name[:64]!r}; this endpoint offers: " + (
            ", ".join(offered) or "no prompts"
        )
        _record(
            runtime, profile, "unknown", {}, started, protocol_version, InvalidArgument(message)
        )
        raise MCPError(types.INVALID_PARAMS, message)
    args = dict(arguments or {})
    summary: dict[str, Any] = {}
    try:
        if name == PROMPT_NAME:
            result = render(args, profile.access)
        else:
            service = await runtime.ready_service()
            result, summary = await anyio.to_thread.run_sync(
                partial(context_prompt.render, service, profile, args)
            )
    except MetaCortexError as failure:
        _record(runtime, profile, name, args, started, protocol_version, failure)
        code = types.INTERNAL_ERROR if failure.retryable else types.INVALID_PARAMS
        raise MCPError(code, failure.message) from None
    except Exception:
        logging.getLogger("metacortex.server").exception("prompt %s failed unexpectedly", name)
        unexpected = Unavailable("the memory service failed unexpectedly; try again later")
        _record(runtime, profile, name, args, started, protocol_version, unexpected)
        raise MCPError(types.INTERNAL_ERROR, unexpected.message) from None
    _record(runtime, profile, name, args, started, protocol_version, None, summary)
    return result


def _record(
    runtime: Runtime,
    profile: Profile,
    name: str,
    args: Mapping[str, Any],
    started: float,
    protocol_version: str | None,
    failure: MetaCortexError | None,
    summary: Mapping[str, Any] | None = None,
) -> None:
    record_request(
        runtime,
        profile,
        "prompt_get",
        name,
        args,
        started,
        protocol_version,
        response=summary if failure is None else None,
        error=failure.to_payload()["error"] if failure is not None else None,
    )


def render(args: Mapping[str, str], access: Access) -> types.GetPromptResult:
    """The ``correct_memory`` prompt; InvalidArgument for bad arguments, and the tools'
    own errors for a ``space`` the caller may not write (``Access.space``)."""
    unknown = sorted(set(args) - {argument.name for argument in PROMPT.arguments or ()})
    if unknown:
        raise InvalidArgument(f"unknown argument {unknown[0][:64]!r}")
    space = access.space(args["space"], Level.WRITE) if args.get("space") else None
    save_arguments = _save_arguments(args)
    wrong_id = limits.check_id(args.get("incorrect_memory_id", ""), "incorrect_memory_id")
    in_space = ""
    if space is not None:
        save_arguments["space"] = space
        in_space = f", space {json.dumps(space)}"
    text = (
        f"The memory {wrong_id} is wrong. Correct it with the memory tools:\n"
        "1. Call save_context with exactly these arguments:\n"
        f"{json.dumps(save_arguments, ensure_ascii=False, indent=2)}\n"
        f"2. Call deprecate_context with id {json.dumps(wrong_id)}{in_space}, superseding_id "
        "set to the id that save_context returned (item.id), and supersession_reason "
        '"corrected".\n'
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
