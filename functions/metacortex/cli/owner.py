"""``metacortex owner set-passphrase``: the passphrase the owner signs in with.

It opens the memory console (``docs/CONSOLE.md``) and the OAuth consent page
(``docs/CONNECTORS.md``). On a terminal it is read twice, hidden; otherwise (a
pipe, ``--stdin``) as one line of standard input. It is stored as an argon2id
hash, never in clear, in the store ``--data-dir`` (or the environment) names, as
for ``metacortex serve``; the command says which store that was, and where to sign
in (the address ``serve`` recorded in that data directory, ``cli/server_address.py``).
The rule a passphrase must meet is shown before it is typed, and checked after the
first entry, so a weak one is not typed twice for nothing.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import Any, Final

from metacortex.cli.data_dir import add_data_dir_option, describe_store, settings_for
from metacortex.cli.program import program
from metacortex.cli.server_address import server_url
from metacortex.composition import build_store
from metacortex.config import Settings
from metacortex.errors import InvalidArgument
from metacortex.owner import passphrase_weakness, set_passphrase
from metacortex.owner.passphrase import RULE

EXIT_USAGE: Final = 2


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "owner", help="the server owner's sign-in (the console and OAuth consent)"
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    setter = actions.add_parser(
        "set-passphrase",
        help="set or replace the owner passphrase for the console and OAuth consent",
        description="Set the passphrase the owner signs in with, at the memory console "
        "(/console) and on the OAuth consent page. It is stored as an argon2id hash in "
        "the store of --data-dir (or METACORTEX_DATA_DIR, or METACORTEX_STORE=firestore), "
        "found as `metacortex serve` finds it: give the server's --data-dir. The rule: "
        f"{RULE}. Read twice from the terminal, or as one line from standard input "
        "when it is piped (or with --stdin).",
    )
    setter.add_argument(
        "--stdin", action="store_true", help="read the passphrase from one line of stdin"
    )
    add_data_dir_option(setter)
    setter.set_defaults(run=run_set_passphrase)


class _NoPassphrase(Exception):
    """Nothing to read the passphrase from."""


def _read_passphrase(from_stdin: bool) -> str:
    if from_stdin or not sys.stdin.isatty():
        line = sys.stdin.readline()
        if not line:
            raise _NoPassphrase("standard input ended before a passphrase")
        return line.rstrip("\r\n")
    print(f"The owner passphrase: {RULE}.", file=sys.stderr, flush=True)
    try:
        first = getpass.getpass("New owner passphrase: ")
        weakness = passphrase_weakness(first)
        if weakness is not None:
            raise InvalidArgument(f"the passphrase {weakness}; nothing was changed")
        second = getpass.getpass("Repeat it: ")
    except EOFError:
        raise _NoPassphrase("the terminal closed before a passphrase") from None
    if first != second:
        raise InvalidArgument("the two passphrases differ; nothing was changed")
    return first


def run_set_passphrase(args: argparse.Namespace) -> int:
    settings = settings_for(args)
    try:
        passphrase = _read_passphrase(args.stdin)
    except _NoPassphrase as missing:
        print(
            f"metacortex: {missing}; nothing was changed. Run it in a terminal, or pipe "
            f"the passphrase in: printf '%s\\n' \"$PASSPHRASE\" | {program()} owner "
            "set-passphrase --stdin",
            file=sys.stderr,
        )
        return EXIT_USAGE
    fresh = _is_new_store(settings)
    store = build_store(settings)
    try:
        set_passphrase(store, passphrase)
    finally:
        store.close()
    print(
        f"metacortex: owner passphrase set in {describe_store(settings)} "
        f"(an argon2id hash); sign in at {server_url(settings)}/console",
        file=sys.stderr,
    )
    if fresh:
        print(
            f"metacortex: {settings.metacortex_data_dir} held no store before: a server "
            "started with another --data-dir does not see this passphrase; run this "
            "again with that server's --data-dir",
            file=sys.stderr,
        )
    return 0


def _is_new_store(settings: Settings) -> bool:
    return settings.store_kind == "sqlite" and not settings.sqlite_path.exists()
