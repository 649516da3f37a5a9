"""Replays of the clients whose code cannot run here (ChatGPT's and Claude.ai's
connector brokers, Cursor's desktop app): their requests as their vendors document and
as public reports captured them, sent over real loopback HTTP, with the owner's
Chromium giving consent.

What each sends is in ``tests.connectors.vendors``; this module is the OAuth client
they share: discovery from the 401 challenge (resource metadata, then the
authorization-server metadata at the well-known URLs the 2025-11-25 spec lists for an
issuer with a path), registration by metadata document or by DCR, a PKCE authorization
request, the ``iss`` and ``state`` checks of the redirect, the code exchange, refresh
and a refresh race. The MCP side is the official Python SDK's ``mcp.Client`` with the
access token as a bearer header, as a broker sends it.
"""

from __future__ import annotations

import re
import secrets
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlsplit

import anyio
import anyio.to_thread
import httpx2
import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.connectors.consent import Consent, ConsentBrowser
from tests.connectors.deployments import Deployment
from tests.connectors.vendors import Registration, Vendor
from tests.oauth_support import pkce_pair

ASSERTION_TYPE: Final = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
_PING: Final = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


class ReplayFailed(AssertionError):
    """A step of the replayed flow got an answer the real client would not accept."""


@dataclass(frozen=True)
class Discovery:
    resource: str
    scope: str  # the challenge's scope
    metadata: dict[str, Any]  # the authorization server's metadata
    tried: tuple[str, ...]  # every metadata URL asked, with its status

    @property
    def issuer(self) -> str:
        issuer: str = self.metadata["issuer"]
        return issuer

    def endpoint(self, name: str) -> str:
        url: str = self.metadata[f"{name}_endpoint"]
        return url


def authorization_server_metadata_urls(issuer: str) -> list[str]:
    """Where a client looks for the metadata of ``issuer`` (MCP 2025-11-25, RFC 8414
    §3.1 and OpenID Connect Discovery): path-inserted first, then path-appended."""
    parts = urlsplit(issuer)
    origin = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    if not path:
        return [
            origin + "/.well-known/oauth-authorization-server",
            origin + "/.well-known/openid-configuration",
        ]
    return [
        origin + "/.well-known/oauth-authorization-server" + path,
        origin + "/.well-known/openid-configuration" + path,
        origin + path + "/.well-known/openid-configuration",
    ]


async def discover(http: httpx2.AsyncClient, mcp_url: str) -> Discovery:
    """From a bare POST to the MCP URL to the authorization server's metadata."""
    headers = {"accept": "application/json, text/event-stream"}
    challenge = await http.post(mcp_url, json=_PING, headers=headers)
    www = challenge.headers.get("www-authenticate", "")
    found = re.search(r'resource_metadata="([^"]+)"', www)
    if challenge.status_code != 401 or found is None:
        raise ReplayFailed(
            f"discovery: POST {mcp_url} answered {challenge.status_code} "
            f"({www or 'no challenge'}): {challenge.text[:200]}"
        )
    scope = re.search(r'scope="([^"]*)"', www)
    resource = await http.get(found.group(1))
    if resource.status_code != 200:
        raise ReplayFailed(f"discovery: {found.group(1)} answered {resource.status_code}")
    described = resource.json()
    issuer = described["authorization_servers"][0]
    tried: list[str] = []
    for url in authorization_server_metadata_urls(issuer):
        answer = await http.get(url)
        tried.append(f"{url} {answer.status_code}")
        if answer.status_code == 200 and answer.headers.get("content-type", "").startswith(
            "application/json"
        ):
            metadata: dict[str, Any] = answer.json()
            if metadata.get("issuer") != issuer:
                raise ReplayFailed(f"discovery: {url} names issuer {metadata.get('issuer')}")
            return Discovery(
                resource=described["resource"],
                scope=scope.group(1) if scope else "",
                metadata=metadata,
                tried=tuple(tried),
            )
    raise ReplayFailed(f"discovery: no authorization-server metadata: {tried}")


@dataclass
class Signer:
    """The client's private key for ``private_key_jwt`` (its JWKS is served on loopback)."""

    key: rsa.RSAPrivateKey = field(
        default_factory=lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048)
    )

    def jwks(self) -> dict[str, Any]:
        jwk: dict[str, Any] = RSAAlgorithm.to_jwk(self.key.public_key(), as_dict=True)
        return {"keys": [{**jwk, "kid": "matrix-1", "alg": "RS256", "use": "sig"}]}

    def assertion(self, client_id: str, audience: str) -> str:
        now = int(time.time())
        claims = {
            "iss": client_id,
            "sub": client_id,
            "aud": audience,
            "iat": now,
            "exp": now + 300,
            "jti": str(uuid.uuid4()),
        }
        return jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": "matrix-1"})


@dataclass
class Tokens:
    access_token: str
    refresh_token: str | None
    scope: str


@dataclass
class ReplayedConnector:
    """One connection of a replayed client to one deployment."""

    deployment: Deployment
    redirect_uri: str
    http: httpx2.AsyncClient
    signer: Signer | None = None  # private_key_jwt when set, else a public client
    client_id: str = ""
    discovery: Discovery | None = None
    tokens: Tokens | None = None
    consent: Consent | None = None

    @property
    def found(self) -> Discovery:
        if self.discovery is None:
            raise ReplayFailed("not discovered yet")
        return self.discovery

    async def discover(self) -> Discovery:
        self.discovery = await discover(self.http, self.deployment.mcp)
        return self.discovery

    async def register(self, body: dict[str, Any]) -> str:
        answer = await self.http.post(self.found.endpoint("registration"), json=body)
        if answer.status_code != 201:
            raise ReplayFailed(f"registration: {answer.status_code} {answer.text[:300]}")
        self.client_id = answer.json()["client_id"]
        return self.client_id

    async def authorize(self, browser: ConsentBrowser, scope: str, **extra: str) -> tuple[str, str]:
        """The authorization request, consent in Chromium, the redirect's checks; the
        code and its PKCE verifier."""
        verifier, challenge = pkce_pair()
        state = secrets.token_urlsafe(16)
        query = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": self.redirect_uri,
            "state": state,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "resource": self.found.resource,
            **({"scope": scope} if scope else {}),
            **extra,
        }
        url = str(httpx2.URL(self.found.endpoint("authorization"), params=query))
        self.consent = await anyio.to_thread.run_sync(browser.approve, url)
        if self.consent.csp_violations:
            raise ReplayFailed(f"consent: the browser blocked {self.consent.csp_violations}")
        if not self.consent.location.startswith(self.redirect_uri + "?"):
            raise ReplayFailed(f"consent: sent to {self.consent.location[:200]}")
        params = self.consent.params
        if params.get("state") != state or params.get("iss") != self.found.issuer:
            raise ReplayFailed(f"consent: the redirect carried {params}")
        return params["code"], verifier

    def _authentication(self) -> dict[str, str]:
        if self.signer is None:
            return {"client_id": self.client_id}
        return {
            "client_id": self.client_id,
            "client_assertion_type": ASSERTION_TYPE,
            "client_assertion": self.signer.assertion(self.client_id, self.found.endpoint("token")),
        }

    async def token_request(self, form: dict[str, str]) -> httpx2.Response:
        return await self.http.post(
            self.found.endpoint("token"), data={**form, **self._authentication()}
        )

    def _keep(self, answer: httpx2.Response, step: str) -> Tokens:
        if answer.status_code != 200:
            raise ReplayFailed(f"{step}: {answer.status_code} {answer.text[:300]}")
        body = answer.json()
        self.tokens = Tokens(body["access_token"], body.get("refresh_token"), body["scope"])
        return self.tokens

    async def exchange(self, code: str, verifier: str) -> Tokens:
        answer = await self.token_request(
            {
                "grant_type": "authorization_code",
                "code": code,
                "code_verifier": verifier,
                "redirect_uri": self.redirect_uri,
                "resource": self.found.resource,
            }
        )
        return self._keep(answer, "token")

    def refresh_form(self, refresh_token: str) -> dict[str, str]:
        return {
            "grant_type": "refresh_token",
            "refresh_token": refresh_token,
            "resource": self.found.resource,
        }

    async def refresh(self) -> Tokens:
        if self.tokens is None or not self.tokens.refresh_token:
            raise ReplayFailed("refresh: no refresh token was issued")
        answer = await self.token_request(self.refresh_form(self.tokens.refresh_token))
        return self._keep(answer, "refresh")

    async def refresh_race(self) -> list[httpx2.Response]:
        """Two refreshes at once with the one refresh token (two egress workers, or a
        retry after a lost answer); the connector keeps the answer that came last."""
        if self.tokens is None or not self.tokens.refresh_token:
            raise ReplayFailed("race: no refresh token was issued")
        form = self.refresh_form(self.tokens.refresh_token)
        answers: dict[int, httpx2.Response] = {}
        order: list[int] = []

        async def one(index: int) -> None:
            answers[index] = await self.token_request(form)
            order.append(index)

        async with anyio.create_task_group() as group:
            for index in range(2):
                group.start_soon(one, index)
        if answers[order[-1]].status_code == 200:
            self._keep(answers[order[-1]], "race")
        return [answers[0], answers[1]]

    async def use(self, tool: str, arguments: dict[str, Any]) -> tuple[set[str], str]:
        """``tools/list`` and one tool call with the current access token: the tool
        names and "ok" or what went wrong."""
        if self.tokens is None:
            raise ReplayFailed("tools: no access token")
        return await use_token(self.deployment.mcp, self.tokens.access_token, tool, arguments)


async def use_token(
    mcp_url: str, access_token: str, tool: str, arguments: dict[str, Any]
) -> tuple[set[str], str]:
    headers = {"authorization": f"Bearer {access_token}"}
    try:
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            Client(streamable_http_client(mcp_url, http_client=http), mode="legacy") as client,
        ):
            names = {listed.name for listed in (await client.list_tools()).tools}
            result = await client.call_tool(tool, arguments)
    except Exception as error:  # noqa: BLE001 (the failure is the answer, named by the test)
        return set(), innermost(error)
    text = " ".join(getattr(item, "text", "") for item in result.content)
    return names, (f"tool error: {text[:300]}" if result.is_error else "ok " + text)


async def connect(
    vendor: Vendor,
    registration: Registration,
    deployment: Deployment,
    browser: ConsentBrowser,
    http: httpx2.AsyncClient,
) -> ReplayedConnector:
    """Discovery, registration, consent and the code exchange, as ``vendor`` does them."""
    signer = Signer() if vendor.signs and registration == "document" else None
    connector = ReplayedConnector(deployment, vendor.redirect_uri, http, signer)
    discovery = await connector.discover()
    if registration == "document":
        if not vendor.wants_document(discovery.metadata):
            raise ReplayFailed(f"registration: {vendor.name} would not use its document here")
        name = f"{vendor.name.lower()}-{uuid.uuid4().hex[:8]}"
        keys = {}
        if signer is not None:
            keys["jwks_uri"] = deployment.documents.add(name + "-keys", **signer.jwks())
        connector.client_id = deployment.documents.add(name, **vendor.document, **keys)
    else:
        for _ in range(vendor.registrations_per_connect):
            await connector.register(vendor.dcr_body)
    code, verifier = await connector.authorize(
        browser, vendor.scope(discovery.scope), **vendor.authorize_extra()
    )
    await connector.exchange(code, verifier)
    return connector


async def stays_connected(
    connector: ReplayedConnector, tool: str, arguments: dict[str, Any]
) -> None:
    """A refresh, then two refreshes racing with one refresh token: every pair the
    server handed out works for a tool call and refreshes once more."""
    await connector.refresh()
    _, outcome = await connector.use(tool, arguments)
    if not outcome.startswith("ok"):
        raise ReplayFailed(f"refresh: the refreshed access token: {outcome}")
    answers = await connector.refresh_race()
    statuses = [answer.status_code for answer in answers]
    if statuses != [200, 200]:
        texts = [answer.text[:200] for answer in answers]
        raise ReplayFailed(f"race: the two refreshes answered {statuses}: {texts}")
    for index, answer in enumerate(answers):
        pair = answer.json()
        _, outcome = await use_token(
            connector.deployment.mcp, pair["access_token"], tool, arguments
        )
        if not outcome.startswith("ok"):
            raise ReplayFailed(f"race: the access token of answer {index}: {outcome}")
        again = await connector.token_request(connector.refresh_form(pair["refresh_token"]))
        if again.status_code != 200:
            raise ReplayFailed(
                f"race: refreshing answer {index}'s token: {again.status_code} {again.text[:200]}"
            )


def innermost(error: BaseException) -> str:
    """An SDK failure as one line: task groups wrap the one error that matters."""
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return f"{type(error).__name__}: {error}"
