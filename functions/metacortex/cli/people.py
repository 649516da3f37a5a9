"""``metacortex person add|list|role|deactivate|reactivate|grant|ungrant``: the people.

A person is an email (unique, lower-cased), a display name, a role (``writer`` or
``reader``; the owner is implicit), active or not, and a member of some spaces at a
level (``docs/SPACES.md``). ``grant`` and ``ungrant`` change the membership; a
``KEY`` without a level makes them a member at what their role allows. Every
command prints the person's own level in each space and the level each of their
client endpoints gets there now (``ClientManager``, which computes them with
``access.profiles.with_directory``). Every server on the store applies a change
(a deactivation refuses each of their credentials with 403 ``person_inactive``)
within ``METACORTEX_CLIENT_REFRESH_SECONDS``. Each change is recorded as an
``owner_action`` event naming the person's id (never the email or the name).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any, Final

from metacortex.access.model import Directory, Person, Role
from metacortex.access.registry import Registry
from metacortex.cli.owner_changes import (
    add_common_options,
    add_spaces_option,
    applies_within,
    levels_text,
    print_json,
    recorded,
    space_key,
    space_option,
    store_name,
    with_store,
)
from metacortex.cli.program import program
from metacortex.clients.manage import ClientManager, ClientView
from metacortex.config import Settings
from metacortex.storage.base import MemoryStore

ROLES: Final = (Role.WRITER.value, Role.READER.value)


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "person",
        help="add people, change their role, spaces and whether they are active",
        description="The people who share this MetaCortex: writers and readers, members of "
        "spaces (docs/SPACES.md). Every server on the store applies a change within "
        "METACORTEX_CLIENT_REFRESH_SECONDS.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    add = actions.add_parser(
        "add",
        help="add a person (a writer or a reader), optionally a member of spaces",
        description="Add a person. --space makes them a member of a space (repeatable); "
        "without a level, at what their role allows (write for a writer, read for a reader).",
    )
    add.add_argument("email")
    add.add_argument("--name", required=True, help="the name shown on what they write")
    add.add_argument("--role", required=True, choices=ROLES)
    add_spaces_option(add, "a space they are a member of (repeatable)")
    add.set_defaults(run=run_add)
    listing = actions.add_parser(
        "list", help="every person with their role, spaces and client endpoints"
    )
    listing.set_defaults(run=run_list)
    role = actions.add_parser(
        "role", help="change a person's role (a reader never writes, whatever they are granted)"
    )
    role.add_argument("email")
    role.add_argument("role", choices=ROLES)
    role.set_defaults(run=run_role)
    for name, verb in (
        ("deactivate", "refuse every credential of a person (403 person_inactive)"),
        ("reactivate", "let a deactivated person's credentials in again"),
    ):
        sub = actions.add_parser(name, help=verb, description=verb[0].upper() + verb[1:] + ".")
        sub.add_argument("email")
        sub.set_defaults(run=run_active)
    grant = actions.add_parser(
        "grant",
        help="make a person a member of a space, or change their level there",
        description="Make a person a member of a space at LEVEL (default: what their role "
        "allows). Their clients use it only once granted it too (`client grant`).",
    )
    grant.add_argument("email")
    grant.add_argument("space", metavar="KEY[:read|:write]", type=space_option)
    grant.set_defaults(run=run_grant)
    ungrant = actions.add_parser(
        "ungrant",
        help="take a space from a person: none of their credentials may use it any more",
    )
    ungrant.add_argument("email")
    ungrant.add_argument("space", metavar="KEY", type=space_key)
    ungrant.set_defaults(run=run_ungrant)
    for sub in actions.choices.values():
        add_common_options(sub)


# ------------------------------------------------------------------- commands
def run_add(args: argparse.Namespace) -> int:
    role = Role(args.role)
    spaces = {key: level or role.ceiling for key, level in args.spaces}
    return _change(
        args,
        "person_add",
        lambda registry: registry.add_person(args.email, args.name, role, spaces),
        "added",
    )


def run_role(args: argparse.Namespace) -> int:
    return _change(
        args,
        "person_role",
        lambda registry: registry.change_person(args.email, role=Role(args.role)),
        f"is now a {args.role}",
    )


def run_active(args: argparse.Namespace) -> int:
    active = args.action == "reactivate"
    return _change(
        args,
        f"person_{args.action}",
        lambda registry: registry.change_person(args.email, active=active),
        f"{args.action}d",
    )


def run_grant(args: argparse.Namespace) -> int:
    key, level = args.space

    def grant(registry: Registry) -> Person:
        person = registry.person(args.email)
        return registry.grant(person.id, key, level or person.role.ceiling)

    return _change(args, "person_grant", grant, f"is a member of {key!r}", space=key)


def run_ungrant(args: argparse.Namespace) -> int:
    return _change(
        args,
        "person_ungrant",
        lambda registry: registry.ungrant(args.email, args.space),
        f"is no longer a member of {args.space!r}",
        space=args.space,
    )


def run_list(args: argparse.Namespace) -> int:
    def listing(settings: Settings, store: MemoryStore) -> int:
        directory = Registry(store).directory()
        clients = ClientManager(store, settings).list()
        people = sorted(
            directory.people.values(), key=lambda p: (not p.is_owner, p.name.lower(), p.id)
        )
        if args.json:
            print_json([_public(p, directory, clients) for p in people])
            return 0
        if len(people) == 1:
            print(
                "only the owner so far; add someone with: "
                f"{program()} person add EMAIL --name NAME --role writer",
                file=sys.stderr,
            )
        for person in people:
            _print_person(person, directory, clients)
        return 0

    return with_store(args, listing)


def _change(
    args: argparse.Namespace,
    action: str,
    change: Callable[[Registry], Person],
    done: str,
    *,
    space: str | None = None,
) -> int:
    def work(settings: Settings, store: MemoryStore) -> int:
        registry = Registry(store)
        person = recorded(
            settings,
            store,
            action,
            {},
            lambda: change(registry),
            space=space,
            answer=lambda changed: {"person_id": changed.id},
        )
        # Read after the change: the levels are what every server computes from now on.
        directory = registry.directory()
        clients = ClientManager(store, settings).list()
        if args.json:
            print_json({"person": _public(person, directory, clients)})
            return 0
        print(
            f"{person.name} <{person.email}> {done} in {store_name(settings)}; "
            f"{applies_within(settings)}"
        )
        _print_person(person, directory, clients)
        return 0

    return with_store(args, work)


# ------------------------------------------------------------------- output
def own_levels(person: Person, directory: Directory) -> dict[str, str]:
    """The person's own level in each space (membership capped by the role)."""
    levels = {key: person.level_in(key) for key in directory.spaces}
    return {key: level.word for key, level in sorted(levels.items()) if level is not None}


def _theirs(person: Person, clients: list[ClientView]) -> list[ClientView]:
    return [client for client in clients if client.person_id == person.id]


def _public(person: Person, directory: Directory, clients: list[ClientView]) -> dict[str, Any]:
    return {
        "id": person.id,
        "email": person.email,
        "name": person.name,
        "role": person.role.value,
        "active": person.active,
        "member_of": {key: level.word for key, level in sorted(person.spaces.items())},
        "levels": own_levels(person, directory),
        "clients": [
            {"id": c.id, "status": c.status, "levels": c.levels, "default_space": c.default_space}
            for c in _theirs(person, clients)
        ],
    }


def _print_person(person: Person, directory: Directory, clients: list[ClientView]) -> None:
    who = person.name if person.email is None else f"{person.name} <{person.email}>"
    state = "active" if person.active else "deactivated"
    spaces = (
        "every space, at write" if person.is_owner else levels_text(own_levels(person, directory))
    )
    print(f"{who}  {person.role.value}  {state}  spaces: {spaces}")
    for client in _theirs(person, clients):
        print(
            f"  client {client.id} [{client.status}] may use: {levels_text(client.levels)} "
            f"(default {client.default_space!r})"
        )
