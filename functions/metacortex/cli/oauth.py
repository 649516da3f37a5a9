"""``metacortex oauth``: the OAuth clients and grants kept in the store.

``oauth grants`` lists what the owner or a person approved (client, endpoint,
preset, scopes, who approved it and the spaces they gave it, when); ``oauth
grants revoke ID`` ends a grant, and every access and refresh token issued under
it stops working at once. ``oauth clients`` lists dynamically registered
clients; ``oauth clients revoke ID`` deletes one (its grants stay until revoked:
a client registers again freely, a grant is consent).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from metacortex.access.registry import read_directory
from metacortex.cli.data_dir import add_data_dir_option, settings_for
from metacortex.clients.grants import list_grants
from metacortex.composition import build_store
from metacortex.errors import NotFound
from metacortex.storage.base import MemoryStore

GRANT_KIND = "grant"
CLIENT_KIND = "client"


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "oauth", help="list and revoke OAuth grants and registered clients"
    )
    kinds = parser.add_subparsers(dest="kind", metavar="WHAT", required=True)
    for kind, noun in (("grants", "grant"), ("clients", "registered client")):
        sub = kinds.add_parser(kind, help=f"list {noun}s, or revoke one")
        sub.add_argument("--json", action="store_true", help="print JSON")
        add_data_dir_option(sub)
        actions = sub.add_subparsers(dest="action", metavar="ACTION")
        revoke = actions.add_parser("revoke", help=f"revoke one {noun}")
        revoke.add_argument("id", help=f"the {noun}'s id (from the list)")
        add_data_dir_option(revoke)
        sub.set_defaults(run=run_oauth)


def _store(args: argparse.Namespace) -> MemoryStore:
    return build_store(settings_for(args))


def run_oauth(args: argparse.Namespace) -> int:
    kind = GRANT_KIND if args.kind == "grants" else CLIENT_KIND
    store = _store(args)
    try:
        if args.action == "revoke":
            if not store.auth_delete(kind, args.id):
                raise NotFound(f"no {args.kind[:-1]} with id {args.id!r}")
            print(f"revoked {args.kind[:-1]} {args.id}")
            return 0
        rows = store.auth_list(kind)
        views = {view.id: view for view in list_grants(store)} if kind == GRANT_KIND else {}
        people = read_directory(store).people if views else {}
    finally:
        store.close()
    if getattr(args, "json", False):
        print(json.dumps([{"id": key, **_public(data)} for key, data in rows], indent=2))
        return 0
    if not rows:
        print(f"no {args.kind}", file=sys.stderr)
    for key, data in rows:
        line = _line(kind, key, data)
        view = views.get(key)
        if view is not None:
            person = people.get(view.person)
            who = person.email or person.id if person is not None else view.person
            line += f"  by {who}  spaces={view.spaces_words()}"
        print(line)
    return 0


def _public(data: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in data.items() if key != "secret_sha256"}


def _line(kind: str, key: str, data: dict[str, Any]) -> str:
    if kind == GRANT_KIND:
        return (
            f"{key}  {data.get('client_name')}  ({data.get('redirect_host')})  "
            f"{data.get('resource')}  preset={data.get('preset')}  "
            f"scopes={' '.join(data.get('scopes', []))}  since {data.get('created_at')}"
            + ("  PAUSED (console: Clients)" if data.get("paused") is True else "")
        )
    uris = ", ".join(data.get("redirect_uris", []))
    return f"{key}  {data.get('client_name') or '(unnamed)'}  {data.get('auth_method')}  {uris}"
