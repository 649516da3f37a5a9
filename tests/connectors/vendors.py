"""What the replayed clients send, field for field, and where each field comes from.

Client metadata documents are served on loopback by ``tests.oauth_support``'s fixture
(the server is told its origin by ``metacortex_oauth_cimd_test_origin``); everything
else in them is as published.

- ChatGPT: its document at ``https://chatgpt.com/oauth/<id>/client.json`` as quoted
  in public reports (Altinity/altinity-mcp#118, cloudflare/workers-oauth-provider#295,
  2026): ``private_key_jwt`` with RS256 keys at ``jwks_uri``, both ``none`` and
  ``private_key_jwt`` in ``token_endpoint_auth_methods_supported``, redirect
  ``https://chatgpt.com/connector/oauth/<id>``. Uses the document when the server
  advertises ``client_id_metadata_document_supported``, else DCR (OpenAI's Apps SDK
  docs); sends the resource metadata's ``resource`` verbatim.
- Claude.ai: its document at ``https://claude.ai/oauth/mcp-oauth-client-metadata`` as
  served on 2026-09-29 (quoted in a public test suite): a public client (``none``),
  redirect ``https://claude.ai/api/mcp/auth_callback``. Uses it only when the server
  also lists ``none``; else DCR, registering twice per connect; asks for the
  challenge's scopes plus ``offline_access`` with ``prompt=consent``.
- Cursor: its DCR body as captured in public reports (erp-mafia/accounted#2225,
  soflyy/agent-connector-for-wp#111, 2026): three redirect URIs in one request,
  ``cursor://anysphere.cursor-mcp/oauth/callback`` among them; a public client; the
  desktop app is called back on the private-use scheme. Cursor's OAuth client is the
  TypeScript SDK's, which asks for the challenge's scopes.

The DCR bodies of ChatGPT and Claude are not published: those are our reading (the
fields every DCR client sends, with their documented redirect URIs).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, Literal

Registration = Literal["document", "dynamic"]

CHATGPT_CALLBACK: Final = "https://chatgpt.com/connector/oauth/matrix-callback-id"
CLAUDE_CALLBACK: Final = "https://claude.ai/api/mcp/auth_callback"
CURSOR_CALLBACK: Final = "cursor://anysphere.cursor-mcp/oauth/callback"
GRANTS: Final = ["authorization_code", "refresh_token"]


@dataclass(frozen=True)
class Vendor:
    name: str
    redirect_uri: str
    document: dict[str, Any] = field(default_factory=dict)  # without client_id / jwks_uri
    signs: bool = False  # private_key_jwt with its own keys
    dcr_body: dict[str, Any] = field(default_factory=dict)
    registrations_per_connect: int = 1
    offline_access: bool = False  # appends offline_access and prompt=consent

    def wants_document(self, metadata: dict[str, Any]) -> bool:
        """Whether this client would use its metadata document with this server."""
        if not self.document or not metadata.get("client_id_metadata_document_supported"):
            return False
        methods = metadata.get("token_endpoint_auth_methods_supported", [])
        return not self.offline_access or "none" in methods  # Claude's extra condition

    def scope(self, challenged: str) -> str:
        return f"{challenged} offline_access".strip() if self.offline_access else challenged

    def authorize_extra(self) -> dict[str, str]:
        return {"prompt": "consent"} if self.offline_access else {}


CHATGPT: Final = Vendor(
    name="ChatGPT",
    redirect_uri=CHATGPT_CALLBACK,
    document={
        "client_name": "ChatGPT",
        "client_uri": "https://chatgpt.com/",
        "redirect_uris": [CHATGPT_CALLBACK],
        "grant_types": GRANTS,
        "response_types": ["code"],
        "token_endpoint_auth_method": "private_key_jwt",
        "token_endpoint_auth_methods_supported": ["none", "private_key_jwt"],
        "token_endpoint_auth_signing_alg": "RS256",
    },
    signs=True,
    dcr_body={
        "client_name": "ChatGPT",
        "redirect_uris": [CHATGPT_CALLBACK],
        "grant_types": GRANTS,
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    },
)

CLAUDE: Final = Vendor(
    name="Claude",
    redirect_uri=CLAUDE_CALLBACK,
    document={
        "client_name": "Claude",
        "client_uri": "https://claude.ai",
        "redirect_uris": [CLAUDE_CALLBACK],
        "grant_types": [*GRANTS, "urn:ietf:params:oauth:grant-type:jwt-bearer"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    },
    dcr_body={
        "client_name": "Claude",
        "redirect_uris": [CLAUDE_CALLBACK],
        "grant_types": GRANTS,
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    },
    registrations_per_connect=2,
    offline_access=True,
)

CURSOR: Final = Vendor(
    name="Cursor",
    redirect_uri=CURSOR_CALLBACK,
    dcr_body={
        "client_name": "Cursor",
        "redirect_uris": [
            CURSOR_CALLBACK,
            "https://www.cursor.com/agents/mcp/oauth/callback",
            "http://localhost:8787/callback",
        ],
        "grant_types": GRANTS,
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    },
)
