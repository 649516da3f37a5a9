"""The authorization server: metadata, authorize, consent, token, revoke, register.

Endpoints (also under ``/metaCortexMcp``):

| route | what |
|---|---|
| ``GET /.well-known/oauth-authorization-server[/<issuer path>]`` | RFC 8414 metadata |
| ``GET /.well-known/openid-configuration[/<issuer path>]`` | the same document, OIDC-valid |
| ``GET /.well-known/oauth-protected-resource[/<resource path>]`` | RFC 9728 metadata |
| ``GET /oauth/authorize`` | checks the request, then the owner's consent page |
| ``GET, POST /oauth/consent`` | sign-in if needed, the consent page, approve or deny |
| ``POST /oauth/token`` | ``authorization_code`` (PKCE S256) and ``refresh_token`` |
| ``POST /oauth/revoke`` | RFC 7009, public clients too |
| ``POST /oauth/register`` | RFC 7591, the SDK's ``RegistrationHandler`` |
| ``GET /oauth/jwks`` | an empty key set (the metadata's ``jwks_uri``; nothing is signed) |

The issuer is the public base URL as a plain string (no trailing slash), and it
comes back as ``iss`` in every authorization response (RFC 9207). ``resource``
(RFC 8707) must name one of this server's MCP endpoints at authorize and, when
sent, the same one at the token endpoint.
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any, Final, Literal
from urllib.parse import unquote, urlencode, urlsplit

import anyio.to_thread
from mcp.server.auth.handlers.register import RegistrationHandler
from mcp.server.auth.settings import ClientRegistrationOptions
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

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
from metacortex.access.profiles import Profile
from metacortex.auth import redirects
from metacortex.auth.assertions import (
    ALGORITHMS,
    ASSERTION_TYPE,
    InvalidAssertion,
    claimed_client_id,
    verify_assertion,
)
from metacortex.auth.cimd import MetadataDocuments, is_metadata_url
from metacortex.auth.clients import Client, ClientRegistry, UnknownClient
from metacortex.auth.consent_spaces import (
    DEFAULT_FIELD,
    SpaceChoice,
    allowed_levels,
    chosen,
    offered,
    preselection,
)
from metacortex.auth.limits import (
    AbuseLimits,
    challenge_problem,
    registration_problem,
    state_problem,
)
from metacortex.auth.resource import WELL_KNOWN_PRM, OAuthResource, resource_of, served
from metacortex.auth.tokens import CODE, REFRESH, Issued, Presenter, TokenStore, pkce_matches
from metacortex.config import Settings
from metacortex.errors import InvalidArgument
from metacortex.guard.addresses import client_address
from metacortex.kernel.logs import bounded_text, log
from metacortex.kernel.routes import FUNCTION_PREFIX, resolve
from metacortex.kernel.runtime import Runtime
from metacortex.owner import OwnerWeb, public_base, templates
from metacortex.owner.callers import Caller
from metacortex.owner.web import origin_of
from metacortex.storage.base import MemoryStore

HERE: Final = Path(__file__).parent
AUTHORIZE: Final = "/oauth/authorize"
CONSENT: Final = "/oauth/consent"
TOKEN: Final = "/oauth/token"  # noqa: S105 (a path, not a credential)
REVOKE: Final = "/oauth/revoke"
REGISTER: Final = "/oauth/register"
JWKS: Final = "/oauth/jwks"
WELL_KNOWN_AS: Final = "/.well-known/oauth-authorization-server"
WELL_KNOWN_OIDC: Final = "/.well-known/openid-configuration"
AUTH_METHODS: Final = ("none", "client_secret_post", "client_secret_basic", "private_key_jwt")
_NO_STORE: Final = {"cache-control": "no-store", "pragma": "no-cache"}
# Metadata documents: read by clients, preflighted by browser-based ones.
_READ: Final = ["GET", "OPTIONS"]
_CORS: Final = {"access-control-allow-origin": "*"}
_VERIFIER_CHARS: Final = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
)


class OAuthError(Exception):
    def __init__(self, error: str, description: str, status: int = 400) -> None:
        super().__init__(description)
        self.error = error
        self.description = description
        self.status = status


def _oauth_json(error: OAuthError) -> JSONResponse:
    headers = {**_NO_STORE, **_CORS}
    if error.status == 401:
        headers["www-authenticate"] = 'Basic realm="metacortex"'
    return JSONResponse(
        {"error": error.error, "error_description": error.description},
        status_code=error.status,
        headers=headers,
    )


class AuthorizationServer:
    """Everything OAuth for one app; the store is reached once the app has started."""

    def __init__(self, settings: Settings, runtime: Runtime) -> None:
        self.settings = settings
        self.runtime = runtime
        self._store: MemoryStore | None = None
        self._tokens: TokenStore | None = None
        self._clients: ClientRegistry | None = None
        self._documents: MetadataDocuments | None = None
        self.limits = AbuseLimits(settings)
        self.owner = OwnerWeb(
            settings,
            self._require_store,
            page_templates=templates(HERE / "templates"),
            directory_of=runtime.clients.current_directory,
        )

    def _require_store(self) -> MemoryStore:
        if self._store is None:
            raise RuntimeError("the OAuth server is not started")
        return self._store

    # --------------------------------------------------------- lifecycle
    def start(self, store: MemoryStore) -> OAuthResource:
        """Bind to the store (in the app's lifespan); returns the resource-server side."""
        self._store = store
        self._tokens = TokenStore(
            store,
            timedelta(minutes=self.settings.metacortex_oauth_access_token_minutes),
            timedelta(days=self.settings.metacortex_oauth_refresh_token_days),
            timedelta(seconds=self.settings.metacortex_oauth_replay_grace_seconds),
        )
        self._documents = MetadataDocuments(
            store, test_origin=self.settings.metacortex_oauth_cimd_test_origin
        )
        self._clients = ClientRegistry(
            store,
            self._documents,
            timedelta(minutes=self.settings.metacortex_oauth_unused_client_minutes),
        )
        return OAuthResource(self.settings, lambda: self.runtime.profiles, self._tokens)

    @property
    def tokens(self) -> TokenStore:
        if self._tokens is None:
            raise RuntimeError("the OAuth server is not started")
        return self._tokens

    @property
    def documents(self) -> MetadataDocuments:
        if self._documents is None:
            raise RuntimeError("the OAuth server is not started")
        return self._documents

    @property
    def clients(self) -> ClientRegistry:
        if self._clients is None:
            raise RuntimeError("the OAuth server is not started")
        return self._clients

    def issuer(self, request: Request) -> str:
        return public_base(request, self.settings)

    # ------------------------------------------------------------ routes
    def routes(self) -> list[BaseRoute]:
        registration = RegistrationHandler(
            _LazyProvider(self),  # type: ignore[arg-type]
            # No scope check at registration: scopes are decided at authorize, where
            # unknown ones are ignored (a client registering its own scope still works).
            ClientRegistrationOptions(enabled=True),
        )

        async def register(request: Request) -> Response:
            wait = self.limits.registration(request)
            if wait is not None:
                return JSONResponse(
                    {
                        "error": "temporarily_unavailable",
                        "error_description": f"too many registrations; retry after {wait} s",
                    },
                    status_code=429,
                    headers={**_NO_STORE, **_CORS, "retry-after": str(wait)},
                )
            body = await request.body()
            problem = registration_problem(body)
            if problem is not None:
                return _oauth_json(OAuthError("invalid_client_metadata", problem))
            refused = redirects.refused_in_registration(body)
            if refused is not None:
                return _oauth_json(OAuthError("invalid_redirect_uri", refused))
            response = await registration.handle(request)
            response.headers.update({**_NO_STORE, **_CORS})
            return response

        routes: list[BaseRoute] = []
        for prefix in ("", FUNCTION_PREFIX):
            routes += [
                Route(prefix + WELL_KNOWN_AS + "{rest:path}", self.as_metadata, methods=_READ),
                # The same document where OIDC discovery looks: under a prefix it is the
                # one form cloudfunctions.net delivers (<issuer>/.well-known/openid-…).
                Route(prefix + WELL_KNOWN_OIDC + "{rest:path}", self.as_metadata, methods=_READ),
                Route(
                    prefix + WELL_KNOWN_PRM + "{rest:path}",
                    self.resource_metadata,
                    methods=_READ,
                ),
                Route(prefix + AUTHORIZE, self.authorize, methods=["GET"]),
                Route(prefix + CONSENT, self.consent, methods=["GET", "POST"]),
                Route(prefix + TOKEN, self.token, methods=["POST", "OPTIONS"]),
                Route(prefix + REVOKE, self.revoke, methods=["POST", "OPTIONS"]),
                Route(prefix + REGISTER, register, methods=["POST"]),
                Route(prefix + REGISTER, self.preflight, methods=["OPTIONS"]),
                Route(prefix + JWKS, self.jwks, methods=_READ),
            ]
        return routes + self.owner.routes()

    async def preflight(self, request: Request, methods: str = "POST, OPTIONS") -> Response:
        return Response(
            status_code=204,
            headers={
                **_CORS,
                "access-control-allow-methods": methods,
                "access-control-allow-headers": "authorization, content-type, mcp-protocol-version",
                "access-control-max-age": "600",
            },
        )

    # ---------------------------------------------------------- metadata
    async def as_metadata(self, request: Request) -> Response:
        if request.method == "OPTIONS":
            return await self.preflight(request, "GET, OPTIONS")
        issuer = self.issuer(request)
        rest = request.path_params.get("rest", "")
        if rest == FUNCTION_PREFIX and not self.settings.metacortex_public_url:
            issuer = origin_of(issuer) + FUNCTION_PREFIX  # path-inserted issuer under the prefix
        if rest not in ("", urlsplit(issuer).path):
            return _not_found()
        return JSONResponse(
            {
                "issuer": issuer,
                "authorization_endpoint": issuer + AUTHORIZE,
                "token_endpoint": issuer + TOKEN,
                "registration_endpoint": issuer + REGISTER,
                "revocation_endpoint": issuer + REVOKE,
                "scopes_supported": list(scope_names.SUPPORTED),
                "response_types_supported": ["code"],
                "response_modes_supported": ["query"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "token_endpoint_auth_methods_supported": list(AUTH_METHODS),
                "revocation_endpoint_auth_methods_supported": list(AUTH_METHODS),
                "token_endpoint_auth_signing_alg_values_supported": list(ALGORITHMS),
                "code_challenge_methods_supported": ["S256"],
                "client_id_metadata_document_supported": True,
                "authorization_response_iss_parameter_supported": True,
                # What OpenID Connect discovery requires, so the one document that can be
                # reached under a path prefix (<issuer>/.well-known/openid-configuration)
                # passes the TypeScript SDK's OIDC schema. Honest: no ID token is ever
                # issued (no ``openid`` scope), so no algorithm and an empty key set.
                "jwks_uri": issuer + JWKS,
                "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": [],
            },
            headers={"cache-control": "public, max-age=300", **_CORS},
        )

    async def jwks(self, request: Request) -> Response:
        """The authorization server's signing keys: none (it signs no ID token or JWT)."""
        if request.method == "OPTIONS":
            return await self.preflight(request, "GET, OPTIONS")
        return JSONResponse({"keys": []}, headers={"cache-control": "public, max-age=300", **_CORS})

    async def resource_metadata(self, request: Request) -> Response:
        if request.method == "OPTIONS":
            return await self.preflight(request, "GET, OPTIONS")
        base = self.issuer(request)
        rest = request.path_params.get("rest", "")
        if rest == "":
            resource: str | None = base + "/mcp"  # the root describes the admin endpoint
        else:
            origin = origin_of(base)
            resource = resource_of(base, origin + rest) or resource_of(base, base + rest)
        if resource is None:
            return _not_found()
        if rest.endswith("/"):
            # RFC 9728 §3.3: the resource is the very URL the metadata URL was built from.
            # A client given ``…/mcp/`` (VS Code compares exactly) sends that back as
            # ``resource``; it names the same endpoint, and tokens are bound to ``…/mcp``.
            resource += "/"
        return JSONResponse(
            {
                "resource": resource,
                "authorization_servers": [base],
                "scopes_supported": list(scope_names.RESOURCE_SCOPES),
                "bearer_methods_supported": ["header"],
                "resource_name": "MetaCortex",
            },
            headers={"cache-control": "public, max-age=300", **_CORS},
        )

    # --------------------------------------------------------- authorize
    def _error_page(self, request: Request, message: str, status: int = 400) -> Response:
        return self.owner.render(
            request, "auth_error.html", {"message": message}, status_code=status
        )

    def _redirect(self, request: Request, redirect_uri: str, params: dict[str, str]) -> Response:
        query = urlencode({**params, "iss": self.issuer(request)})
        separator = "&" if urlsplit(redirect_uri).query else "?"
        return RedirectResponse(
            redirect_uri + separator + query, status_code=303, headers=_NO_STORE
        )

    async def authorize(self, request: Request) -> Response:
        wait = self.limits.authorization(request)
        if wait is not None:
            refused = self._error_page(
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
            return self._error_page(request, "The request names no client (client_id).")
        try:
            client = await self.clients.get(client_id)
        except UnknownClient as error:
            return self._error_page(request, f"The client cannot be used: {error}")
        redirect_uri = client.match_redirect(params.get("redirect_uri"))
        if redirect_uri is None:
            return self._error_page(
                request, "The redirect_uri is not one this client registered; nothing was sent."
            )
        state = params.get("state")
        too_long = state_problem(state)
        if too_long is not None:
            return self._error_page(request, f"The request cannot be answered: {too_long}.")
        kept = {"state": state} if state is not None else {}

        def fail(error: str, description: str) -> Response:
            return self._redirect(
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
        base = self.issuer(request)
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
        request_id = await anyio.to_thread.run_sync(self.tokens.save_request, pending)
        return RedirectResponse(
            f"{base}{CONSENT}?{urlencode({'request': request_id})}",
            status_code=303,
            headers=_NO_STORE,
        )

    # ----------------------------------------------------------- consent
    async def consent(self, request: Request) -> Response:
        form: FormData | None = await request.form() if request.method == "POST" else None
        request_id = (
            _field(form, "request") if form is not None else request.query_params.get("request")
        )
        pending = (
            await anyio.to_thread.run_sync(self.tokens.get_request, request_id)
            if request_id
            else None
        )
        if pending is None or request_id is None:
            return self._error_page(
                request, "This authorization request expired or was already answered.", 400
            )
        caller = await self.owner.caller(request)
        here = f"{self.issuer(request)}{CONSENT}?{urlencode({'request': request_id})}"
        if caller is None and form is None and _arrived_cross_site(request):
            # The SameSite=Strict session cookie is withheld on a navigation that started
            # on another site (the client's page). One same-origin hop makes the browser
            # send it, so a signed-in owner is not asked for the passphrase again.
            return self.owner.render(request, "hop.html", {"next_url": here + "&hop=1"})
        if caller is None:
            return await self.owner.sign_in_page(request, here, status_code=401 if form else 200)
        session = caller.session
        try:
            client = await self.clients.get(str(pending["client_id"]))
        except UnknownClient as error:
            return self._error_page(request, f"The client cannot be used: {error}")
        redirect_uri = str(pending["redirect_uri"])
        if not served(self.issuer(request), self.runtime.profiles, str(pending["resource"])):
            # Only a signed-in approver learns that an endpoint does not exist.
            return self._error_page(
                request,
                f"The client asks for {pending['resource']}, which is not an MCP endpoint "
                "of this server; nothing was granted. Check the URL given to the client.",
            )
        allowed = allowed_levels(caller, self._endpoint(request, str(pending["resource"])))
        if not allowed:
            return self._error_page(
                request,
                "You have no space you could give this client: nothing was granted. Ask "
                "the owner of this server to add you to a space, then connect it again.",
                403,
            )
        page = _ConsentPage(request_id, caller, client, pending, allowed)
        if form is None:
            return self._consent_page(request, page, preselection(allowed).fields())
        if not session.csrf_matches(_field(form, "csrf")):
            return self._error_page(request, "The form expired; start again.", 403)
        spaces: SpaceChoice | None = None
        if _field(form, "decision") == "approve":
            try:
                spaces = chosen(form, allowed)
            except InvalidArgument as problem:
                # Nothing is spent: the page again, as it was filled in, saying what to fix.
                typed = {k: v for k, v in form.multi_items() if isinstance(v, str)}
                return self._consent_page(request, page, typed, problem.message)
        taken = await anyio.to_thread.run_sync(self.tokens.take_request, request_id)
        if taken is None:
            return self._error_page(request, "This authorization request was already answered.")
        kept = {"state": str(taken["state"])} if taken.get("state") is not None else {}
        if spaces is None:
            log(logging.INFO, "oauth consent denied", oauth_client=str(taken["client_id"])[:200])
            return self._redirect(
                request,
                redirect_uri,
                {"error": "access_denied", "error_description": "the owner denied access", **kept},
            )
        preset = BY_ID.get(_field(form, "preset") or "")
        if preset is None:
            return self._error_page(request, "Choose what the client may do.")
        redirect_host = redirects.shown_host(redirect_uri)
        # One truth: the grant's (and its tokens') scopes are those its preset uses.
        scopes = granted_scopes(
            preset,
            tuple(taken["scopes"]),
            self._endpoint_tools(request, str(taken["resource"])),
        )
        grant = {
            "client_id": client.client_id,
            "client_name": client.display_name(),
            "redirect_host": redirect_host,
            "resource": taken["resource"],
            "scopes": list(scopes),
            "preset": preset.id,
            "chatgpt_tools": _field(form, "chatgpt_tools") == "on",
            # Who approved it, and the spaces they chose for it (auth/consent_spaces.py).
            "person": caller.person.id,
            **spaces.record(),
        }
        grant_id = await anyio.to_thread.run_sync(self.tokens.create_grant, grant)
        if client.registered_by == "dynamic registration":
            await anyio.to_thread.run_sync(self.clients.keep, client.client_id)
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
            self.tokens.issue_code,
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
        return self._redirect(request, redirect_uri, {"code": code, **kept})

    def _consent_page(
        self,
        request: Request,
        page: _ConsentPage,
        fields: dict[str, str],
        error: str | None = None,
    ) -> Response:
        """The consent page; ``fields``: the spaces as selected (the preselection, or as
        posted when a choice was refused with ``error``)."""
        client, pending, caller = page.client, page.pending, page.caller
        redirect_uri = str(pending["redirect_uri"])
        known = known_client(urlsplit(redirect_uri).hostname or "")
        target = redirects.csp_source(redirect_uri)
        scopes: list[str] = list(pending["scopes"])
        return self.owner.render(
            request,
            "consent.html",
            {
                "action": self.issuer(request) + CONSENT,
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
                    tuple(scopes), self._endpoint_tools(request, str(pending["resource"]))
                ).id,
                "chatgpt_tools": fields.get("chatgpt_tools") == "on"
                if "decision" in fields
                else (known.chatgpt_tools if known is not None else False),
                "offline": scope_names.OFFLINE in scopes or client.refresh_grant,
            },
            status_code=400 if error is not None else 200,
            form_targets=(target,) if target is not None else (),
        )

    def _endpoint(self, request: Request, resource: str) -> Profile | None:
        """The profile of the endpoint ``resource`` (None: not one of this server's)."""
        base = self.issuer(request)
        route = resolve(resource[len(base) :]) if resource.startswith(base + "/") else None
        return self.runtime.profiles.get(route.client_id) if route is not None else None

    def _endpoint_tools(self, request: Request, resource: str) -> frozenset[str] | None:
        """The tools the endpoint ``resource`` offers (None: not one of this server's)."""
        endpoint = self._endpoint(request, resource)
        return endpoint.allowed_tools if endpoint is not None else None

    def _presets_at(self, request: Request, resource: str) -> list[dict[str, Any]]:
        """Each preset as it applies at the endpoint: what the grant would really get,
        in words derived from it."""
        endpoint = self._endpoint(request, resource)
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

    # ------------------------------------------------------------- token
    async def _client(self, request: Request, form: FormData) -> Client:
        client_id = _field(form, "client_id")
        secret = _field(form, "client_secret")
        assertion = _field(form, "client_assertion")
        authorization = request.headers.get("authorization", "")
        if authorization.lower().startswith("basic "):
            try:
                decoded = base64.b64decode(authorization[6:].strip(), validate=True).decode()
            except (binascii.Error, UnicodeDecodeError):
                raise OAuthError("invalid_client", "malformed Basic credentials", 401) from None
            basic_id, _, basic_secret = decoded.partition(":")
            client_id, secret = unquote(basic_id), unquote(basic_secret)
        if not client_id and assertion:
            client_id = claimed_client_id(assertion)
        if not client_id:
            raise OAuthError("invalid_client", "client_id is required", 401)
        if is_metadata_url(client_id):
            # Looking a document up may fetch and cache it: it counts like an authorize.
            wait = self.limits.authorization(request)
            if wait is not None:
                raise OAuthError(
                    "temporarily_unavailable",
                    f"too many requests from this address; retry after {wait} s",
                    429,
                )
        try:
            client = await self.clients.get(client_id)
        except UnknownClient as error:
            raise OAuthError("invalid_client", str(error), 401) from None
        if client.auth_method == "private_key_jwt" or assertion is not None:
            await self._verify_assertion(request, form, client, assertion)
        elif not client.secret_matches(secret):
            raise OAuthError("invalid_client", "client authentication failed", 401)
        return client

    async def _verify_assertion(
        self, request: Request, form: FormData, client: Client, assertion: str | None
    ) -> None:
        if client.auth_method != "private_key_jwt":
            raise OAuthError("invalid_client", "this client does not use private_key_jwt", 401)
        if not assertion or _field(form, "client_assertion_type") != ASSERTION_TYPE:
            raise OAuthError(
                "invalid_client",
                f"authenticate with client_assertion_type={ASSERTION_TYPE} and client_assertion",
                401,
            )
        issuer = self.issuer(request)
        try:
            await verify_assertion(
                assertion,
                client_id=client.client_id,
                jwks=client.jwks,
                jwks_uri=client.jwks_uri,
                documents=self.documents,
                store=self._require_store(),
                audiences=(issuer + TOKEN, issuer, issuer + REVOKE),
            )
        except InvalidAssertion as error:
            raise OAuthError("invalid_client", str(error), 401) from None

    async def token(self, request: Request) -> Response:
        if request.method == "OPTIONS":
            return await self.preflight(request)
        try:
            form = await request.form()
            client = await self._client(request, form)
            grant_type = _field(form, "grant_type")
            if grant_type == "authorization_code":
                body = await self._code_grant(request, form, client)
            elif grant_type == "refresh_token":
                body = await self._refresh_grant(request, form, client)
            else:
                raise OAuthError(
                    "unsupported_grant_type", "use authorization_code or refresh_token"
                )
        except OAuthError as error:
            return _oauth_json(error)
        return JSONResponse(body, headers={**_NO_STORE, **_CORS})

    async def _code_grant(self, request: Request, form: FormData, client: Client) -> dict[str, Any]:
        code = _field(form, "code")
        verifier = _field(form, "code_verifier")
        if not code or not verifier:
            raise OAuthError("invalid_request", "code and code_verifier are required")
        binding = await anyio.to_thread.run_sync(self.tokens.code, code)
        if binding is None:
            raise OAuthError("invalid_grant", "the code is unknown or expired")
        try:
            _check_code(form, client, binding, verifier)
        except OAuthError:
            # The code is spent: the grant it created can never be used, so it goes too.
            await anyio.to_thread.run_sync(self.tokens.spend_code, code)
            raise
        scopes = tuple(binding["scopes"])
        refresh = scope_names.OFFLINE in scopes or client.refresh_grant
        return await self._exchange(request, CODE, code, binding, scopes, refresh=refresh)

    async def _exchange(
        self,
        request: Request,
        kind: Literal["code", "refresh_token"],
        presented: str,
        binding: dict[str, Any],
        scopes: tuple[str, ...],
        *,
        refresh: bool,
    ) -> dict[str, Any]:
        """Spend a checked code or refresh token; the grace window decides what a repeat
        gets (``auth.tokens``): the first use's pair when the same address and user agent
        ask again, else nothing, and the grant is revoked. Every repeat is a warning that
        names its address."""
        grant_id = str(binding["grant"])
        if await anyio.to_thread.run_sync(self.tokens.grant, grant_id) is None:
            raise OAuthError("invalid_grant", "the grant was revoked")
        address = client_address(request)
        user_agent = request.headers.get("user-agent", "")
        presenter = Presenter(address.bucket, user_agent)
        exchanged = await anyio.to_thread.run_sync(
            partial(
                self.tokens.exchange,
                kind,
                presented,
                binding,
                scopes,
                refresh=refresh,
                presenter=presenter,
            )
        )
        what = "code" if kind == CODE else "refresh token"
        who = {"address": address.ip, "user_agent": bounded_text(user_agent)}
        if exchanged.outcome == "reused":
            why = (
                "replayed within the grace window from another address or user agent than "
                f"its first use (different: {', '.join(exchanged.differs)})"
                if exchanged.differs
                else "reused"
            )
            log(logging.WARNING, f"oauth {what} {why}: grant revoked", grant_id=grant_id, **who)
            raise OAuthError("invalid_grant", f"the {what} was already used; the grant is revoked")
        if exchanged.pair is None:
            raise OAuthError("invalid_grant", f"the {what} is unknown or expired")
        if exchanged.outcome == "repeated":
            log(
                logging.WARNING,
                f"oauth {what} repeated within the grace window by its first user: "
                "answered with the pair of its first use",
                grant_id=grant_id,
                **who,
            )
        return _token_body(exchanged.pair)

    async def _refresh_grant(
        self, request: Request, form: FormData, client: Client
    ) -> dict[str, Any]:
        token = _field(form, "refresh_token")
        if not token:
            raise OAuthError("invalid_request", "refresh_token is required")
        # Every check comes before the token is used: a refused refresh leaves it as it was.
        binding = await anyio.to_thread.run_sync(self.tokens.refresh_binding, token)
        if binding is None:
            raise OAuthError("invalid_grant", "the refresh token is unknown or expired")
        if binding["client_id"] != client.client_id:
            raise OAuthError("invalid_grant", "the refresh token was issued to another client")
        resource = _field(form, "resource")
        if resource is not None and _trim(resource) != binding["resource"]:
            raise OAuthError("invalid_target", "resource differs from the one authorized")
        scopes = tuple(binding["scopes"])
        asked = _field(form, "scope")
        if asked is not None and asked.split():
            narrowed = scope_names.parse(asked)
            if not set(narrowed) <= set(scopes):
                raise OAuthError("invalid_scope", "a refresh cannot widen the granted scopes")
            # offline_access stays: the family continues
            scopes = tuple(
                s
                for s in scope_names.SUPPORTED
                if s in narrowed or (s == scope_names.OFFLINE and s in scopes)
            )
        # refresh=True: the family continues
        return await self._exchange(request, REFRESH, token, binding, scopes, refresh=True)

    # ------------------------------------------------------------ revoke
    async def revoke(self, request: Request) -> Response:
        if request.method == "OPTIONS":
            return await self.preflight(request)
        try:
            form = await request.form()
            client = await self._client(request, form)
            token = _field(form, "token")
            if not token:
                raise OAuthError("invalid_request", "token is required")
        except OAuthError as error:
            return _oauth_json(error)
        found = await anyio.to_thread.run_sync(self.tokens.find, token)
        if found is not None and found[1].get("client_id") == client.client_id:
            kind, binding = found
            if kind == "refresh_token":
                await anyio.to_thread.run_sync(self.tokens.revoke_grant, str(binding["grant"]))
            else:
                await anyio.to_thread.run_sync(self.tokens.revoke_access, token)
        # RFC 7009: an unknown or foreign token is answered like a revoked one.
        return Response(status_code=200, headers={**_NO_STORE, **_CORS})


@dataclass(frozen=True, slots=True)
class _ConsentPage:
    """What the consent page is about: the request, who approves, the client, and the
    spaces the approver may give it."""

    request_id: str
    caller: Caller
    client: Client
    pending: dict[str, Any]
    allowed: Mapping[str, Level]


class _LazyProvider:
    """What the SDK's RegistrationHandler calls: ``register_client``, once started."""

    def __init__(self, server: AuthorizationServer) -> None:
        self._server = server

    async def register_client(self, client_info: Any) -> None:
        await self._server.clients.register_client(client_info)


def _check_code(form: FormData, client: Client, binding: dict[str, Any], verifier: str) -> None:
    if binding["client_id"] != client.client_id:
        raise OAuthError("invalid_grant", "the code was issued to another client")
    redirect_uri = _field(form, "redirect_uri")
    if (redirect_uri or binding["redirect_given"]) and redirect_uri != binding["redirect_uri"]:
        raise OAuthError("invalid_grant", "redirect_uri differs from the authorization request")
    if not (43 <= len(verifier) <= 128 and set(verifier) <= _VERIFIER_CHARS):
        raise OAuthError("invalid_grant", "code_verifier must be 43-128 unreserved characters")
    if not pkce_matches(verifier, str(binding["code_challenge"])):
        raise OAuthError("invalid_grant", "code_verifier does not match the code_challenge")
    resource = _field(form, "resource")
    if resource is not None and _trim(resource) != binding["resource"]:
        raise OAuthError("invalid_target", "resource differs from the one authorized")


def _arrived_cross_site(request: Request) -> bool:
    return (
        request.headers.get("sec-fetch-site") == "cross-site" and "hop" not in request.query_params
    )


def _field(form: FormData | None, name: str) -> str | None:
    if form is None:
        return None
    value = form.get(name)
    return value if isinstance(value, str) else None


def _trim(url: str) -> str:
    return url[:-1] if url.endswith("/") else url


def _token_body(issued: Issued) -> dict[str, Any]:
    body: dict[str, Any] = {
        "access_token": issued.access_token,
        "token_type": "Bearer",
        "expires_in": issued.expires_in,
        "scope": " ".join(issued.scopes),
    }
    if issued.refresh_token is not None:
        body["refresh_token"] = issued.refresh_token
    return body


def _not_found() -> Response:
    return JSONResponse(
        {"error": {"code": "not_found", "message": "no such metadata document"}},
        status_code=404,
        headers={"cache-control": "no-store"},
    )
