"""The owner's Spaces page: every space with its memories (in every state), its
members and the client endpoints that may use it; add a space, rename one, remove an
empty one.

Each change goes through what ``metacortex space`` uses (``spaces.registry.Registry``,
``operations.space_removal.SpaceRemoval``): a space that holds memories or documents is
not removed (the command's ``--erase`` has no button here; erase them first, or move
them). Every
server applies a change within ``METACORTEX_CLIENT_REFRESH_SECONDS``; each is recorded
as an ``owner_action`` event naming the space.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Final, TypeVar
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response

from metacortex.access.model import DEFAULT_SPACE, Directory
from metacortex.access.registry import Registry
from metacortex.console.base import ConsoleBase, form_text
from metacortex.console.clients import manager
from metacortex.domain.records import ALL_STATES
from metacortex.errors import MetaCortexError
from metacortex.operations.space_removal import SpaceRemoval, refusal
from metacortex.owner import Session
from metacortex.storage.base import MemoryFilter

PAGE: Final = "/console/spaces"
NOTICES: Final = {
    "added": "The space {key} was added. Add people to it on People.",
    "renamed": "The space {key} was renamed.",
    "removed": "The space {key} was removed.",
}
T = TypeVar("T")


def _rows(console: ConsoleBase, directory: Directory) -> list[dict[str, Any]]:
    store = console.service.store
    clients = manager(console).list()
    rows = []
    for space in sorted(directory.spaces.values(), key=lambda s: (s.key != DEFAULT_SPACE, s.key)):
        members = sorted(
            (
                (person.name, level.word)
                for person in directory.people.values()
                if not person.is_owner and (level := person.level_in(space.key)) is not None
            ),
            key=lambda pair: pair[0].casefold(),
        )
        rows.append(
            {
                "key": space.key,
                "name": space.name,
                "description": space.description,
                "created_at": space.created_at,
                "memories": store.count_memories(MemoryFilter(states=ALL_STATES, space=space.key)),
                "documents": store.count_documents(space=space.key),
                "members": members,
                "clients": sorted(c.id for c in clients if space.key in (c.levels or {})),
                "removable": space.key != DEFAULT_SPACE,
            }
        )
    return rows


async def spaces_page(
    console: ConsoleBase,
    request: Request,
    session: Session,
    *,
    error: str | None = None,
    form: dict[str, str] | None = None,
    status_code: int = 200,
) -> Response:
    directory = await console.call(Registry(console.service.store).directory)
    rows = await console.call(_rows, console=console, directory=directory)
    done = request.query_params.get("done", "")
    key = request.query_params.get("key", "")
    notice = NOTICES[done].format(key=f"“{key}”") if done in NOTICES and key else None
    return console.render(
        request,
        session,
        "spaces.html",
        {
            "title": "Spaces",
            "spaces": rows,
            "refresh_seconds": console.settings.metacortex_client_refresh_seconds,
            "form": form or {},
            "notice": notice,
            "error": error,
        },
        status_code=status_code,
    )


async def _change(
    console: ConsoleBase,
    request: Request,
    session: Session,
    action: str,
    key: str,
    change: Callable[[], T],
    done: str,
    form: dict[str, str] | None = None,
) -> Response:
    """Run ``change`` (recorded as ``action`` in the space ``key``), then the page again."""
    started = time.perf_counter()
    summary = {"key": key}
    try:
        await console.call(change)
    except MetaCortexError as error:
        console.record_action(request, action, started, summary, error=error, space=key)
        status = console.status_of(error)
        return await spaces_page(
            console, request, session, error=error.message, form=form, status_code=status
        )
    console.record_action(request, action, started, summary, response={"key": key}, space=key)
    return console.redirect(request, f"{PAGE}?{urlencode({'done': done, 'key': key})}")


async def add_space(console: ConsoleBase, request: Request, session: Session) -> Response:
    fields = await request.form()
    key = form_text(fields, "key") or ""
    name = form_text(fields, "name")
    description = form_text(fields, "description") or ""
    registry = Registry(console.service.store)
    form = {"key": key, "name": name or "", "description": description}
    return await _change(
        console,
        request,
        session,
        "space_add",
        key,
        lambda: registry.add_space(key, name, description),
        "added",
        form,
    )


async def rename_space(console: ConsoleBase, request: Request, session: Session) -> Response:
    key = request.path_params["key"]
    fields = await request.form()
    name = form_text(fields, "name")
    description = form_text(fields, "description") or ""
    registry = Registry(console.service.store)
    return await _change(
        console,
        request,
        session,
        "space_rename",
        key,
        lambda: registry.rename_space(key, name, description),
        "renamed",
    )


async def remove_space(console: ConsoleBase, request: Request, session: Session) -> Response:
    key = request.path_params["key"]
    removal = SpaceRemoval(console.service.store, console.settings)

    def remove() -> None:
        refused = refusal(removal.plan(key), erase=False)
        if refused is not None:
            raise refused
        removal.remove(key, erased_by="owner (console)")

    return await _change(console, request, session, "space_remove", key, remove, "removed")
