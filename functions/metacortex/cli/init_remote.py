"""``metacortex init --target APP --url URL``: an HTTP entry for a MetaCortex server.

The entry connects to a client endpoint of its own, ``<base>/clients/<id>/mcp``
(``appconfig.remote``). Without ``--client`` a client is created for the
application in the store the settings point at (the data directory's SQLite file,
which a local ``metacortex serve`` uses; Firestore when configured): named after
the application, ``codex`` or ``codex-2`` when that is taken, with the default
tools. Its token is printed once, as the ``export`` line to run (the store keeps
only its sha256); the entry refers to that variable (``token_variable_for``) and
never holds the token. With ``--store-token`` the token is kept where the
application reads it instead, where that is safe (``appconfig/token_home.py``:
Codex's ``.env``, a header in the user's own file, VS Code's secret prompt); the
export line stays the fallback. With ``--client ID`` an existing client is used:
its token cannot be shown again, the user must already have it.

Re-running is safe: an entry under ``--name`` that already points at a client of
this server that still exists is kept, and so is that client; nothing is added
twice (an entry holding its token itself is kept too). A malformed or hostile
file (``appconfig/files.py``) is refused before any client is created, and a client
created for a file that then cannot be written is removed again. Claude Desktop
takes remote servers only as connectors in its settings: refused, nothing done.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from metacortex.access.profiles import load_profiles
from metacortex.appconfig import remote
from metacortex.appconfig.edit import Plan, write
from metacortex.appconfig.place import Place
from metacortex.appconfig.targets import Target
from metacortex.appconfig.token_home import (
    PLACEHOLDER,
    TokenHome,
    check_env_file,
    entry_with_token,
    holds_its_token,
    token_home,
    write_env_file,
)
from metacortex.cli.clients import recorded, store_name
from metacortex.clients import ClientManager, token_variable_for
from metacortex.composition import build_store
from metacortex.config import ApplicationDirs, Settings
from metacortex.errors import FailedPrecondition, InvalidArgument, MetaCortexError, NotFound
from metacortex.storage.base import MemoryStore
from metacortex.tool_catalogue import default_tools


@dataclass(frozen=True, slots=True)
class Known:
    """A client as init needs to know it."""

    id: str
    paused: bool


@dataclass(frozen=True, slots=True)
class Choice:
    client_id: str
    create: bool  # a new client, made with --yes


def run_remote(
    args: argparse.Namespace,
    settings: Settings,
    target: Target,
    place: Place,
    dirs: ApplicationDirs,
    rerun: str,
) -> int:
    make_entry = target.remote_entry
    if make_entry is None:
        raise FailedPrecondition(
            f"{target.app} adds remote MCP servers as connectors in its own settings "
            "(Settings → Connectors → Add custom connector; it signs in with OAuth, so the "
            f"server needs METACORTEX_OAUTH=true), not in {place.path.name}: nothing was "
            "written and no client was created. Leave --url out for a local (stdio) entry."
        )
    server = remote.parse(args.url)
    print(place.heading(target))
    existing = place.entry_now(target, args.name)  # Malformed, Refused: before a client
    store = _existing_store(settings)
    try:
        clients = _Clients(settings, store)
        choice = _choose(args.client, server, target, existing, clients)
        variable = token_variable_for(choice.client_id)
        url = server.endpoint(choice.client_id)
        entry = make_entry(url, variable)
        if not server.local and server.base.startswith("http://"):
            print(
                "Warning: http:// to another machine sends the token unencrypted; "
                "use the server's https:// address."
            )
        if not choice.create and (existing == entry or holds_its_token(existing, entry)):
            print(
                f"MetaCortex (client {choice.client_id!r} at {url}) is already configured "
                f"there as {args.name!r}: nothing to change."
            )
            return 0
        home = token_home(target, place, dirs)
        keeping = home if args.store_token and choice.create and home.kind else None
        if keeping is not None:
            check_env_file(keeping)  # refused now, before a client is made

        def plan_for(token: str) -> Plan:
            kept_entry, items = (
                entry_with_token(keeping, entry, args.name, choice.client_id, token)
                if keeping is not None
                else (entry, [])
            )
            return place.plan(target, args.name, kept_entry, items)

        plan = plan_for(PLACEHOLDER)
        if plan.changed:
            print(plan.diff(), end="")
            if plan.previous_entry is not None:
                print(f"This replaces the existing entry {args.name!r}.")
        if not args.yes:
            _preview(settings, target, choice, plan, home, keeping, args.store_token, rerun)
            return 0
        if store is None and choice.create:  # a data directory without a store yet
            store = build_store(settings)
        return _apply(settings, store, target, server, choice, place, plan_for, keeping, home, args)
    finally:
        if store is not None:
            store.close()


class _Clients:
    """The clients of the configured store (the environment's too); with no store yet,
    the environment's only."""

    def __init__(self, settings: Settings, store: MemoryStore | None) -> None:
        self.where = store_name(settings)
        self._environment = load_profiles(settings).clients
        self._manager = ClientManager(store, settings) if store is not None else None

    def find(self, client_id: str) -> Known | None:
        if self._manager is None:
            found = self._environment.get(client_id)
            return None if found is None else Known(found.id, found.paused)
        try:
            view = self._manager.get(client_id)
        except NotFound:
            return None
        return Known(view.id, view.paused)

    def ids(self) -> Iterable[str]:
        if self._manager is None:
            return self._environment.keys()
        return (view.id for view in self._manager.list())


def _existing_store(settings: Settings) -> MemoryStore | None:
    """The configured store; None for a data directory without one yet (a preview, or a
    client that is not to be created, creates nothing)."""
    if settings.store_kind == "sqlite" and not settings.sqlite_path.exists():
        return None
    return build_store(settings)


def _choose(
    given: str | None, server: remote.Server, target: Target, existing: object, clients: _Clients
) -> Choice:
    wanted = given or server.client_id
    if given and server.client_id and given != server.client_id:
        raise InvalidArgument(
            f"--url names client {server.client_id!r} but --client says {given!r}; give one"
        )
    if wanted is not None:
        if clients.find(wanted) is None:
            raise FailedPrecondition(
                f"no client {wanted!r} in {clients.where}: create it with `metacortex client "
                f"add {wanted}`, or leave --client out and init creates one for {target.app}"
            )
        return Choice(wanted, create=False)
    configured = remote.configured_client(existing, target.url_key, server)
    if configured is not None and clients.find(configured) is not None:
        return Choice(configured, create=False)  # a re-run: that entry, that client
    taken = set(clients.ids())
    candidate, number = target.key, 1
    while candidate in taken:
        number += 1
        candidate = f"{target.key}-{number}"
    return Choice(candidate, create=True)


def _preview(
    settings: Settings,
    target: Target,
    choice: Choice,
    plan: Plan,
    home: TokenHome,
    keeping: TokenHome | None,
    asked: bool,
    rerun: str,
) -> None:
    if choice.create:
        print(
            f"With --yes it creates client {choice.client_id!r} for {target.app} in "
            f"{store_name(settings)} (tools: {', '.join(default_tools())}) and shows its "
            "token once."
        )
        if keeping is not None:
            print(f"The token is kept {keeping.where}.")
        elif home.kind is not None:
            print(f"Add --store-token to keep the token {home.where}, not in an export line.")
        elif asked:
            print(f"--store-token: {home.reason}; it is shown as an export line instead.")
    else:
        print(f"It uses the existing client {choice.client_id!r}.")
    keep = f" and keep the current file as {plan.backup.name}" if plan.found else ""
    created = "; no client was created" if choice.create else ""
    print(f"Nothing was written{created}. {rerun}{keep}.")


def _write(plan: Plan, *, private: bool = False) -> None:
    if plan.changed:
        print(write(plan, private=private).sentence() + ".")


def _create_and_write(
    settings: Settings,
    store: MemoryStore,
    target: Target,
    client_id: str,
    path: Path,
    plan_for: Callable[[str], Plan],
    private: bool,
) -> str:
    """Create the client, then write the entry (planned again with its token); the
    client is removed again when the file cannot be written (no client without the
    entry that uses it). Its token."""
    manager = ClientManager(store, settings)
    created = recorded(
        settings,
        store,
        "client_create",
        client_id,
        lambda: manager.create(
            client_id,
            description=f"{target.app} ({path}), by metacortex init",
            created_by="metacortex init",
        ),
    )
    try:
        _write(plan_for(created.token), private=private)
    except BaseException:
        recorded(settings, store, "client_remove", client_id, lambda: manager.remove(client_id))
        raise
    return created.token


def _apply(
    settings: Settings,
    store: MemoryStore | None,
    target: Target,
    server: remote.Server,
    choice: Choice,
    place: Place,
    plan_for: Callable[[str], Plan],
    keeping: TokenHome | None,
    home: TokenHome,
    args: argparse.Namespace,
) -> int:
    variable = token_variable_for(choice.client_id)
    where = store_name(settings)
    if choice.create:
        assert store is not None  # created for the client
        private = keeping is not None and keeping.kind == "header"
        token = _create_and_write(
            settings, store, target, choice.client_id, place.path, plan_for, private
        )
        print(
            f"Created client {choice.client_id!r} in {where} (tools: "
            f"{', '.join(default_tools())}); every server on this store accepts it within "
            f"{settings.metacortex_client_refresh_seconds:g} s."
        )
        _hand_over(target, variable, token, keeping, home, args.store_token)
    else:
        _write(plan_for(PLACEHOLDER))
        print(
            f"{target.app} reads the token of client {choice.client_id!r} from {variable}. The "
            "store keeps only its hash, so it cannot be shown again: set "
            f"{variable} to the token printed when the client was created. Lost it? Remove "
            f"the client (`metacortex client remove {choice.client_id}`) and run this again "
            "without --client: a new client gets a new token."
        )
        if args.store_token:
            print(
                "--store-token: the token of an existing client is not known here; nothing stored."
            )
        known = _Clients(settings, store).find(choice.client_id)
        if known is not None and known.paused:
            print(
                f"Client {choice.client_id!r} is paused: resume it with `metacortex client "
                f"resume {choice.client_id}`."
            )
    if settings.store_kind == "sqlite" and not server.local:
        print(
            f"The client is kept in {where}: the server at {server.base} must serve that "
            "store. A server on another machine has its own store: run `metacortex init` "
            "there, or point this one at its store (METACORTEX_STORE=firestore)."
        )
    print(target.after)
    return 0


def _hand_over(
    target: Target,
    variable: str,
    token: str,
    keeping: TokenHome | None,
    home: TokenHome,
    asked: bool,
) -> None:
    """Say where the new client's token is: kept where the application reads it, or
    (the fallback) shown once as the export line to run."""
    if keeping is not None and keeping.kind == "header":
        print(
            f"Its token (the store keeps only its sha256) is kept {keeping.where}; "
            f"{target.app} sends it from there."
        )
        return
    if keeping is not None and keeping.kind == "prompt":
        print(
            f"{target.app} asks for the token when it first starts the server and keeps it in "
            "its secret storage. Paste this token there (shown only now; the store keeps "
            "only its sha256):"
        )
        print(f"  {token}")
        return
    if keeping is not None and keeping.kind == "dotenv":
        try:
            write_env_file(keeping, variable, token)
        except (OSError, MetaCortexError) as error:
            reason = error.message if isinstance(error, MetaCortexError) else error.strerror
            print(f"--store-token: {reason}; the token is shown as an export line instead.")
        else:
            print(
                f"Its token (the store keeps only its sha256) is kept as {variable} "
                f"{keeping.where}."
            )
            return
    elif asked:
        print(f"--store-token: {home.reason}; it is shown as an export line instead.")
    print(
        "Its token, shown only now (the store keeps only its sha256). Set it where "
        f"{target.app} starts:"
    )
    print(f"  export {variable}='{token}'")
    if home.kind is not None and not asked:
        print(f"(--store-token would keep it {home.where}.)")
