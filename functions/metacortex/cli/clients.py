"""``metacortex client add``: mint a scoped client endpoint's token and profile entry.

The entry carries only the token's sha256, so the configuration never holds
the secret; the token itself is printed once, for the client. The entry is
validated together with the profiles already configured, so an id clash or a
typo in a tool name is caught here rather than at the next start.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from typing import Any

from pydantic import SecretStr

from metacortex.config import Settings
from metacortex.server.profiles import TOOL_NAMES, load_profiles, new_token

DEFAULT_TOOLS = ("save_context", "search_context", "fetch_context")


def _comma_list(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "client", help="manage scoped client endpoints (/clients/<id>/mcp)"
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    add = actions.add_parser(
        "add",
        help="mint a token and print the profile entry for MCP_CLIENT_PROFILES_JSON",
        description="Mint a strong token for a new client endpoint and print its "
        "MCP_CLIENT_PROFILES_JSON entry (with the token's sha256, never the token) and the "
        "token, once.",
    )
    add.add_argument("id", help="client id: letters, digits, '-' or '_' (becomes the URL path)")
    add.add_argument(
        "--tools",
        type=_comma_list,
        default=list(DEFAULT_TOOLS),
        help=f"comma list of tools (default {','.join(DEFAULT_TOOLS)}; known: "
        f"{','.join(TOOL_NAMES)})",
    )
    add.add_argument(
        "--states",
        type=_comma_list,
        default=None,
        help="comma list of states it may read (default: DEFAULT_FILTER_STATE only)",
    )
    add.add_argument(
        "--origins",
        type=_comma_list,
        default=[],
        help="comma list of browser origins allowed to call it, e.g. https://chatgpt.com",
    )
    add.add_argument(
        "--url-token",
        action="store_true",
        help="also accept the token as ?auth_token= (for connectors that cannot send headers)",
    )
    add.add_argument(
        "--may-write-lifecycle",
        action="store_true",
        help="allow explicit branch_state on save_context (admin-level writes)",
    )
    add.add_argument("--rate-limit", type=int, default=None, help="requests per minute")
    add.add_argument("--json", action="store_true", help="print one JSON object instead")
    add.set_defaults(run=run_add)


def run_add(args: argparse.Namespace) -> int:
    token = new_token()
    entry: dict[str, Any] = {
        "id": args.id,
        "token_sha256": hashlib.sha256(token.encode("utf-8")).hexdigest(),
        "allowedTools": args.tools,
    }
    if args.states is not None:
        entry["allowedFilterStates"] = args.states
    if args.origins:
        entry["allowedOrigins"] = args.origins
    if args.url_token:
        entry["allowUrlToken"] = True
    if args.may_write_lifecycle:
        entry["mayWriteLifecycle"] = True
    if args.rate_limit is not None:
        entry["rateLimitPerMinute"] = args.rate_limit
    settings = Settings()
    existing = _existing_entries(settings)
    combined = [*existing, entry]
    load_profiles(
        settings.model_copy(update={"mcp_client_profiles_json": SecretStr(json.dumps(combined))})
    )
    if args.json:
        print(json.dumps({"entry": entry, "token": token, "path": f"/clients/{args.id}/mcp"}))
        return 0
    print(f"Client endpoint: POST /clients/{args.id}/mcp")
    print()
    print("Add this entry to the MCP_CLIENT_PROFILES_JSON array:")
    print(json.dumps(entry))
    print()
    print("With the profiles already configured, the whole value becomes:")
    print(json.dumps(combined))
    print()
    print("Token for the client (shown only now; it is not stored anywhere):")
    print(token)
    return 0


def _existing_entries(settings: Settings) -> list[Any]:
    raw = settings.mcp_client_profiles_json
    if raw is None or not raw.get_secret_value().strip():
        return []
    load_profiles(settings)  # a broken existing value is reported as such
    entries: list[Any] = json.loads(raw.get_secret_value())
    return entries
