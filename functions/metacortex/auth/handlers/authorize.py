"""``GET /oauth/authorize``: checks the client's request, keeps it, and sends the browser
to the owner's consent page.

What cannot safely go back to the client (an unknown client, a redirect_uri it did not
register, a ``state`` too long) is a page for the person at the browser; anything else
wrong goes back to the client's redirect_uri as an OAuth error with ``iss`` (RFC 9207).
``resource`` (RFC 8707) must name one of this server's MCP endpoints.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from metacortex.access import scopes as scope_names
from metacortex.auth.clients import UnknownClient
from metacortex.auth.handlers.common import CONSENT, NO_STORE
from metacortex.auth.handlers.context import OAuthContext
from metacortex.auth.limits import challenge_problem, state_problem
from metacortex.auth.resource import resource_of


@dataclass(frozen=True, slots=True)
class AuthorizationHandler:
    context: OAuthContext

    async def handle(self, request: Request) -> Response:
        context = self.context
        wait = context.limits.authorization(request)
        if wait is not None:
            refused = context.error_page(
                request,
                f"Too many authorization requests from your address; wait {wait} seconds "
                "and try again.",
                429,
            )
            refused.headers["retry-after"] = str(wait)
            return refused
        params = request.query_params
        client_id = params.get("client_id")
        if not client_id:
            return context.error_page(request, "The request names no client (client_id).")
        try:
            client = await context.clients.get(client_id)
        except UnknownClient as error:
            return context.error_page(request, f"The client cannot be used: {error}")
        redirect_uri = client.match_redirect(params.get("redirect_uri"))
        if redirect_uri is None:
            return context.error_page(
                request, "The redirect_uri is not one this client registered; nothing was sent."
            )
        state = params.get("state")
        too_long = state_problem(state)
        if too_long is not None:
            return context.error_page(request, f"The request cannot be answered: {too_long}.")
        kept = {"state": state} if state is not None else {}

        def fail(error: str, description: str) -> Response:
            return context.redirect(
                request, redirect_uri, {"error": error, "error_description": description, **kept}
            )

        if params.get("response_type") != "code":
            return fail("unsupported_response_type", "only response_type=code is supported")
        challenge = params.get("code_challenge")
        bad_pkce = challenge_problem(challenge, params.get("code_challenge_method"))
        if bad_pkce is not None:
            return fail("invalid_request", bad_pkce)
        if params.get("prompt") == "none":
            return fail("consent_required", "the owner must approve this client on the page")
        scopes = scope_names.parse(params.get("scope"))
        base = context.issuer(request)
        requested_resource = params.get("resource")
        resource = resource_of(base, requested_resource) if requested_resource else base + "/mcp"
        if resource is None:
            return fail("invalid_target", "resource is not an MCP endpoint of this server")
        pending = {
            "client_id": client.client_id,
            "redirect_uri": redirect_uri,
            "redirect_given": params.get("redirect_uri") is not None,
            "state": state,
            "code_challenge": challenge,
            "scopes": list(scopes),
            "resource": resource,
        }
        request_id = await anyio.to_thread.run_sync(context.tokens.save_request, pending)
        return RedirectResponse(
            f"{base}{CONSENT}?{urlencode({'request': request_id})}",
            status_code=303,
            headers=NO_STORE,
        )
