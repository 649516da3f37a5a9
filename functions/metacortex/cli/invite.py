"""``metacortex person invite EMAIL [--days N]``: a one-time link to choose a passphrase.

The person must exist (``metacortex person add``) and be active. The link,
``<public base>/owner/invite/<token>``, is printed once on standard output (the
rest goes to standard error, so ``$(metacortex person invite ...)`` is the link);
the store keeps only the token's sha256 (``owner/invitations.py``). It works
once, for ``--days`` days (``METACORTEX_INVITATION_DAYS``, 7, by default); a new
invitation replaces the person's earlier unused one, which is also how a person
who forgot their passphrase gets to choose a new one. The base is ``--url``,
else ``METACORTEX_PUBLIC_URL``, else where ``metacortex serve`` last answered for
this data directory (``cli/server_address.py``).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from metacortex.access.registry import Registry
from metacortex.cli.data_dir import add_data_dir_option, describe_store, settings_for
from metacortex.cli.program import program
from metacortex.cli.server_address import server_url
from metacortex.composition import build_store
from metacortex.domain.records import to_wire_time
from metacortex.errors import FailedPrecondition, InvalidArgument, NotFound
from metacortex.owner.invitations import INVITE_PATH, MAX_DAYS, invite


def add_subcommand(actions: Any) -> None:
    """``invite`` in the ``person`` group (``cli/main.py``: ``_SUBCOMMANDS``)."""
    parser: argparse.ArgumentParser = actions.add_parser(
        "invite",
        help="print a one-time link with which a person chooses their passphrase",
        description="Print a one-time link with which a person the owner added (`person "
        "add`) chooses their own passphrase and signs in to the console and OAuth consent "
        "page. The link works once, for --days days; a new invitation replaces the "
        "person's earlier unused one. Only the sha256 of its secret is stored.",
    )
    parser.add_argument("email", help="the person's email")
    parser.add_argument(
        "--days",
        type=int,
        help=f"how many days the link works (1 to {MAX_DAYS}; default "
        "METACORTEX_INVITATION_DAYS, 7)",
    )
    parser.add_argument(
        "--url", help="the server's public base URL, when the default is not the one people use"
    )
    parser.add_argument("--json", action="store_true", help="print JSON")
    add_data_dir_option(parser)
    parser.set_defaults(run=run_invite)


def run_invite(args: argparse.Namespace) -> int:
    settings = settings_for(args)
    days = settings.metacortex_invitation_days if args.days is None else args.days
    if not 1 <= days <= MAX_DAYS:
        raise InvalidArgument(f"--days must be 1 to {MAX_DAYS}; got {days}")
    store = build_store(settings)
    try:
        registry = Registry(store)
        try:
            person = registry.person(args.email.strip())
        except NotFound:
            raise NotFound(
                f"no person with the email {args.email!r} in {describe_store(settings)}; add "
                f"them first: {program()} person add {args.email} --name NAME --role writer"
            ) from None
        if not person.active:
            raise FailedPrecondition(
                f"{person.email} is deactivated; reactivate them first: "
                f"{program()} person reactivate {person.email}"
            )
        token, invitation = invite(store, person, days)
        spaces = registry.directory().spaces
    finally:
        store.close()
    link = f"{server_url(settings, args.url)}{INVITE_PATH}/{token}"
    levels = {key: level.word for key in sorted(spaces) if (level := person.level_in(key))}
    if args.json:
        print(
            json.dumps(
                {
                    "email": person.email,
                    "person_id": person.id,
                    "name": person.name,
                    "role": person.role.value,
                    "spaces": levels,
                    "link": link,
                    "valid_until": to_wire_time(invitation.valid_until),
                    "days": days,
                },
                indent=2,
            )
        )
        return 0
    where = ", ".join(f"{key}:{level}" for key, level in levels.items()) or "no space yet"
    print(
        f"metacortex: invitation for {person.name} <{person.email}> ({person.role.value}; "
        f"{where}), valid until {invitation.valid_until:%Y-%m-%d %H:%M} UTC ({days} days). "
        "Send them this link; it works once:",
        file=sys.stderr,
    )
    print(link)
    return 0
