"""The clients page: every client endpoint and OAuth grant, with its last use; new clients.

``GET /console/clients`` lists the admin endpoint, the client endpoints (stored
ones can be paused, resumed and removed; those from ``MCP_CLIENT_PROFILES_JSON``
are read-only and say so) and the OAuth grants (paused, resumed, revoked).
``POST /console/clients`` creates a client endpoint and shows its page once with
the token (``console.client_page``). Changes reach every server process within
``METACORTEX_CLIENT_REFRESH_SECONDS`` (grants: at once); each is recorded as an
``owner_action`` event with the client's id, never its token.
"""

from __future__ import annotations

import time
from typing import Any, Final
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import Response

from metacortex import tool_catalogue
from metacortex.access.grants import BY_ID, granted_scopes
from metacortex.access.model import DEFAULT_SPACE, Level
from metacortex.access.profiles import ADMIN_PROFILE_ID
from metacortex.clients import ClientManager
from metacortex.clients.grants import GrantView, list_grants
from metacortex.console.activity import DAYS, read_activity
from metacortex.console.base import ConsoleBase, access_for, form_text
from metacortex.console.client_page import NOTICES, client_page
from metacortex.console.switcher import space_labels
from metacortex.errors import InvalidArgument, MetaCortexError
from metacortex.kernel.routes import resolve
from metacortex.owner import Session

# Last use is looked up over the activity page's window of events (they are kept 90 days
# by default): reading them all would make the page's time grow with the retention
# (docs/benchmarks.md).
LAST_USE_DAYS: Final = DAYS


def manager(console: ConsoleBase) -> ClientManager:
    return ClientManager(console.service.store, console.settings)


def _access(console: ConsoleBase, grant: GrantView) -> dict[str, str]:
    """The preset and the scopes that really apply: a grant approved before grants kept
    only their preset's scopes may list more than its preset lets it use."""
    preset = BY_ID.get(str(grant.preset))
    if preset is None:
        return {"preset": str(grant.preset), "scopes": " ".join(grant.scopes)}
    route = resolve(urlsplit(grant.resource or "").path)
    endpoint = console.runtime.profiles.get(route.client_id) if route is not None else None
    tools = endpoint.allowed_tools if endpoint is not None else None
    return {"preset": preset.title, "scopes": " ".join(granted_scopes(preset, grant.scopes, tools))}


def _grant_row(console: ConsoleBase, grant: GrantView, last_use: dict[str, str]) -> dict[str, Any]:
    approver = console.runtime.profiles.directory.person(grant.person)
    return {
        "id": grant.id,
        "label": grant.label,
        "approver": approver.name if approver is not None else grant.person,
        "spaces": grant.spaces_words(),
        **_access(console, grant),
        "resource": grant.resource,
        "created_at": grant.created_at,
        "paused": grant.paused,
        "last_use": last_use.get(grant.client_id),
    }


async def clients_page(
    console: ConsoleBase,
    request: Request,
    session: Session,
    *,
    error: str | None = None,
    form: dict[str, Any] | None = None,
    status_code: int = 200,
) -> Response:
    directory = access_for(request).directory
    activity = await read_activity(console, LAST_USE_DAYS)
    last_use = activity.last_use
    clients = await console.call(manager(console).list)
    grants = await console.call(list_grants, store=console.service.store)
    admin = console.runtime.profiles.admin
    done = request.query_params.get("done")
    return console.render(
        request,
        session,
        "clients.html",
        {
            "title": "Clients",
            "admin": {
                "id": ADMIN_PROFILE_ID,
                "tools": admin.tools,
                "has_token": admin.token_sha256 is not None,
                "last_use": last_use.get(ADMIN_PROFILE_ID),
            },
            "clients": [{"view": c, "last_use": last_use.get(c.id)} for c in clients],
            "grants": [_grant_row(console, grant, last_use) for grant in grants],
            "oauth": console.authorization is not None,
            "last_use_days": LAST_USE_DAYS,
            "refresh_seconds": console.settings.metacortex_client_refresh_seconds,
            "tool_names": tool_catalogue.model_tools(),
            "form": form
            or {
                "id": "",
                "description": "",
                "tools": tool_catalogue.default_tools(),
                "url_token": False,
                "spaces": {DEFAULT_SPACE: "write"} if DEFAULT_SPACE in directory.spaces else {},
                "default_space": DEFAULT_SPACE,
            },
            "space_choices": sorted(
                space_labels(directory, sorted(directory.spaces)).items(),
                key=lambda pair: (pair[0] != DEFAULT_SPACE, pair[0]),
            ),
            "notice": NOTICES.get(done or ""),
            "error": error,
        },
        status_code=status_code,
    )


async def create_client(console: ConsoleBase, request: Request, session: Session) -> Response:
    form = await request.form()
    client_id = form_text(form, "id") or ""
    tools = [value for value in form.getlist("tools") if isinstance(value, str)]
    directory = access_for(request).directory
    levels = {
        key: word
        for key in directory.spaces
        if (word := form_text(form, f"space_{key}") or "") in ("read", "write")
    }
    chosen = {
        "id": client_id,
        "description": form_text(form, "description") or "",
        "tools": tools,
        "url_token": form_text(form, "url_token") == "on",
        "spaces": levels,
        "default_space": form_text(form, "default_space") or "",
    }
    summary = {"client_id": client_id[:64], "tools": tools, "spaces": levels}
    started = time.perf_counter()
    try:
        if not client_id:
            raise InvalidArgument("give the new client an id (it becomes /clients/<id>/mcp)")
        if not tools:
            raise InvalidArgument("choose at least one tool the client may call")
        created = await console.call(
            manager(console).create,
            client_id=client_id,
            tools=tools,
            url_token=bool(chosen["url_token"]),
            description=chosen["description"] or None,
            created_by="owner (console)",
            spaces={key: Level.parse(word) for key, word in levels.items()} or None,
            default_space=chosen["default_space"] or None,
        )
    except MetaCortexError as error:
        console.record_action(
            request, "client_create", started, summary, error=error, in_space=False
        )
        status = 409 if error.code == "conflict" else 400
        return await clients_page(
            console, request, session, error=error.message, form=chosen, status_code=status
        )
    console.record_action(
        request, "client_create", started, summary, response={"created": True}, in_space=False
    )
    return await client_page(console, request, session, created=created)
