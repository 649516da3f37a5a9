"""``metacortex owner set-passphrase``: the passphrase the owner signs in with.

It protects the OAuth consent page (``docs/CONNECTORS.md``). The passphrase is
read twice from the terminal (or once from standard input with ``--stdin``)
and stored in the configured store as an argon2id hash, never in clear.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from pathlib import Path
from typing import Any

from metacortex.composition import build_store
from metacortex.config import Settings
from metacortex.errors import InvalidArgument
from metacortex.owner import set_passphrase


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "owner", help="the server owner's sign-in (for OAuth consent)"
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    setter = actions.add_parser(
        "set-passphrase",
        help="set or replace the owner passphrase (stored as an argon2id hash)",
        description="Set the passphrase the owner types to approve OAuth clients. It is "
        "stored as an argon2id hash in the configured store; at least 12 characters.",
    )
    setter.add_argument(
        "--stdin", action="store_true", help="read the passphrase from one line of stdin"
    )
    setter.add_argument(
        "--data-dir", type=Path, help="the embedded store's folder (default: METACORTEX_DATA_DIR)"
    )
    setter.set_defaults(run=run_set_passphrase)


def _read_passphrase(from_stdin: bool) -> str:
    if from_stdin:
        return sys.stdin.readline().rstrip("\r\n")
    first = getpass.getpass("New owner passphrase: ")
    second = getpass.getpass("Repeat it: ")
    if first != second:
        raise InvalidArgument("the two passphrases differ; nothing was changed")
    return first


def run_set_passphrase(args: argparse.Namespace) -> int:
    overrides: dict[str, Any] = {}
    if args.data_dir is not None:
        overrides["metacortex_data_dir"] = args.data_dir.expanduser()
    settings = Settings(**overrides)
    passphrase = _read_passphrase(args.stdin)
    store = build_store(settings)
    try:
        set_passphrase(store, passphrase)
    finally:
        store.close()
    print("metacortex: owner passphrase set (stored as an argon2id hash)", file=sys.stderr)
    return 0
