"""Shared by tests/owner and tests/auth: a live OAuth-enabled server over loopback, a
local fixture serving Client ID Metadata Documents, and a plain-HTTP OAuth client.

Everything is the production code over real sockets; only the embedding model is a
stand-in (``tests.fakes``).
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
import secrets
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx2
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from metacortex.kernel.routes import FUNCTION_PREFIX
from metacortex.owner import set_passphrase
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.server.app import create_app
from metacortex.service import MemoryService
from metacortex.storage.sqlite import SQLiteStore
from tests.fakes import FixedImageDescriber, HashingEmbedder
from tests.google_front import CloudFunctionsFront
from tests.server.conftest import make_settings

PASSPHRASE: Final = "correct horse battery staple 42"
CALLBACK: Final = "http://127.0.0.1:9/callback"  # never contacted: the code is read off the URL


def loopback_listener() -> socket.socket:
    """A listening socket on a free loopback port (its URL is known before serving)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    return listener


@contextmanager
def serving(app: Any, listener: socket.socket | None = None) -> Iterator[str]:
    """Run an ASGI app under uvicorn on a free loopback port; yields its base URL."""
    listener = listener or loopback_listener()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, access_log=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    try:
        yield url
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        listener.close()


@dataclass
class MetadataFixture:
    """Serves Client ID Metadata Documents at ``{url}/clients/<name>.json``."""

    documents: dict[str, Any] = field(default_factory=dict)
    raw: dict[str, bytes] = field(default_factory=dict)  # served as is (hostile bodies)
    url: str = ""
    fetches: int = 0
    failing: bool = False
    # The User-Agent of every fetch, by document name.
    user_agents: dict[str, list[str]] = field(default_factory=dict)

    def app(self) -> Starlette:
        async def document(request: Request) -> Response:
            self.fetches += 1
            name = request.path_params["name"]
            self.user_agents.setdefault(name, []).append(request.headers.get("user-agent", ""))
            if self.failing:
                return Response("<html>busy</html>", status_code=503, media_type="text/html")
            name = request.path_params["name"]
            if name in self.raw:
                return Response(self.raw[name], media_type="application/json")
            if name not in self.documents:
                return JSONResponse({"error": "not found"}, status_code=404)
            return JSONResponse(self.documents[name])

        async def launch(request: Request) -> Response:
            # A page on another site linking to ``to``: the client's page in real life.
            target = html.escape(request.query_params["to"], quote=True)
            return HTMLResponse(f'<!doctype html><a id="go" href="{target}">connect</a>')

        return Starlette(routes=[Route("/clients/{name}.json", document), Route("/launch", launch)])

    def add(self, name: str, **fields: Any) -> str:
        client_id = f"{self.url}/clients/{name}.json"
        self.documents[name] = {"client_id": client_id, **fields}
        return client_id


@dataclass
class OAuthLive:
    url: str
    store: SQLiteStore
    app: Starlette
    documents: MetadataFixture

    @property
    def mcp(self) -> str:
        return self.url + "/mcp"


@contextmanager
def oauth_server(
    directory: Path,
    *,
    front: bool | None = None,
    store_file: str = "m.sqlite3",
    **overrides: Any,
) -> Iterator[OAuthLive]:
    """The OAuth server on loopback. ``front``: behind the emulated Cloud Functions front
    end (``tests.google_front``), stripping the function name (True, with the public URL
    set as the deployment docs say) or passing it on (False); ``live.url`` is then the
    front's origin and the app is reached only under ``/metaCortexMcp``. ``store_file``:
    the SQLite file in ``directory`` (``metacortex.sqlite3`` is where a command run with
    ``--data-dir directory`` finds it)."""
    fixture = MetadataFixture()
    with serving(fixture.app()) as fixture_url:
        fixture.url = fixture_url
        store = SQLiteStore(directory / store_file)
        set_passphrase(store, PASSPHRASE)
        service = MemoryService(
            store, HashingEmbedder(), merger=SentenceUnionMerger(), describer=FixedImageDescriber()
        )
        listener = loopback_listener()
        origin = f"http://127.0.0.1:{listener.getsockname()[1]}"
        values: dict[str, Any] = {
            "metacortex_oauth": True,
            "metacortex_oauth_cimd_test_origin": fixture_url,
            **({"metacortex_public_url": origin + FUNCTION_PREFIX} if front else {}),
            **overrides,
        }
        settings = make_settings(directory / "data", **values)
        app = create_app(settings, service)
        served: Any = app if front is None else CloudFunctionsFront(app, strip=front)
        health = "/healthz" if front is None else FUNCTION_PREFIX + "/healthz"
        try:
            with serving(served, listener) as url:
                assert httpx2.get(f"{url}{health}", timeout=30).status_code == 200
                yield OAuthLive(url, store, app, fixture)
        finally:
            store.close()


def pkce_pair() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    return verifier, challenge.rstrip(b"=").decode()


def hidden(html: str, name: str) -> str:
    match = re.search(rf'name="{name}" value="([^"]*)"', html)
    assert match is not None, f"no hidden field {name} in page"
    return match.group(1)


def checked_preset(html: str) -> str:
    """The preset the consent page has selected: what a plain "Allow" approves."""
    match = re.search(r'name="preset" value="([^"]+)"\s+aria-describedby="[^"]*" checked', html)
    assert match is not None, "no preset is selected on the consent page"
    return match.group(1)


def query_of(location: str) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(urlsplit(location).query).items()}


def authorization_query(client_id: str, challenge: str, **params: str) -> dict[str, str]:
    """The parameters of an authorization request (code, PKCE S256, ``CALLBACK``)."""
    return {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": CALLBACK,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        **params,
    }


class Browserless:
    """An OAuth user agent over plain HTTP: sign in, authorize, consent, exchange."""

    def __init__(self, live: OAuthLive) -> None:
        self.live = live
        self.http = httpx2.Client(base_url=live.url, timeout=30, follow_redirects=False)

    def close(self) -> None:
        self.http.close()

    def sign_in(self, passphrase: str = PASSPHRASE, next_url: str = "") -> httpx2.Response:
        page = self.http.get("/owner/sign-in", params={"next": next_url} if next_url else None)
        return self.http.post(
            "/owner/sign-in",
            data={
                "csrf": hidden(page.text, "csrf"),
                "next": next_url,
                "passphrase": passphrase,
            },
        )

    def register(self, **metadata: Any) -> dict[str, Any]:
        body = {"redirect_uris": [CALLBACK], "token_endpoint_auth_method": "none", **metadata}
        response = self.http.post("/oauth/register", json=body)
        assert response.status_code == 201, response.text
        registered: dict[str, Any] = response.json()
        return registered

    def authorize(self, client_id: str, challenge: str, **params: str) -> httpx2.Response:
        defaults = {
            "state": "st-1",
            "resource": self.live.mcp,
            "scope": "memory:read memory:write offline_access",
        }
        query = authorization_query(client_id, challenge, **{**defaults, **params})
        return self.http.get("/oauth/authorize", params=query)

    def consent(self, authorize: httpx2.Response, decision: str = "approve", **form: str) -> str:
        """Follow an authorize answer to the consent page, decide; the redirect Location."""
        assert authorize.status_code == 303, authorize.text
        page = self.http.get(authorize.headers["location"])
        assert page.status_code == 200, page.text
        answer = self.http.post(
            "/oauth/consent",
            data={
                "csrf": hidden(page.text, "csrf"),
                "request": hidden(page.text, "request"),
                "decision": decision,
                "preset": form.pop("preset", "read-write"),
                **form,
            },
        )
        assert answer.status_code == 303, answer.text
        return answer.headers["location"]

    def code_for(
        self, client_id: str, challenge: str, preset: str = "read-write", **params: str
    ) -> str:
        location = self.consent(self.authorize(client_id, challenge, **params), preset=preset)
        return query_of(location)["code"]

    def exchange(self, client_id: str, code: str, verifier: str, **extra: str) -> httpx2.Response:
        return self.http.post(
            "/oauth/token",
            data={
                "grant_type": "authorization_code",
                "client_id": client_id,
                "code": code,
                "code_verifier": verifier,
                "redirect_uri": CALLBACK,
                "resource": self.live.mcp,
                **extra,
            },
        )

    def tokens(
        self, client_id: str, secret: str | None = None, preset: str = "read-write", **params: str
    ) -> dict[str, Any]:
        """Authorize (approving ``preset``), then exchange the code; the token response."""
        verifier, challenge = pkce_pair()
        code = self.code_for(client_id, challenge, preset, **params)
        extra = {"resource": params["resource"]} if "resource" in params else {}
        if secret is not None:
            extra["client_secret"] = secret
        response = self.exchange(client_id, code, verifier, **extra)
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body


def mcp_post(url: str, token: str | None, body: dict[str, Any]) -> httpx2.Response:
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2025-06-18",
    }
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    return httpx2.post(url, headers=headers, json=body, timeout=30)


def tools_list(url: str, token: str) -> httpx2.Response:
    return mcp_post(url, token, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})


def tool_call(url: str, token: str, name: str, arguments: dict[str, Any]) -> httpx2.Response:
    return mcp_post(
        url,
        token,
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        },
    )


def approve_over_http(
    http: httpx2.Client,
    authorization_url: str,
    passphrase: str = PASSPHRASE,
    preset: str | None = "read-write",
) -> dict[str, str]:
    """Follow an authorization URL like a browser would, signing in if asked and
    approving (``preset`` None: the page's own selection, a plain "Allow"); the
    parameters the client's redirect URI receives. Works under any base path: every
    URL is taken from the pages themselves."""
    answer = http.get(authorization_url)
    assert answer.status_code == 303, answer.text
    consent_url = answer.headers["location"]
    page = http.get(consent_url)
    if 'name="passphrase"' in page.text:
        action = re.search(r'<form method="post" action="([^"]+)"', page.text)
        assert action is not None
        signed = http.post(
            action.group(1),
            data={
                "csrf": hidden(page.text, "csrf"),
                "next": hidden(page.text, "next"),
                "passphrase": passphrase,
            },
        )
        assert signed.status_code == 303, signed.text
        page = http.get(signed.headers["location"])
    action = re.search(r'<form method="post" action="([^"]+)"', page.text)
    assert action is not None, page.text
    decided = http.post(
        action.group(1),
        data={
            "csrf": hidden(page.text, "csrf"),
            "request": hidden(page.text, "request"),
            "decision": "approve",
            "preset": preset or checked_preset(page.text),
        },
    )
    assert decided.status_code == 303, decided.text
    return query_of(decided.headers["location"])


def access_token_over_http(http: httpx2.Client, url: str, resource: str) -> str:
    """Register a public client at ``url``, approve it (signing in as the owner when
    asked) and exchange the code: an access token for ``resource``."""
    client_id = http.post(
        f"{url}/oauth/register",
        json={"redirect_uris": [CALLBACK], "token_endpoint_auth_method": "none"},
    ).json()["client_id"]
    verifier, challenge = pkce_pair()
    query = authorization_query(client_id, challenge, resource=resource)
    code = approve_over_http(http, f"{url}/oauth/authorize?{urlencode(query)}")["code"]
    answer = http.post(
        f"{url}/oauth/token",
        data={
            "grant_type": "authorization_code",
            "client_id": client_id,
            "code": code,
            "code_verifier": verifier,
            "redirect_uri": CALLBACK,
        },
    )
    assert answer.status_code == 200, answer.text
    return str(answer.json()["access_token"])
