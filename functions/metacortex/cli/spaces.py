"""``metacortex space add|list|rename|remove``: the spaces memory is kept in.

A space is a key (what the tools' ``space`` argument takes), a name and a
description (``docs/SPACES.md``). ``list`` shows each space's memories, members and
the client endpoints that may use it, at the level each gets there now
(``ClientManager``: ``server.profiles.with_directory``). ``remove`` is refused while
the space holds memories or documents, saying how many, unless ``--erase``, which erases them
for good after the question ``metacortex erase`` asks (``--yes`` for scripts);
it also takes the space out of every person's membership and every stored
client's and OAuth grant's spaces (``operations.space_removal``). The default
space cannot be removed. Each change is recorded as an ``owner_action`` event.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from metacortex.access.model import DEFAULT_SPACE, Directory, Space
from metacortex.access.registry import Registry
from metacortex.cli.erase import confirmed, documents, erasing, memories
from metacortex.cli.owner_changes import (
    add_common_options,
    applies_within,
    levels_text,
    print_json,
    recorded,
    space_key,
    store_name,
    with_store,
)
from metacortex.cli.program import program
from metacortex.clients.manage import ClientManager, ClientView
from metacortex.config import Settings
from metacortex.domain.records import ALL_STATES
from metacortex.errors import InvalidArgument
from metacortex.operations.space_removal import RemovedSpace, SpaceRemoval, holdings, refusal
from metacortex.storage.base import MemoryFilter, MemoryStore

ERASED_BY = "owner (metacortex space remove)"


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "space",
        help="add, list, rename and remove the spaces memory is kept in",
        description="Spaces hold memories; people are members of some of them, and each "
        "client endpoint is granted some of its person's (docs/SPACES.md).",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    add = actions.add_parser("add", help="add a space")
    add.add_argument(
        "key",
        type=space_key,
        help="lower-case letters, digits and hyphens (what the tools' space argument takes)",
    )
    add.add_argument("--name", help="what people read (default: the key)")
    add.add_argument("--description", default="", help="what goes in it")
    add.set_defaults(run=run_add)
    listing = actions.add_parser(
        "list", help="every space with its memories, members and client endpoints"
    )
    listing.set_defaults(run=run_list)
    rename = actions.add_parser("rename", help="change a space's name or description")
    rename.add_argument("key", type=space_key)
    rename.add_argument("--name")
    rename.add_argument("--description")
    rename.set_defaults(run=run_rename)
    remove = actions.add_parser(
        "remove",
        help="remove a space (refused while it holds memories, unless --erase)",
        description="Remove a space, and take it out of every person's membership and every "
        "client's and OAuth grant's spaces. Refused while it holds memories, unless "
        "--erase, which erases them for good (content, vectors, index entries; a tombstone "
        "stays) after asking. The default space cannot be removed.",
    )
    remove.add_argument("key", type=space_key)
    remove.add_argument(
        "--erase", action="store_true", help="erase the memories it holds, for good"
    )
    remove.add_argument("--yes", action="store_true", help="do not ask (for scripts)")
    remove.set_defaults(run=run_remove)
    for sub in actions.choices.values():
        add_common_options(sub)


def run_add(args: argparse.Namespace) -> int:
    return _change(
        args,
        "space_add",
        lambda registry: registry.add_space(args.key, args.name, args.description),
        "added",
    )


def run_rename(args: argparse.Namespace) -> int:
    if args.name is None and args.description is None:
        raise InvalidArgument(
            f"give the space {args.key!r} a new --name, a new --description, or both"
        )
    return _change(
        args,
        "space_rename",
        lambda registry: registry.rename_space(args.key, args.name, args.description),
        "changed",
    )


def run_list(args: argparse.Namespace) -> int:
    def listing(settings: Settings, store: MemoryStore) -> int:
        directory = Registry(store).directory()
        clients = ClientManager(store, settings).list()
        spaces = sorted(directory.spaces.values(), key=lambda s: (s.key != DEFAULT_SPACE, s.key))
        reports = [_report(store, space, directory, clients) for space in spaces]
        if args.json:
            print_json(reports)
            return 0
        for report in reports:
            _print_report(report)
        if len(spaces) == 1:
            print(
                f"only the default space so far; add one with: {program()} space add KEY",
                file=sys.stderr,
            )
        return 0

    return with_store(args, listing)


def run_remove(args: argparse.Namespace) -> int:
    def remove(settings: Settings, store: MemoryStore) -> int:
        removal = SpaceRemoval(store, settings)
        plan = removal.plan(args.key)
        refused = refusal(plan, erase=args.erase)
        if refused is not None:
            raise refused
        count = plan.memories if args.erase else None
        documents = plan.documents if args.erase else 0
        if count or documents:
            what = holdings(plan)
            print(
                f"{what} in the space {args.key!r} will be erased for good with it",
                file=sys.stderr if args.json else sys.stdout,  # --json: stdout is the answer
            )
            declined = confirmed("space remove", what, yes=args.yes)
            if declined is not None:
                return declined

        def run() -> RemovedSpace:
            with erasing(count or 0) as advance:
                return removal.remove(
                    args.key,
                    erased_by=ERASED_BY,
                    erase_count=count,
                    erase_documents=documents,
                    progress=advance,
                )

        removed = recorded(
            settings,
            store,
            "space_remove",
            {"erase": args.erase},
            run,
            space=args.key,
            answer=_removal_summary,
        )
        if args.json:
            print_json(_removal_public(removed))
            return 0
        _print_removal(removed, settings)
        return 0

    return with_store(args, remove)


def _change(
    args: argparse.Namespace, action: str, change: Callable[[Registry], Space], done: str
) -> int:
    def work(settings: Settings, store: MemoryStore) -> int:
        registry = Registry(store)
        space = recorded(settings, store, action, {}, lambda: change(registry), space=args.key)
        report = _report(store, space, registry.directory(), ClientManager(store, settings).list())
        if args.json:
            print_json({"space": report})
            return 0
        print(f"space {space.key!r} {done} in {store_name(settings)}; {applies_within(settings)}")
        _print_report(report)
        return 0

    return with_store(args, work)


# --------------------------------------------------------------------- output
def _report(
    store: MemoryStore, space: Space, directory: Directory, clients: list[ClientView]
) -> dict[str, Any]:
    """A space, its memories, its members' own levels and its clients' levels now."""
    members = sorted(
        (
            (person, level)
            for person in directory.people.values()
            if not person.is_owner and (level := person.level_in(space.key)) is not None
        ),
        key=lambda found: (found[0].name.lower(), found[0].id),
    )
    return {
        "key": space.key,
        "name": space.name,
        "description": space.description,
        "created_at": space.created_at,
        "memories": store.count_memories(MemoryFilter(states=ALL_STATES, space=space.key)),
        "members": [
            {"id": p.id, "email": p.email, "name": p.name, "level": level.word}
            for p, level in members
        ],
        "clients": [
            {"id": c.id, "person": c.person, "level": (c.levels or {})[space.key]}
            for c in clients
            if space.key in (c.levels or {})
        ],
    }


def _print_report(report: dict[str, Any]) -> None:
    described = f"  {report['description']}" if report["description"] else ""
    print(f"{report['key']}  {report['name']!r}  {memories(report['memories'])}{described}")
    members = " ".join(f"{m['email']}:{m['level']}" for m in report["members"])
    print(f"  members: {members or 'none but the owner'}")
    clients = " ".join(f"{c['id']}:{c['level']}" for c in report["clients"])
    print(f"  client endpoints: {clients or 'none'}")


def _removal_summary(removed: RemovedSpace) -> dict[str, Any]:
    return {
        "erased_count": removed.erased,
        "erased_document_count": removed.erased_documents,
        "members": [p.id for p in removed.members],
        "clients": [c.id for c in removed.clients],
        "grants": list(removed.grants),
    }


def _removal_public(removed: RemovedSpace) -> dict[str, Any]:
    return {
        "removed": removed.space.key,
        "erased": removed.erased,
        "erased_documents": removed.erased_documents,
        "members": [{"id": p.id, "email": p.email} for p in removed.members],
        "clients": [
            {"id": c.id, "levels": c.levels, "default_space": c.default_space}
            for c in removed.clients
        ],
        "oauth_grants": list(removed.grants),
        "environment_clients": list(removed.environment),
    }


def _print_removal(removed: RemovedSpace, settings: Settings) -> None:
    key = removed.space.key
    erased = f"; {memories(removed.erased)} erased" if removed.erased else ""
    if removed.erased_documents:
        erased += f"; {documents(removed.erased_documents)} erased whole"
    print(f"space {key!r} removed from {store_name(settings)}{erased}; {applies_within(settings)}")
    if removed.members:
        names = ", ".join(p.email or p.id for p in removed.members)
        print(f"  no longer a member of it: {names}")
    for client in removed.clients:
        print(
            f"  client {client.id} may now use: {levels_text(client.levels)} "
            f"(default {client.default_space!r})"
        )
    for grant in removed.grants:
        print(f"  OAuth grant {grant} no longer holds it")
    for client_id in removed.environment:
        print(
            f"  client {client_id} (MCP_CLIENT_PROFILES_JSON) still names it: take {key!r} out "
            "of that variable and restart the server",
            file=sys.stderr,
        )
