"""What the owner's commands on clients, spaces and people share.

Each opens the configured store (``--data-dir`` as ``serve`` finds it), runs one
change recorded as an ``owner_action`` event (ids only: never a token, an email
or a name), and says what it set: with ``--json`` one JSON object, else lines.
Levels are printed as the code computed them (``access.profiles.with_directory``
through ``ClientManager``), never worked out here.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any, TypeVar

from metacortex.access.model import Level, check_space_key
from metacortex.cli.data_dir import add_data_dir_option, settings_for
from metacortex.composition import build_store
from metacortex.config import Settings
from metacortex.errors import InvalidArgument, MetaCortexError
from metacortex.kernel.events import EventRecorder
from metacortex.storage.base import MemoryStore

T = TypeVar("T")


def add_common_options(parser: argparse.ArgumentParser) -> None:
    """``--json`` and ``--data-dir``, which every one of these commands takes."""
    parser.add_argument("--json", action="store_true", help="print one JSON object instead")
    add_data_dir_option(parser)


def add_spaces_option(parser: argparse.ArgumentParser, help_text: str) -> None:
    """``--space KEY[:read|:write]``, repeatable, into ``args.spaces``: (key, level or None)."""
    parser.add_argument(
        "--space",
        dest="spaces",
        metavar="KEY[:read|:write]",
        type=space_option,
        action="append",
        default=[],
        help=help_text,
    )


def with_store(args: argparse.Namespace, work: Callable[[Settings, MemoryStore], T]) -> T:
    settings = settings_for(args)
    store = build_store(settings)
    try:
        return work(settings, store)
    finally:
        store.close()


def store_name(settings: Settings) -> str:
    """Which store a command wrote to, in words an operator can check."""
    if settings.store_kind == "sqlite":
        return f"the SQLite store {settings.sqlite_path}"
    project = settings.google_cloud_project or "(the default project)"
    return f"Firestore (project {project}, database {settings.firestore_database})"


def applies_within(settings: Settings) -> str:
    return (
        "every server on this store applies it within "
        f"{settings.metacortex_client_refresh_seconds:g} s"
    )


def recorded(
    settings: Settings,
    store: MemoryStore,
    action: str,
    summary: Mapping[str, Any],
    change: Callable[[], T],
    *,
    space: str | None = None,
    answer: Callable[[T], Mapping[str, Any]] | None = None,
) -> T:
    """Run a change and record it as an ``owner_action`` event: ``summary`` (ids only)
    of what was asked, ``answer``'s summary of what was done (ids and counts only)."""
    events = EventRecorder(
        retention=timedelta(days=settings.metacortex_event_retention_days),
        retrieval_logging=False,
    )
    events.start(store)
    started = time.perf_counter()
    request = {"via": "cli", **summary}
    try:
        result = change()
    except MetaCortexError as error:
        events.owner_action(
            action=action,
            status="error",
            latency_ms=(time.perf_counter() - started) * 1000,
            request_summary=request,
            error={"code": error.code, "message": error.message},
            space=space,
        )
        raise
    else:
        events.owner_action(
            action=action,
            status="ok",
            latency_ms=(time.perf_counter() - started) * 1000,
            request_summary=request,
            response_summary=answer(result) if answer is not None else None,
            space=space,
        )
        return result
    finally:
        events.close()


def space_option(text: str) -> tuple[str, Level | None]:
    """``KEY`` or ``KEY:read`` / ``KEY:write`` (an argparse type): the level is None when
    not given (the command then uses the person's own level there)."""
    key, colon, level = text.strip().partition(":")
    try:
        return check_space_key(key), (Level.parse(level, "the level after ':'") if colon else None)
    except InvalidArgument as error:
        raise argparse.ArgumentTypeError(error.message) from None


def space_key(text: str) -> str:
    """A space key (an argparse type)."""
    try:
        return check_space_key(text.strip())
    except InvalidArgument as error:
        raise argparse.ArgumentTypeError(error.message) from None


def levels_text(levels: Mapping[str, str] | None) -> str:
    """``family:write work:read``; ``no space`` when there is none."""
    if levels is None:
        return "(not read)"
    return " ".join(f"{key}:{level}" for key, level in sorted(levels.items())) or "no space"


def print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, sort_keys=True))
