"""What every OAuth endpoint reaches: the settings and runtime, the abuse limits, the
owner's pages, and (once the app has started) the store's tokens, clients and cached
client metadata documents; with the issuer, the error page and the redirect to a client
that several endpoints answer with."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Final
from urllib.parse import urlencode, urlsplit

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from metacortex.access.profiles import Profile
from metacortex.auth.cimd import MetadataDocuments
from metacortex.auth.clients import ClientRegistry
from metacortex.auth.handlers.common import NO_STORE
from metacortex.auth.limits import AbuseLimits
from metacortex.auth.resource import OAuthResource
from metacortex.auth.tokens import TokenStore
from metacortex.config import Settings
from metacortex.kernel.routes import resolve
from metacortex.kernel.runtime import Runtime
from metacortex.owner import OwnerWeb, public_base, templates
from metacortex.storage.base import MemoryStore

TEMPLATES: Final = Path(__file__).parent.parent / "templates"
_NOT_STARTED: Final = "the OAuth server is not started"


class OAuthContext:
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
            self.store,
            page_templates=templates(TEMPLATES),
            directory_of=runtime.clients.current_directory,
        )

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

    def store(self) -> MemoryStore:
        if self._store is None:
            raise RuntimeError(_NOT_STARTED)
        return self._store

    @property
    def tokens(self) -> TokenStore:
        if self._tokens is None:
            raise RuntimeError(_NOT_STARTED)
        return self._tokens

    @property
    def documents(self) -> MetadataDocuments:
        if self._documents is None:
            raise RuntimeError(_NOT_STARTED)
        return self._documents

    @property
    def clients(self) -> ClientRegistry:
        if self._clients is None:
            raise RuntimeError(_NOT_STARTED)
        return self._clients

    def issuer(self, request: Request) -> str:
        return public_base(request, self.settings)

    def endpoint(self, request: Request, resource: str) -> Profile | None:
        """The profile of the endpoint ``resource`` (None: not one of this server's)."""
        base = self.issuer(request)
        route = resolve(resource[len(base) :]) if resource.startswith(base + "/") else None
        return self.runtime.profiles.get(route.client_id) if route is not None else None

    def endpoint_tools(self, request: Request, resource: str) -> frozenset[str] | None:
        """The tools the endpoint ``resource`` offers (None: not one of this server's)."""
        endpoint = self.endpoint(request, resource)
        return endpoint.allowed_tools if endpoint is not None else None

    def error_page(self, request: Request, message: str, status: int = 400) -> Response:
        """A page for the person at the browser, when nothing may go back to the client."""
        return self.owner.render(
            request, "auth_error.html", {"message": message}, status_code=status
        )

    def redirect(self, request: Request, redirect_uri: str, params: dict[str, str]) -> Response:
        """Back to the client with ``params`` and ``iss`` (RFC 9207)."""
        query = urlencode({**params, "iss": self.issuer(request)})
        separator = "&" if urlsplit(redirect_uri).query else "?"
        return RedirectResponse(redirect_uri + separator + query, status_code=303, headers=NO_STORE)
