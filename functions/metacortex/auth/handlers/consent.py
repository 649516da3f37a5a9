"""``GET, POST /oauth/consent``: sign-in if needed, the consent page, approve or deny.

The approver picks what the client may do (a preset, shown as it applies at the
endpoint asked for) and the spaces it may reach (``auth/consent_spaces.py``). Approval
creates the grant and sends the client its code; denial sends ``access_denied``; both
with ``iss`` (RFC 9207). A refused choice shows the page again as it was filled in.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

import anyio.to_thread
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response

from metacortex.access import scopes as scope_names
from metacortex.access.grants import (
    BY_ID,
    PRESETS,
    describe,
    granted_scopes,
    known_client,
    preselected,
    states_at,
    tools_at,
)
from metacortex.access.model import Level
from metacortex.auth import redirects
from metacortex.auth.clients import Client, UnknownClient
from metacortex.auth.consent_spaces import (
    DEFAULT_FIELD,
    SpaceChoice,
    allowed_levels,
    chosen,
    offered,
    preselection,
)
from metacortex.auth.handlers.common import CONSENT, field
from metacortex.auth.handlers.context import OAuthContext
from metacortex.auth.resource import served
from metacortex.errors import InvalidArgument
from metacortex.kernel.logs import log
from metacortex.owner.callers import Caller


@dataclass(frozen=True, slots=True)
class ConsentPage:
    """What the consent page is about: the request, who approves, the client, and the
    spaces the approver may give it."""

    request_id: str
    caller: Caller
    client: Client
    pending: dict[str, Any]
    allowed: Mapping[str, Level]


@dataclass(frozen=True, slots=True)
class ConsentHandler:
    context: OAuthContext

    async def handle(self, request: Request) -> Response:
        context = self.context
        form: FormData | None = await request.form() if request.method == "POST" else None
        request_id = (
            field(form, "request") if form is not None else request.query_params.get("request")
        )
        pending = (
            await anyio.to_thread.run_sync(context.tokens.get_request, request_id)
            if request_id
            else None
        )
        if pending is None or request_id is None:
            return context.error_page(
                request, "This authorization request expired or was already answered.", 400
            )
        caller = await context.owner.caller(request)
        here = f"{context.issuer(request)}{CONSENT}?{urlencode({'request': request_id})}"
        if caller is None and form is None and _arrived_cross_site(request):
            # The SameSite=Strict session cookie is withheld on a navigation that started
            # on another site (the client's page). One same-origin hop makes the browser
            # send it, so a signed-in owner is not asked for the passphrase again.
            return context.owner.render(request, "hop.html", {"next_url": here + "&hop=1"})
        if caller is None:
            return await context.owner.sign_in_page(request, here, status_code=401 if form else 200)
        try:
            client = await context.clients.get(str(pending["client_id"]))
        except UnknownClient as error:
            return context.error_page(request, f"The client cannot be used: {error}")
        if not served(context.issuer(request), context.runtime.profiles, str(pending["resource"])):
            # Only a signed-in approver learns that an endpoint does not exist.
            return context.error_page(
                request,
                f"The client asks for {pending['resource']}, which is not an MCP endpoint "
                "of this server; nothing was granted. Check the URL given to the client.",
            )
        allowed = allowed_levels(caller, context.endpoint(request, str(pending["resource"])))
        if not allowed:
            return context.error_page(
                request,
                "You have no space you could give this client: nothing was granted. Ask "
                "the owner of this server to add you to a space, then connect it again.",
                403,
            )
        page = ConsentPage(request_id, caller, client, pending, allowed)
        if form is None:
            return self._page(request, page, preselection(allowed).fields())
        return await self._answer(request, page, form)

    async def _answer(self, request: Request, page: ConsentPage, form: FormData) -> Response:
        """The approver's decision: the grant and its code, or ``access_denied``."""
        context, client, caller = self.context, page.client, page.caller
        if not caller.session.csrf_matches(field(form, "csrf")):
            return context.error_page(request, "The form expired; start again.", 403)
        spaces: SpaceChoice | None = None
        if field(form, "decision") == "approve":
            try:
                spaces = chosen(form, page.allowed)
            except InvalidArgument as problem:
                # Nothing is spent: the page again, as it was filled in, saying what to fix.
                typed = {k: v for k, v in form.multi_items() if isinstance(v, str)}
                return self._page(request, page, typed, problem.message)
        taken = await anyio.to_thread.run_sync(context.tokens.take_request, page.request_id)
        if taken is None:
            return context.error_page(request, "This authorization request was already answered.")
        redirect_uri = str(page.pending["redirect_uri"])
        kept = {"state": str(taken["state"])} if taken.get("state") is not None else {}
        if spaces is None:
            log(logging.INFO, "oauth consent denied", oauth_client=str(taken["client_id"])[:200])
            return context.redirect(
                request,
                redirect_uri,
                {"error": "access_denied", "error_description": "the owner denied access", **kept},
            )
        preset = BY_ID.get(field(form, "preset") or "")
        if preset is None:
            return context.error_page(request, "Choose what the client may do.")
        redirect_host = redirects.shown_host(redirect_uri)
        # One truth: the grant's (and its tokens') scopes are those its preset uses.
        scopes = granted_scopes(
            preset,
            tuple(taken["scopes"]),
            context.endpoint_tools(request, str(taken["resource"])),
        )
        grant = {
            "client_id": client.client_id,
            "client_name": client.display_name(),
            "redirect_host": redirect_host,
            "resource": taken["resource"],
            "scopes": list(scopes),
            "preset": preset.id,
            "chatgpt_tools": field(form, "chatgpt_tools") == "on",
            # Who approved it, and the spaces they chose for it (auth/consent_spaces.py).
            "person": caller.person.id,
            **spaces.record(),
        }
        grant_id = await anyio.to_thread.run_sync(context.tokens.create_grant, grant)
        if client.registered_by == "dynamic registration":
            await anyio.to_thread.run_sync(context.clients.keep, client.client_id)
        log(
            logging.INFO,
            "oauth grant created",
            grant_id=grant_id,
            oauth_client=client.client_id[:200],
            redirect_host=redirect_host,
            resource=str(taken["resource"]),
            preset=preset.id,
            person=caller.person.id,
            spaces=spaces.record()["spaces"],
        )
        code = await anyio.to_thread.run_sync(
            context.tokens.issue_code,
            {
                "grant": grant_id,
                "client_id": client.client_id,
                "redirect_uri": redirect_uri,
                "redirect_given": taken["redirect_given"],
                "code_challenge": taken["code_challenge"],
                "resource": taken["resource"],
                "scopes": list(scopes),
            },
        )
        return context.redirect(request, redirect_uri, {"code": code, **kept})

    def _page(
        self,
        request: Request,
        page: ConsentPage,
        fields: dict[str, str],
        error: str | None = None,
    ) -> Response:
        """The consent page; ``fields``: the spaces as selected (the preselection, or as
        posted when a choice was refused with ``error``)."""
        context = self.context
        client, pending, caller = page.client, page.pending, page.caller
        redirect_uri = str(pending["redirect_uri"])
        known = known_client(urlsplit(redirect_uri).hostname or "")
        target = redirects.csp_source(redirect_uri)
        scopes: list[str] = list(pending["scopes"])
        return context.owner.render(
            request,
            "consent.html",
            {
                "action": context.issuer(request) + CONSENT,
                "csrf": caller.session.csrf,
                "request_id": page.request_id,
                "approver": None if caller.is_owner else caller.person,
                "spaces": offered(caller, page.allowed, fields),
                "default_space": fields.get(DEFAULT_FIELD, ""),
                "error": error,
                "client_name": client.display_name(),
                "known": known.name if known is not None else None,
                "redirect_host": redirects.shown_host(redirect_uri),
                "redirect_app": redirects.kind(redirect_uri) == "private-use",
                "registered_by": client.registered_by,
                "document_host": urlsplit(client.client_id).netloc
                if client.registered_by == "metadata document"
                else None,
                "resource": pending["resource"],
                "scopes": " ".join(scopes),
                "presets": self._presets_at(request, str(pending["resource"])),
                "chosen": fields.get("preset")
                or preselected(
                    tuple(scopes), context.endpoint_tools(request, str(pending["resource"]))
                ).id,
                "chatgpt_tools": fields.get("chatgpt_tools") == "on"
                if "decision" in fields
                else (known.chatgpt_tools if known is not None else False),
                "offline": scope_names.OFFLINE in scopes or client.refresh_grant,
            },
            status_code=400 if error is not None else 200,
            form_targets=(target,) if target is not None else (),
        )

    def _presets_at(self, request: Request, resource: str) -> list[dict[str, Any]]:
        """Each preset as it applies at the endpoint: what the grant would really get,
        in words derived from it."""
        endpoint = self.context.endpoint(request, resource)
        shown: list[dict[str, Any]] = []
        for preset in PRESETS:
            tools, states = tools_at(preset, endpoint), states_at(preset, endpoint)
            shown.append(
                {
                    "id": preset.id,
                    "title": preset.title,
                    "summary": describe(tools, states),
                    "tools": list(tools),
                    "states": [s.value for s in states],
                }
            )
        return shown


def _arrived_cross_site(request: Request) -> bool:
    return (
        request.headers.get("sec-fetch-site") == "cross-site" and "hop" not in request.query_params
    )
