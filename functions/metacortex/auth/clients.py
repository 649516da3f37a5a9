"""Registered clients: Client ID Metadata Documents first, Dynamic Client Registration second.

A client is looked up by its ``client_id``: an https URL is a metadata document
(``cimd``), anything else a record written by ``/oauth/register`` (kind
``client``, its secret kept only as sha256). Which redirect URIs are accepted is
``auth.redirects``' rule, applied at registration and again on every lookup.
Redirect URIs match exactly, except loopback ``http`` ones, which match on any
port (RFC 8252 §7.3) so Claude Code and other local clients can listen on a
random port.

Anyone may register, so a registration is kept only ``unused_lifetime``
(``METACORTEX_OAUTH_UNUSED_CLIENT_MINUTES``) until the owner first approves the
client on the consent page; from then on it is kept until the owner removes it.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Final
from urllib.parse import urlsplit

import anyio.to_thread
from mcp.server.auth.provider import RegistrationError
from mcp.shared.auth import DEFAULT_GRANT_TYPES, OAuthClientInformationFull

from metacortex.auth import redirects
from metacortex.auth.cimd import MetadataDocumentError, MetadataDocuments, is_metadata_url
from metacortex.auth.limits import client_name_problem
from metacortex.domain.records import utc_now
from metacortex.owner.sessions import digest
from metacortex.storage.base import MemoryStore

KIND: Final = "client"


class UnknownClient(Exception):
    """The client cannot be used; the message is safe to show."""


@dataclass(frozen=True, slots=True)
class Client:
    client_id: str
    name: str | None
    redirect_uris: tuple[str, ...]
    auth_method: str  # none | client_secret_post | client_secret_basic | private_key_jwt
    secret_sha256: str | None
    registered_by: str  # "metadata document" | "dynamic registration"
    jwks_uri: str | None = None
    jwks: dict[str, Any] | None = None
    # Registered for the refresh_token grant: it gets refresh tokens without asking for
    # offline_access (the TypeScript SDK 1.32 asks only for the challenge's scopes).
    refresh_grant: bool = False

    def display_name(self) -> str:
        return self.name or urlsplit(self.redirect_uris[0]).hostname or self.client_id

    def match_redirect(self, requested: str | None) -> str | None:
        """The redirect URI to use, or None when ``requested`` is not registered."""
        if requested is None:
            return self.redirect_uris[0] if len(self.redirect_uris) == 1 else None
        if requested in self.redirect_uris:
            return requested
        if redirects.kind(requested) != "loopback":
            return None
        asked = urlsplit(requested)
        for registered in self.redirect_uris:
            known = urlsplit(registered)
            if (
                known.scheme == "http"
                and known.hostname == asked.hostname
                and known.path == asked.path
                and known.query == asked.query
            ):
                return requested  # loopback: any port
        return None

    def secret_matches(self, presented: str | None) -> bool:
        if self.secret_sha256 is None:
            return True
        if presented is None:
            return False
        return hmac.compare_digest(self.secret_sha256, digest(presented))

    @property
    def confidential(self) -> bool:
        return self.secret_sha256 is not None


class ClientRegistry:
    def __init__(
        self, store: MemoryStore, documents: MetadataDocuments, unused_lifetime: timedelta
    ) -> None:
        self._store = store
        self._documents = documents
        self._unused_lifetime = unused_lifetime

    async def get(self, client_id: str) -> Client:
        if is_metadata_url(client_id):
            try:
                document = await self._documents.get(client_id)
            except MetadataDocumentError as error:
                raise UnknownClient(str(error)) from None
            uris = tuple(u for u in document["redirect_uris"] if redirects.allowed(u))
            if not uris:
                raise UnknownClient("the client metadata document lists no usable redirect_uris")
            return Client(
                client_id=client_id,
                name=document["client_name"],
                redirect_uris=uris,
                auth_method=document["token_endpoint_auth_method"],
                secret_sha256=None,
                registered_by="metadata document",
                jwks_uri=document.get("jwks_uri"),
                jwks=document.get("jwks"),
                refresh_grant="refresh_token" in document.get("grant_types", ()),
            )
        record = await anyio.to_thread.run_sync(self._store.auth_get, KIND, client_id)
        if record is None:
            raise UnknownClient(
                "unknown client_id; register the client first (a registration that is never "
                "approved expires: remove the connector in the client and add it again)"
            )
        # Checked again: a registration stored before today's rule cannot use what it forbids.
        uris = tuple(u for u in record["redirect_uris"] if redirects.allowed(u))
        if not uris:
            raise UnknownClient("the client registered no usable redirect_uris; register again")
        return Client(
            client_id=client_id,
            name=record.get("client_name"),
            redirect_uris=uris,
            auth_method=str(record["auth_method"]),
            secret_sha256=record.get("secret_sha256"),
            registered_by="dynamic registration",
            # Registrations stored before grant_types was kept had the SDK's default.
            refresh_grant="refresh_token" in record.get("grant_types", DEFAULT_GRANT_TYPES),
        )

    # The one method of the SDK's OAuthAuthorizationServerProvider its RegistrationHandler calls.
    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        long_name = client_name_problem(client_info.client_name)
        if long_name is not None:
            raise RegistrationError("invalid_client_metadata", long_name)
        uris = [str(uri) for uri in client_info.redirect_uris or []]
        bad = [uri for uri in uris if not redirects.allowed(uri)]
        if not uris or bad:
            raise RegistrationError("invalid_redirect_uri", redirects.refusal(bad))
        record: dict[str, Any] = {
            "client_name": client_info.client_name,
            "redirect_uris": uris,
            "auth_method": client_info.token_endpoint_auth_method or "none",
            "grant_types": list(client_info.grant_types),
            "secret_sha256": digest(client_info.client_secret)
            if client_info.client_secret
            else None,
            "issued_at": client_info.client_id_issued_at,
            "pending": True,
        }
        expires = utc_now() + self._unused_lifetime
        await anyio.to_thread.run_sync(
            self._store.auth_put, KIND, client_info.client_id, record, expires
        )

    def keep(self, client_id: str) -> None:
        """The owner approved this client: a registration still pending is kept from now
        on until the owner removes it (a no-op for any other client)."""
        record = self._store.auth_get(KIND, client_id)
        if record is not None and record.get("pending"):
            record.pop("pending")
            self._store.auth_put(KIND, client_id, record, None)

    def list(self) -> list[tuple[str, dict[str, Any]]]:
        return self._store.auth_list(KIND)

    def delete(self, client_id: str) -> bool:
        return self._store.auth_delete(KIND, client_id)
