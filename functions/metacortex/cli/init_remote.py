"""``metacortex init --target APP --url URL``: an HTTP entry for a MetaCortex server.

The entry connects to a client endpoint of its own, ``<base>/clients/<id>/mcp``
(``appconfig.remote``). Without ``--client`` a client is created for the
application in the store the settings point at (the data directory's SQLite file,
which a local ``metacortex serve`` uses; Firestore when configured): named after
the application, ``codex`` or ``codex-2`` when that is taken, with the default
tools. Its token is printed once, as the ``export`` line to run (the store keeps
only its sha256); the entry refers to that variable (``token_variable_for``) and
never holds the token. With ``--client ID`` an existing client is used: its token
cannot be shown again, the user must already have it.

Re-running is safe: an entry under ``--name`` that already points at a client of
this server that still exists is kept, and so is that client; nothing is added
twice. A malformed file is refused before any client is created, and a client
created for a file that then cannot be written is removed again. Claude Desktop
takes remote servers only as connectors in its settings: refused, nothing done.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from metacortex.appconfig import remote
from metacortex.appconfig.edit import Plan, plan_entry, read_entry, write
from metacortex.appconfig.targets import Target
from metacortex.cli.clients import recorded, store_name
from metacortex.clients import ClientManager, token_variable_for
from metacortex.clients.manage import DEFAULT_TOOLS
from metacortex.composition import build_store
from metacortex.config import Settings
from metacortex.errors import FailedPrecondition, InvalidArgument, NotFound
from metacortex.server.profiles import load_profiles
from metacortex.storage.base import MemoryStore


@dataclass(frozen=True, slots=True)
class Known:
    """A client as init needs to know it."""

    id: str
    paused: bool


@dataclass(frozen=True, slots=True)
class Choice:
    client_id: str
    create: bool  # a new client, made with --yes


def run_remote(args: argparse.Namespace, settings: Settings, target: Target, path: Path) -> int:
    make_entry = target.remote_entry
    if make_entry is None:
        raise FailedPrecondition(
            f"{target.app} adds remote MCP servers as connectors in its own settings "
            "(Settings → Connectors → Add custom connector; it signs in with OAuth, so the "
            f"server needs METACORTEX_OAUTH=true), not in {path.name}: nothing was written "
            "and no client was created. Leave --url out for a local (stdio) entry."
        )
    server = remote.parse(args.url)
    existing = read_entry(path, target.format, target.container, args.name)  # Malformed first
    store = _existing_store(settings)
    try:
        clients = _Clients(settings, store)
        choice = _choose(args.client, server, target, existing, clients)
        variable = token_variable_for(choice.client_id)
        url = server.endpoint(choice.client_id)
        entry = make_entry(url, variable)
        plan = plan_entry(path, target.format, target.container, args.name, entry)
        print(f"{target.app}: {path} (format: {target.source})")
        if not server.local and server.base.startswith("http://"):
            print(
                "Warning: http:// to another machine sends the token unencrypted; "
                "use the server's https:// address."
            )
        if not choice.create and not plan.changed:
            print(
                f"MetaCortex (client {choice.client_id!r} at {url}) is already configured "
                f"there as {args.name!r}: nothing to change."
            )
            return 0
        if plan.changed:
            print(plan.diff(), end="")
            if plan.previous_entry is not None:
                print(f"This replaces the existing entry {args.name!r}.")
        if not args.yes:
            _preview(settings, target, choice, plan)
            return 0
        if store is None and choice.create:  # a data directory without a store yet
            store = build_store(settings)
        return _apply(settings, store, target, server, choice, plan)
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


def _preview(settings: Settings, target: Target, choice: Choice, plan: Plan) -> None:
    if choice.create:
        print(
            f"With --yes it creates client {choice.client_id!r} for {target.app} in "
            f"{store_name(settings)} (tools: {', '.join(DEFAULT_TOOLS)}) and prints its "
            "token once."
        )
    else:
        print(f"It uses the existing client {choice.client_id!r}.")
    keep = f" and keep the current file as {plan.backup.name}" if plan.before is not None else ""
    created = "; no client was created" if choice.create else ""
    print(f"Nothing was written{created}. Run again with --yes to write it{keep}.")


def _write(plan: Plan) -> None:
    if plan.changed:
        backup = write(plan)
        kept = f" (the previous version is {backup})" if backup is not None else ""
        print(f"Wrote {plan.path}{kept}.")


def _create_and_write(
    settings: Settings, store: MemoryStore, target: Target, client_id: str, plan: Plan
) -> str:
    """Create the client, then write the entry; the client is removed again when the file
    cannot be written (no client without the entry that uses it). Its token."""
    manager = ClientManager(store, settings)
    created = recorded(
        settings,
        store,
        "client_create",
        client_id,
        lambda: manager.create(
            client_id,
            description=f"{target.app} ({plan.path}), by metacortex init",
            created_by="metacortex init",
        ),
    )
    try:
        _write(plan)
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
    plan: Plan,
) -> int:
    if choice.create:
        assert store is not None  # created for the client
        token: str | None = _create_and_write(settings, store, target, choice.client_id, plan)
    else:
        token = None
        _write(plan)
    variable = token_variable_for(choice.client_id)
    where = store_name(settings)
    if token is not None:
        print(
            f"Created client {choice.client_id!r} in {where} (tools: "
            f"{', '.join(DEFAULT_TOOLS)}); every server on this store accepts it within "
            f"{settings.metacortex_client_refresh_seconds:g} s."
        )
        print(
            f"Its token, shown only now (the store keeps only its sha256). Set it where "
            f"{target.app} starts:"
        )
        print(f"  export {variable}='{token}'")
    else:
        print(
            f"{target.app} reads the token of client {choice.client_id!r} from {variable}. The "
            "store keeps only its hash, so it cannot be shown again: set "
            f"{variable} to the token printed when the client was created. Lost it? Remove "
            f"the client (`metacortex client remove {choice.client_id}`) and run this again "
            "without --client: a new client gets a new token."
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
