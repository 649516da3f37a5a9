"""``metacortex client add|list|snippets|pause|resume|remove|grant|ungrant``: the client
endpoints.

``add`` creates a client endpoint (``/clients/<id>/mcp``) in the configured store,
prints its token once (the store keeps its sha256) and the ready-to-paste
connections; every server on that store accepts it within
``METACORTEX_CLIENT_REFRESH_SECONDS``, without a restart. A client is one person's
(``--person``, the owner by default) and is granted spaces of theirs (``--space
KEY[:LEVEL]``, repeatable, ``--default-space``); without ``--space`` it gets its
default space (``default`` unless ``--default-space`` names another) at the
person's own level. ``grant`` and ``ungrant`` change a stored client's spaces.
Every command that sets levels prints the level the client gets in each space now
(``clients.manage``). ``pause``, ``resume`` and ``remove`` take effect within the
same time (``remove`` asks first, ``y`` or ``yes``). Clients defined in
``MCP_CLIENT_PROFILES_JSON`` are listed as read-only. Each change is recorded as an
``owner_action`` event (never the token).
``snippets`` prints again what ``add`` printed, without the token: each
application's connection to a client's endpoint, or to the admin endpoint (what
``serve``'s banner points to). Addresses are the server's as the user reaches it
(``cli/server_address.py``).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Callable
from dataclasses import asdict
from typing import Any, Final, TypeVar

from metacortex import tool_catalogue
from metacortex.access.model import OWNER_ID
from metacortex.cli import owner_changes
from metacortex.cli.data_dir import add_data_dir_option, settings_for
from metacortex.cli.owner_changes import (
    add_spaces_option,
    applies_within,
    levels_text,
    print_json,
    space_key,
    space_option,
    store_name,
    with_store,
)
from metacortex.cli.program import program
from metacortex.cli.server_address import server_url
from metacortex.clients import ClientManager, ClientView, Endpoint, client_endpoint, render
from metacortex.clients.snippets import ADMIN_TOKEN_VARIABLE, APPS
from metacortex.config import Settings
from metacortex.storage.base import MemoryStore

__all__ = ["add_parser", "recorded", "store_name"]

EXIT_REFUSED: Final = 2
T = TypeVar("T")


def _comma_list(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "client",
        help="create, list, pause, resume and remove client endpoints (/clients/<id>/mcp) "
        "and grant them spaces",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    add = actions.add_parser(
        "add",
        help="create a client endpoint in the store and print its token once",
        description="Create a client endpoint /clients/<id>/mcp in the configured store "
        "(no restart: every server on the store accepts it within "
        "METACORTEX_CLIENT_REFRESH_SECONDS). Prints its token once (only its sha256 is kept) "
        "and how to connect ChatGPT, Claude, Claude Code, Codex, Cursor and VS Code.",
    )
    add.add_argument("id", help="client id: letters, digits, '-' or '_' (becomes the URL path)")
    add.add_argument(
        "--person",
        default=OWNER_ID,
        help="whose client it is: a person's email (default: the owner)",
    )
    add_spaces_option(
        add,
        "a space it gets, repeatable; the person must be a member of it; without a level, "
        "the person's own level there (default: its default space at that level)",
    )
    add.add_argument(
        "--default-space",
        metavar="KEY",
        help="where calls without a space act; one of --space (default: the only --space, "
        "else 'default')",
    )
    add.add_argument(
        "--tools",
        type=_comma_list,
        default=list(tool_catalogue.default_tools()),
        help=f"comma list of tools (default {','.join(tool_catalogue.default_tools())}; "
        f"known: {','.join(tool_catalogue.model_tools())})",
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
    add.add_argument("--description", help="a note for the owner (shown in the console)")
    add.add_argument(
        "--url",
        help="the server's base URL as clients reach it, for the printed connections "
        "(default METACORTEX_PUBLIC_URL, else the local server)",
    )
    add.add_argument("--json", action="store_true", help="print one JSON object instead")
    add.set_defaults(run=run_add)
    listing = actions.add_parser(
        "list",
        help="list client endpoints (stored and configured), whose they are, their spaces",
    )
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(run=run_list)
    snippets = actions.add_parser(
        "snippets",
        help="print how to connect each application to an endpoint (no token in them)",
        description="Print the ready-to-paste connection of ChatGPT, Claude, Claude Code, "
        "Codex, Cursor and VS Code to a client's endpoint /clients/<id>/mcp, or without an "
        "id to the admin endpoint /mcp, and how to load the token they read. The address is "
        "--url, else METACORTEX_PUBLIC_URL, else where `metacortex serve` last answered on "
        "this data directory.",
    )
    snippets.add_argument("id", nargs="?", help="a client's id (default: the admin endpoint)")
    snippets.add_argument("--app", choices=APPS, help="only this application's")
    snippets.add_argument(
        "--url", help="the server's base URL as clients reach it (default: see above)"
    )
    snippets.set_defaults(run=run_snippets)
    for name, verb in (
        ("pause", "refuse every request of a client until it is resumed"),
        ("resume", "let a paused client in again"),
        ("remove", "delete a client: its token never works again"),
    ):
        sub = actions.add_parser(name, help=verb, description=verb[0].upper() + verb[1:] + ".")
        sub.add_argument("id", help="the client's id (from `metacortex client list`)")
        if name == "remove":
            sub.add_argument("--yes", action="store_true", help="do not ask (for scripts)")
        sub.set_defaults(run=run_change)
    grant = actions.add_parser(
        "grant",
        help="grant a stored client a space of its person's, or change its level there",
        description="Grant a stored client a space its person is a member of, at LEVEL "
        "(default: the person's own level there). Every server on the store applies it "
        "within METACORTEX_CLIENT_REFRESH_SECONDS. Prints the level it gets in each space.",
    )
    grant.add_argument("id", help="the client's id (from `metacortex client list`)")
    grant.add_argument("space", metavar="KEY[:read|:write]", type=space_option)
    grant.add_argument(
        "--default", action="store_true", help="make it the client's default space too"
    )
    grant.add_argument("--json", action="store_true", help="print one JSON object instead")
    grant.set_defaults(run=run_grant)
    ungrant = actions.add_parser(
        "ungrant",
        help="take a space from a stored client (not its only one, not its default)",
        description="Take a space from a stored client. Its only space and its default "
        "space are refused (make another its default with `client grant ID KEY --default`).",
    )
    ungrant.add_argument("id", help="the client's id (from `metacortex client list`)")
    ungrant.add_argument("space", metavar="KEY", type=space_key)
    ungrant.add_argument("--json", action="store_true", help="print one JSON object instead")
    ungrant.set_defaults(run=run_ungrant)
    for sub in actions.choices.values():
        add_data_dir_option(sub)


def recorded(
    settings: Settings,
    store: MemoryStore,
    action: str,
    client_id: str,
    change: Callable[[], T],
) -> T:
    """Run a change of a client and record it as an ``owner_action`` event (ids only)."""
    return owner_changes.recorded(settings, store, action, {"client_id": client_id}, change)


def run_add(args: argparse.Namespace) -> int:
    def add(settings: Settings, store: MemoryStore) -> int:
        manager = ClientManager(store, settings)
        created = recorded(
            settings,
            store,
            "client_create",
            args.id,
            lambda: manager.create(
                args.id,
                tools=args.tools,
                states=args.states,
                origins=args.origins,
                url_token=args.url_token,
                may_write_lifecycle=args.may_write_lifecycle,
                rate_limit_per_minute=args.rate_limit,
                description=args.description,
                created_by="metacortex client add",
                person=args.person,
                spaces=dict(args.spaces) or None,
                default_space=args.default_space,
            ),
        )
        client, token = created.client, created.token
        endpoint = client_endpoint(
            server_url(settings, args.url),
            client.id,
            oauth=settings.metacortex_oauth,
            url_token=client.url_token,
        )
        variable, url = endpoint.token_variable, endpoint.url
        if args.json:
            print(
                json.dumps(
                    {
                        "client": _public(client),
                        "url": url,
                        "token": token,
                        "token_variable": variable,
                    }
                )
            )
            return 0
        print(f"Client {client.id!r} created in {store_name(settings)}.")
        print(
            f"It serves at POST {url}; every server on this store accepts it within "
            f"{settings.metacortex_client_refresh_seconds:g} s, no restart needed."
        )
        print(_whose(client))
        print()
        print("Token, shown only now (the store keeps its sha256):")
        print(f"  {token}")
        print("Load it into the shell the application starts from:")
        print(f"  export {variable}='{token}'")
        _print_snippets(endpoint, None)
        return 0

    return with_store(args, add)


def run_snippets(args: argparse.Namespace) -> int:
    settings = settings_for(args)
    base = server_url(settings, args.url)
    if args.id is None:
        endpoint = Endpoint(f"{base}/mcp", oauth=settings.metacortex_oauth)
        print(f"Connections to the admin endpoint POST {endpoint.url}")
        print(_admin_token_line(settings))
    else:

        def client(settings: Settings, store: MemoryStore) -> ClientView:
            return ClientManager(store, settings).get(args.id)

        view = with_store(args, client)
        endpoint = client_endpoint(
            base, view.id, oauth=settings.metacortex_oauth, url_token=view.url_token
        )
        print(f"Connections to client {view.id!r}: POST {endpoint.url}")
        print(
            f"They read its token from {endpoint.token_variable}: export it where the "
            "application starts (`client add` printed the token once; a lost one cannot be "
            "shown again: remove the client and add it anew)."
        )
    _print_snippets(endpoint, args.app)
    return 0


def _admin_token_line(settings: Settings) -> str:
    if settings.mcp_admin_token is not None:
        return f"They read the admin token from {ADMIN_TOKEN_VARIABLE}, which is set here."
    path = settings.admin_token_path
    if path.is_file():
        return (
            f"They read the admin token from {ADMIN_TOKEN_VARIABLE}; load it into the shell "
            f"the application starts from:\n"
            f'  export {ADMIN_TOKEN_VARIABLE}="$(cat {shlex.quote(str(path))})"'
        )
    return (
        f"They read the admin token from {ADMIN_TOKEN_VARIABLE}; `metacortex serve` on this "
        f"data directory generates one into {path} when it first starts."
    )


def _print_snippets(endpoint: Endpoint, only: str | None) -> None:
    for snippet in render(endpoint):
        if only is not None and snippet.key != only:
            continue
        print()
        print(f"{snippet.app} ({snippet.where}):")
        for line in (snippet.text or "(no configuration)").splitlines():
            print(f"  {line}")
        print(f"  {snippet.note}")


def _public(client: ClientView) -> dict[str, Any]:
    return {**asdict(client), "path": client.path, "status": client.status}


def _whose(client: ClientView) -> str:
    """Whose client it is and the level it gets in each space now."""
    who = client.person_name or client.person
    if client.person_name and client.person != OWNER_ID:
        who = f"{client.person_name} <{client.person}>"
    return (
        f"It is {who}'s; it may now use: {levels_text(client.levels)} "
        f"(default space {client.default_space!r})"
    )


def run_list(args: argparse.Namespace) -> int:
    def listing(settings: Settings, store: MemoryStore) -> list[ClientView]:
        return ClientManager(store, settings).list()

    clients = with_store(args, listing)
    if args.json:
        print(json.dumps([_public(client) for client in clients], indent=2))
        return 0
    if not clients:
        print(f"no client endpoints; create one with: {program()} client add <id>", file=sys.stderr)
    for client in clients:
        source = "MCP_CLIENT_PROFILES_JSON, read-only" if client.read_only else "stored"
        since = f"  since {client.created_at}" if client.created_at else ""
        # What it was granted, where the person's role or membership makes it less.
        less = client.grants != client.levels
        granted = f"  granted={levels_text(client.grants)}" if less else ""
        print(
            f"{client.id}  [{client.status}; {source}]  person={client.person}  "
            f"levels={levels_text(client.levels)}{granted}  default={client.default_space}  "
            f"tools={','.join(client.tools)}  states={','.join(client.states)}{since}"
        )
    return 0


def run_grant(args: argparse.Namespace) -> int:
    key, level = args.space
    return _change_spaces(
        args,
        "client_grant",
        key,
        lambda manager: manager.grant(args.id, key, level, make_default=args.default),
    )


def run_ungrant(args: argparse.Namespace) -> int:
    return _change_spaces(
        args, "client_ungrant", args.space, lambda manager: manager.ungrant(args.id, args.space)
    )


def _change_spaces(
    args: argparse.Namespace,
    action: str,
    key: str,
    change: Callable[[ClientManager], ClientView],
) -> int:
    def work(settings: Settings, store: MemoryStore) -> int:
        manager = ClientManager(store, settings)
        view = owner_changes.recorded(
            settings, store, action, {"client_id": args.id}, lambda: change(manager), space=key
        )
        if args.json:
            print_json({"client": _public(view)})
            return 0
        print(f"client {view.id!r} changed in {store_name(settings)}; {applies_within(settings)}")
        print(_whose(view))
        return 0

    return with_store(args, work)


def run_change(args: argparse.Namespace) -> int:
    def change(settings: Settings, store: MemoryStore) -> int:
        manager = ClientManager(store, settings)
        if args.action == "remove" and not args.yes:
            manager.get(args.id)  # a missing or read-only client is named before asking
            if not sys.stdin.isatty():
                print(
                    f"metacortex client remove: not removing {args.id!r} without a "
                    "confirmation: standard input is not a terminal. Run it in a terminal, "
                    "or pass --yes.",
                    file=sys.stderr,
                )
                return EXIT_REFUSED
            answer = input(f"Remove client {args.id!r}? Its token stops working for good. [y/N] ")
            if answer.strip().lower() not in ("y", "yes"):
                print("nothing was removed")
                return 1
        action: Callable[[], object] = {
            "pause": lambda: manager.pause(args.id),
            "resume": lambda: manager.resume(args.id),
            "remove": lambda: manager.remove(args.id),
        }[args.action]
        recorded(settings, store, f"client_{args.action}", args.id, action)
        done = {"pause": "paused", "resume": "resumed", "remove": "removed"}[args.action]
        print(f"client {args.id!r} {done} in {store_name(settings)}; {applies_within(settings)}")
        return 0

    return with_store(args, change)
