"""Who uses this server: the configured profiles and the OAuth grants, with their last use."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import Response

from metacortex.auth.presets import BY_ID, granted_scopes
from metacortex.auth.tokens import GRANT
from metacortex.console.activity import DAYS, read_activity
from metacortex.console.base import ConsoleBase
from metacortex.errors import NotFound
from metacortex.owner import Session
from metacortex.server.routes import resolve

# Last use is looked up over the activity page's window of events (they are kept 90 days
# by default): reading them all would make the page's time grow with the retention
# (docs/benchmarks.md).
LAST_USE_DAYS = DAYS


async def clients_page(console: ConsoleBase, request: Request, session: Session) -> Response:
    activity = await read_activity(console, LAST_USE_DAYS)
    last_use = activity.last_use
    profiles = [
        {
            "id": profile.id,
            "tools": sorted(profile.allowed_tools),
            "states": sorted(state.value for state in profile.readable_states),
            "origins": sorted(profile.allowed_origins),
            "has_token": profile.token_sha256 is not None,
            "last_use": last_use.get(profile.id),
        }
        for profile in console.runtime.profiles.all()
    ]
    rows = await console.call(console.service.store.auth_list, kind=GRANT)
    grants: list[dict[str, Any]] = [
        {
            "id": key,
            "client_name": data.get("client_name") or data.get("client_id") or "(unnamed)",
            "redirect_host": data.get("redirect_host"),
            "resource": data.get("resource"),
            **_access(console, data),
            "created_at": data.get("created_at"),
            "last_use": last_use.get(f"oauth-{key}"),
        }
        for key, data in rows
    ]
    return console.render(
        request,
        session,
        "clients.html",
        {
            "title": "Clients",
            "profiles": profiles,
            "grants": grants,
            "oauth": console.authorization is not None,
            "last_use_days": LAST_USE_DAYS,
            "notice": "The grant was revoked; its tokens no longer work."
            if request.query_params.get("done") == "revoked"
            else None,
        },
    )


def _access(console: ConsoleBase, grant: dict[str, Any]) -> dict[str, str]:
    """The preset and the scopes that really apply: a grant approved before grants kept
    only their preset's scopes may list more than its preset lets it use."""
    preset = BY_ID.get(str(grant.get("preset")))
    scopes = tuple(grant.get("scopes", ()))
    if preset is None:
        return {"preset": str(grant.get("preset")), "scopes": " ".join(scopes)}
    route = resolve(urlsplit(str(grant.get("resource", ""))).path)
    endpoint = console.runtime.profiles.get(route.client_id) if route is not None else None
    tools = endpoint.allowed_tools if endpoint is not None else None
    return {"preset": preset.title, "scopes": " ".join(granted_scopes(preset, scopes, tools))}


async def revoke_grant(console: ConsoleBase, request: Request, session: Session) -> Response:
    grant_id = request.path_params["grant_id"]
    summary = {"grant_id": grant_id}
    started = time.perf_counter()
    removed = await console.call(console.service.store.auth_delete, kind=GRANT, key=grant_id)
    if not removed:
        error = NotFound(f"no grant with id {grant_id!r}")
        console.record_action("revoke_grant", started, summary, error=error)
        return console.refused(request, session, error, "The grant was not revoked")
    console.record_action("revoke_grant", started, summary, response={"revoked": True})
    return console.redirect(request, "/console/clients?done=revoked")
