"""One client's page: what it may do, how to connect each application, and its changes.

``GET /console/clients/{id}`` shows the endpoint (the admin endpoint is ``default``),
its source, status and access, and the ready-to-paste connection for ChatGPT,
Claude, Claude Code, Codex, Cursor and VS Code (``metacortex.clients.snippets``,
as the start-up banner prints them). Right after ``POST /console/clients`` it also
shows the new token, once.

Pause and resume are single POSTs (both undo each other). Removing a client and
revoking a grant cannot be undone, so each has a confirmation page
(``GET .../remove``, ``GET .../grants/{id}/revoke``) whose form does it.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Final

from starlette.requests import Request
from starlette.responses import Response

from metacortex.access.model import Level
from metacortex.access.profiles import ADMIN_PROFILE_ID
from metacortex.clients import ClientManager, ClientView, CreatedClient
from metacortex.clients.grants import (
    list_grants,
    pause_grant,
    resume_grant,
    revoke_grant,
)
from metacortex.clients.snippets import ADMIN_TOKEN_VARIABLE, Endpoint, client_endpoint, render
from metacortex.console.base import ConsoleBase, access_for, form_text
from metacortex.console.switcher import space_labels
from metacortex.errors import MetaCortexError, NotFound
from metacortex.owner import Session, public_base

CLIENTS: Final = "/console/clients"
# What the page says after a change redirected to it (``?done=``).
NOTICES: Final = {
    "paused": "The client is paused: it is refused until you resume it.",
    "resumed": "The client is resumed.",
    "removed": "The client was removed; its token no longer works.",
    "grant-paused": "The grant is paused: its tokens are refused until you resume it.",
    "grant-resumed": "The grant is resumed.",
    "revoked": "The grant was revoked; its tokens no longer work.",
    "spaces": "The client's spaces were changed; every server applies it within the "
    "refresh interval.",
}


def _manager(console: ConsoleBase) -> ClientManager:
    return ClientManager(console.service.store, console.settings)


def _admin_view(console: ConsoleBase) -> ClientView:
    admin = console.runtime.profiles.admin
    return ClientView(
        id=ADMIN_PROFILE_ID,
        source="environment",
        tools=admin.tools,
        states=tuple(sorted(state.value for state in admin.readable_states)),
        origins=tuple(sorted(admin.allowed_origins)),
        url_token=False,
        paused=False,
        description="the admin endpoint (MCP_ADMIN_TOKEN)",
    )


async def client_page(
    console: ConsoleBase,
    request: Request,
    session: Session,
    *,
    created: CreatedClient | None = None,
) -> Response:
    client_id = created.client.id if created else request.path_params["client_id"]
    try:
        if client_id == ADMIN_PROFILE_ID:
            client = _admin_view(console)
        elif created is not None:
            client = created.client
        else:
            client = await console.call(_manager(console).get, client_id=client_id)
    except MetaCortexError as error:
        return console.refused(request, session, error, "No such client")
    admin = client.id == ADMIN_PROFILE_ID
    base, oauth = public_base(request, console.settings), console.authorization is not None
    endpoint = (
        Endpoint(base + "/mcp", token_variable=ADMIN_TOKEN_VARIABLE, oauth=oauth)
        if admin
        else client_endpoint(base, client.id, oauth=oauth, url_token=client.url_token)
    )
    done = request.query_params.get("done")
    directory = access_for(request).directory
    return console.render(
        request,
        session,
        "client.html",
        {
            "title": f"Client {client.id}",
            "client": client,
            "admin": admin,
            "endpoint": endpoint,
            "token": created.token if created is not None else None,
            "token_variable": endpoint.token_variable,
            "snippets": render(endpoint),
            "refresh_seconds": console.settings.metacortex_client_refresh_seconds,
            "notice": NOTICES.get(done or ""),
            "space_names": space_labels(directory, sorted(directory.spaces)),
        },
        status_code=201 if created is not None else 200,
    )


# ------------------------------------------------------------------ changes
Handler = Callable[[ConsoleBase, Request, Session], Awaitable[Response]]


def _change(
    action: str,
    key: str,
    change: Callable[[ConsoleBase, str], object],
    then: str,
    refused: str,
) -> Handler:
    """A POST handler: ``change(console, <path parameter key>)``, recorded as an
    ``owner_action`` event, then a redirect to ``then`` (``{id}``: the parameter)."""

    async def handle(console: ConsoleBase, request: Request, session: Session) -> Response:
        target = request.path_params[key]
        summary = {key: target}
        started = time.perf_counter()
        try:
            await console.call(lambda: change(console, target))
        except MetaCortexError as error:
            console.record_action(request, action, started, summary, error=error, in_space=False)
            return console.refused(request, session, error, refused)
        console.record_action(
            request, action, started, summary, response={"done": True}, in_space=False
        )
        return console.redirect(request, then.format(id=target))

    return handle


pause_client = _change(
    "client_pause",
    "client_id",
    lambda console, client_id: _manager(console).pause(client_id),
    CLIENTS + "/{id}?done=paused",
    "The client was not paused",
)
resume_client = _change(
    "client_resume",
    "client_id",
    lambda console, client_id: _manager(console).resume(client_id),
    CLIENTS + "/{id}?done=resumed",
    "The client was not resumed",
)
remove_client = _change(
    "client_remove",
    "client_id",
    lambda console, client_id: _manager(console).remove(client_id),
    CLIENTS + "?done=removed",
    "The client was not removed",
)
pause_grant_action = _change(
    "grant_pause",
    "grant_id",
    lambda console, grant_id: pause_grant(console.service.store, grant_id),
    CLIENTS + "?done=grant-paused",
    "The grant was not paused",
)
resume_grant_action = _change(
    "grant_resume",
    "grant_id",
    lambda console, grant_id: resume_grant(console.service.store, grant_id),
    CLIENTS + "?done=grant-resumed",
    "The grant was not resumed",
)
revoke_grant_action = _change(
    "revoke_grant",
    "grant_id",
    lambda console, grant_id: revoke_grant(console.service.store, grant_id),
    CLIENTS + "?done=revoked",
    "The grant was not revoked",
)


async def grant_space(console: ConsoleBase, request: Request, session: Session) -> Response:
    """Grant a stored client a space, change its level there, or make it its default:
    ``ClientManager.grant``, as ``metacortex client grant`` does."""
    form = await request.form()
    key = form_text(form, "space") or ""
    word = form_text(form, "level") or ""
    make_default = form_text(form, "make_default") == "on"
    return await _change_spaces(
        console,
        request,
        session,
        "client_grant",
        key,
        lambda manager, client_id: manager.grant(
            client_id, key, Level.parse(word) if word else None, make_default=make_default
        ),
    )


async def ungrant_space(console: ConsoleBase, request: Request, session: Session) -> Response:
    """Take a space from a stored client: ``ClientManager.ungrant``, as ``metacortex client
    ungrant`` does (never its only space nor its default)."""
    form = await request.form()
    key = form_text(form, "space") or ""
    return await _change_spaces(
        console,
        request,
        session,
        "client_ungrant",
        key,
        lambda manager, client_id: manager.ungrant(client_id, key),
    )


async def _change_spaces(
    console: ConsoleBase,
    request: Request,
    session: Session,
    action: str,
    key: str,
    change: Callable[[ClientManager, str], ClientView],
) -> Response:
    client_id = request.path_params["client_id"]
    summary = {"client_id": client_id, "space": key}
    started = time.perf_counter()
    try:
        await console.call(lambda: change(_manager(console), client_id))
    except MetaCortexError as error:
        console.record_action(request, action, started, summary, error=error, space=key or None)
        return console.refused(request, session, error, "The client's spaces did not change")
    console.record_action(request, action, started, summary, response={"done": True}, space=key)
    return console.redirect(request, f"{CLIENTS}/{client_id}?done=spaces#spaces")


# ------------------------------------------------------------- confirmations
async def remove_page(console: ConsoleBase, request: Request, session: Session) -> Response:
    """The confirmation: nothing changes until its form is sent."""
    client_id = request.path_params["client_id"]
    try:
        client = await console.call(_manager(console).get, client_id=client_id)
        _manager(console).require_stored(client_id, "removed")
    except MetaCortexError as error:
        return console.refused(request, session, error, "The client cannot be removed")
    return console.render(
        request,
        session,
        "client_confirm.html",
        {
            "title": f"Remove client {client.id}?",
            "what": f"client {client.id}",
            "consequence": f"Its token stops working on every server within "
            f"{console.settings.metacortex_client_refresh_seconds:g} seconds, for good: "
            "a client created again with the same id gets a new token. To stop it for a "
            "while instead, pause it.",
            "action": f"{CLIENTS}/{client.id}/remove",
            "button": f"Remove client {client.id}",
            "back": f"{CLIENTS}/{client.id}",
        },
    )


async def revoke_page(console: ConsoleBase, request: Request, session: Session) -> Response:
    grant_id = request.path_params["grant_id"]
    grants = await console.call(list_grants, store=console.service.store)
    grant = next((g for g in grants if g.id == grant_id), None)
    if grant is None:
        error = NotFound(f"no grant with id {grant_id!r}")
        return console.refused(request, session, error, "The grant cannot be revoked")
    return console.render(
        request,
        session,
        "client_confirm.html",
        {
            "title": f"Revoke {grant.label}?",
            "what": f"the OAuth grant of {grant.label}",
            "consequence": "Its access and refresh tokens stop working at once, for good; "
            "the application must ask for your consent again. To stop it for a while "
            "instead, pause it.",
            "action": f"{CLIENTS}/grants/{grant.id}/revoke",
            "button": f"Revoke {grant.label}",
            "back": CLIENTS,
        },
    )
