"""Client ID Metadata Documents: a client_id that is an https URL names its own metadata.

The fetch refuses anything but https, any host that resolves to an address that
is not globally reachable (``reachable.globally_reachable``: private, loopback,
link-local, every IPv6 form of such an IPv4 address, ...), redirects, bodies over
``MAX_BYTES`` and answers slower than ``TIMEOUT_S``. Documents are cached in the
store: fresh for ``FRESH``, and served stale for up to ``STALE`` when a refetch
fails (hosted documents have been seen answering HTML, 403 or 503 at times).

``test_origin`` (``METACORTEX_OAUTH_CIMD_TEST_ORIGIN``) lets tests serve documents
from a loopback http fixture; it is never set in production.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import Any, Final
from urllib.parse import urlsplit

import anyio.to_thread
import httpcore2

from metacortex import __version__
from metacortex.auth.reachable import globally_reachable
from metacortex.domain.records import utc_now
from metacortex.owner.sessions import digest
from metacortex.storage.base import MemoryStore

KIND: Final = "cimd"
# Who is fetching: chatgpt.com and claude.ai sit behind bot rules that turn away
# requests without one.
USER_AGENT: Final = f"MetaCortex/{__version__} (+client-metadata fetch)".encode()
JWKS_KIND: Final = "jwks"
MAX_BYTES: Final = 16 * 1024
TIMEOUT_S: Final = 5.0
FRESH: Final = timedelta(hours=1)
STALE: Final = timedelta(days=2)


class MetadataDocumentError(Exception):
    """Why a client metadata document cannot be used (safe to show to the client)."""


def is_metadata_url(client_id: str) -> bool:
    return client_id.startswith(("https://", "http://"))


class MetadataDocuments:
    def __init__(self, store: MemoryStore, *, test_origin: str | None = None) -> None:
        self._store = store
        self._test_origin = test_origin.rstrip("/") if test_origin else None

    async def get(self, url: str) -> dict[str, Any]:
        """The validated client metadata document of ``url``, cached or fetched."""
        return await self._cached(KIND, url, lambda body: _validated(url, body))

    async def jwks(self, url: str) -> dict[str, Any]:
        """A client's JSON Web Key Set (for ``private_key_jwt``), same rules and cache."""
        return await self._cached(JWKS_KIND, url, _validated_jwks)

    async def _cached(
        self, kind: str, url: str, validate: Callable[[bytes], dict[str, Any]]
    ) -> dict[str, Any]:
        key = digest(url)
        cached = await anyio.to_thread.run_sync(self._store.auth_get, kind, key)
        now = utc_now()
        age = now.timestamp() - float(cached["fetched_at"]) if cached is not None else None
        if cached is not None and age is not None and age < FRESH.total_seconds():
            return dict(cached["document"])
        try:
            document = validate(await self._fetch(url))
        except MetadataDocumentError:
            if cached is not None:
                return dict(cached["document"])  # stale, but the host is having a bad moment
            raise
        record = {"document": document, "fetched_at": now.timestamp()}
        await anyio.to_thread.run_sync(self._store.auth_put, kind, key, record, now + STALE)
        return document

    def _check_url(self, url: str) -> bool:
        """True when the URL is the test fixture's (no address checks)."""
        if self._test_origin is not None and url.startswith(self._test_origin + "/"):
            return True
        parts = urlsplit(url)
        if parts.scheme != "https":
            raise MetadataDocumentError("a client_id URL must use https")
        if not parts.hostname or parts.username or parts.password or parts.fragment:
            raise MetadataDocumentError("a client_id URL needs a host and no credentials")
        if parts.path in ("", "/"):
            raise MetadataDocumentError("a client_id URL must have a path")
        return False

    async def _fetch(self, url: str) -> bytes:
        fixture = self._check_url(url)
        address: str | None = None
        if not fixture:
            host = urlsplit(url).hostname or ""
            try:
                infos = await anyio.to_thread.run_sync(
                    socket.getaddrinfo, host, 443, 0, socket.SOCK_STREAM
                )
            except OSError:
                raise MetadataDocumentError(f"cannot resolve {host}") from None
            if not infos or not all(globally_reachable(str(info[4][0])) for info in infos):
                raise MetadataDocumentError(
                    f"{host} resolves to a private or loopback address; refused"
                )
            address = str(infos[0][4][0])
        return await fetch_limited(url, address)


class _PinnedBackend(httpcore2.AsyncNetworkBackend):
    """Connects to the address that was checked, whatever DNS answers next (no
    rebinding between the check and the connection); TLS still verifies the host name."""

    def __init__(self, address: str) -> None:
        self._address = address
        self._inner = httpcore2.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        local_address: str | None = None,
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        return await self._inner.connect_tcp(
            self._address,
            port,
            timeout=timeout,
            local_address=local_address,
            socket_options=socket_options,
        )

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


async def fetch_limited(url: str, address: str | None) -> bytes:
    """GET ``url`` (connected to ``address`` when given): no redirects, no proxies, at
    most ``MAX_BYTES`` and ``TIMEOUT_S`` in all; the body of a 200, else an error."""
    backend = _PinnedBackend(address) if address is not None else None
    timeouts = {"connect": TIMEOUT_S, "read": TIMEOUT_S, "write": TIMEOUT_S, "pool": TIMEOUT_S}
    try:
        with anyio.fail_after(TIMEOUT_S):
            async with (
                httpcore2.AsyncConnectionPool(network_backend=backend) as pool,
                pool.stream(
                    "GET",
                    url,
                    headers=[(b"accept", b"application/json"), (b"user-agent", USER_AGENT)],
                    extensions={"timeout": timeouts},
                ) as response,
            ):
                if response.status != 200:
                    raise MetadataDocumentError(
                        f"the client metadata document answered HTTP {response.status}"
                    )
                body = b""
                async for chunk in response.aiter_stream():
                    body += chunk
                    if len(body) > MAX_BYTES:
                        raise MetadataDocumentError(
                            f"the client metadata document is larger than {MAX_BYTES} bytes"
                        )
                return body
    except TimeoutError:
        raise MetadataDocumentError(
            f"the client metadata document took over {TIMEOUT_S} s"
        ) from None
    except (httpcore2.NetworkError, httpcore2.ProtocolError, httpcore2.TimeoutException) as error:
        raise MetadataDocumentError(
            f"cannot fetch the client metadata document: {type(error).__name__}"
        ) from None


def _validated_jwks(body: bytes) -> dict[str, Any]:
    try:
        document = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise MetadataDocumentError(
            "the client's jwks_uri did not answer JSON (or it nests too deeply)"
        ) from None
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise MetadataDocumentError("the client's jwks_uri is not a JSON Web Key Set")
    return {"keys": document["keys"]}


def _validated(url: str, body: bytes) -> dict[str, Any]:
    try:
        document = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise MetadataDocumentError(
            "the client metadata document is not JSON (or it nests too deeply)"
        ) from None
    if not isinstance(document, dict):
        raise MetadataDocumentError("the client metadata document is not a JSON object")
    if document.get("client_id") != url:
        raise MetadataDocumentError("the document's client_id is not the URL it was fetched from")
    uris = document.get("redirect_uris")
    if not isinstance(uris, list) or not uris or not all(isinstance(u, str) for u in uris):
        raise MetadataDocumentError("the client metadata document lists no redirect_uris")
    if "client_secret" in document:
        raise MetadataDocumentError("a client metadata document must not carry a client_secret")
    name = document.get("client_name")
    method = str(document.get("token_endpoint_auth_method", "none"))
    jwks_uri = document.get("jwks_uri")
    jwks = document.get("jwks")
    grants = document.get("grant_types", ["authorization_code"])  # RFC 7591 §2 default
    if method == "private_key_jwt" and not isinstance(jwks_uri, str) and not isinstance(jwks, dict):
        raise MetadataDocumentError("a private_key_jwt client must publish jwks_uri or jwks")
    return {
        "client_id": url,
        "client_name": name if isinstance(name, str) and name.strip() else None,
        "redirect_uris": uris,
        "token_endpoint_auth_method": method,
        "jwks_uri": jwks_uri if isinstance(jwks_uri, str) else None,
        "jwks": jwks if isinstance(jwks, dict) else None,
        "grant_types": [g for g in grants if isinstance(g, str)]
        if isinstance(grants, list)
        else [],
    }
