"""``metacortex init --target APP``: write MetaCortex into an application's MCP configuration.

It first says which file it writes and whose it is (the user's or a project's,
``appconfig/place.py``). Without ``--yes`` it only shows what it would change (a
diff). With ``--yes`` it writes the file atomically and keeps the previous one as
``<file>.bak``. A file its application's format does not allow, or one init does not
write (a link, a directory, a read-only file: ``appconfig/files.py``), is refused
and left as it is; re-running replaces the entry in place, never adds a second one.
Without ``--target`` it previews the change for every application file that exists
(the user's, and the project's in this directory) and writes nothing. The entry starts
``metacortex stdio`` on this data directory, as the admin or, with ``--client ID``,
as that client profile (environment-defined or kept in the store). With ``--url``
it is an HTTP entry for a remote server instead (``cli/init_remote.py``). Formats
and their sources: ``appconfig/targets.py``.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any, Final

from metacortex.access.profiles import CLIENT_ID_PATTERN
from metacortex.appconfig.edit import write
from metacortex.appconfig.files import FOLLOW_FLAG
from metacortex.appconfig.place import Place, locate
from metacortex.appconfig.targets import TARGETS, Scope, Target
from metacortex.cli.init_remote import run_remote
from metacortex.cli.program import program
from metacortex.cli.stdio import choose_profile
from metacortex.config import ApplicationDirs, Settings
from metacortex.errors import InvalidArgument, MetaCortexError

DEFAULT_NAME: Final = "metacortex"


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "init",
        help="write MetaCortex into an application's MCP configuration",
        description="Add MetaCortex to the MCP configuration of "
        + ", ".join(target.app for target in TARGETS.values())
        + ". Local (default): an entry that starts `metacortex stdio` on this data directory, "
        "as the admin or --client ID. Remote (--url URL of a running `metacortex serve` or "
        "cloud deployment): an HTTP entry for the endpoint /clients/<id>/mcp of a client "
        "created for that application in the configured store (or --client ID, an existing "
        "one); its token is printed once as an `export` line and the entry reads it from "
        "that environment variable (Claude Desktop takes remote servers only as connectors "
        "in its settings; --store-token keeps it where the application reads it instead). "
        "Shows the change unless --yes is given; with --yes writes it atomically and keeps "
        "a .bak. Without --target, previews every application's file it finds and writes "
        "nothing. Refuses a symbolic link unless --follow-symlink, a directory, a read-only "
        "file and a malformed one. Re-running changes nothing that is already there.",
    )
    parser.add_argument(
        "--target",
        choices=sorted(TARGETS),
        help="the application (default: preview every application's file found here, "
        "writing nothing)",
    )
    parser.add_argument(
        "--scope",
        choices=("user", "project"),
        help="the user's file or this directory's project file, where the application has "
        "both (default: the application's usual one); with --config, whose file that is",
    )
    parser.add_argument("--config", type=Path, help="write this file instead of the usual one")
    parser.add_argument(
        "--name", default=DEFAULT_NAME, help="the server's name there (default %(default)s)"
    )
    parser.add_argument(
        "--client",
        metavar="ID",
        help="local: act as this client profile, not the admin; remote: connect as this "
        "existing client instead of creating one (you need its token)",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        help="the data directory: the one a local entry serves, and the store a remote "
        "entry's client is kept in unless Firestore is configured (default "
        "METACORTEX_DATA_DIR or ~/.local/share/metacortex)",
    )
    parser.add_argument(
        "--url",
        help="a MetaCortex server to connect to over HTTP (https://host, its /mcp or a "
        "/clients/<id>/mcp endpoint; http:// for this machine) instead of a local stdio entry",
    )
    parser.add_argument(
        FOLLOW_FLAG,
        action="store_true",
        help="write the file a symbolic link points to (default: refuse a link, which a "
        "repository could point at any file of yours)",
    )
    parser.add_argument(
        "--store-token",
        action="store_true",
        help="with --url: keep the new client's token where the application reads it "
        "(Codex: $CODEX_HOME/.env; Claude Code, Cursor, Windsurf: the entry's header in "
        "the user's file; VS Code: its secret prompt) instead of printing an export line",
    )
    parser.add_argument("--yes", action="store_true", help="write the change (default: show it)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    overrides: dict[str, Any] = {}
    if args.data_dir is not None:
        overrides["metacortex_data_dir"] = args.data_dir
    settings = Settings(**overrides)
    if not CLIENT_ID_PATTERN.fullmatch(args.name):
        raise InvalidArgument(
            "--name is 1-64 letters, digits, '-' or '_', starting with a letter or digit"
        )
    if args.store_token and args.url is None:
        raise InvalidArgument("--store-token goes with --url: a local (stdio) entry needs no token")
    dirs, cwd = ApplicationDirs(), Path.cwd()
    if args.target is None:
        return _survey(args, settings, dirs, cwd)
    target = TARGETS[args.target]
    place = locate(target, args.scope, args.config, dirs, cwd, follow_links=args.follow_symlink)
    return _one(args, settings, target, place, dirs, "Run again with --yes to write it")


def _one(
    args: argparse.Namespace,
    settings: Settings,
    target: Target,
    place: Place,
    dirs: ApplicationDirs,
    rerun: str,
) -> int:
    """Preview (or with --yes write) the entry for one target; ``rerun`` says how to
    write it."""
    if args.url is not None:
        return run_remote(args, settings, target, place, dirs, rerun)
    profile = choose_profile(settings, args.client)
    command, leading = _executable()
    stdio_args = [*leading, "stdio", "--data-dir", str(settings.metacortex_data_dir)]
    if not profile.is_admin:
        stdio_args += ["--client", profile.id]
    entry = target.stdio_entry(command, stdio_args)
    print(place.heading(target))
    plan = place.plan(target, args.name, entry)
    who = "the admin" if profile.is_admin else f"client profile {profile.id!r}"
    if not plan.changed:
        print(
            f"MetaCortex ({who}) is already configured there as {args.name!r}: nothing to change."
        )
        return 0
    print(plan.diff(), end="")
    if plan.previous_entry is not None:
        print(f"This replaces the existing entry {args.name!r}.")
    if not args.yes:
        keep = f" and keep the current file as {plan.backup.name}" if plan.found else ""
        print(f"Nothing was written. {rerun}{keep}.")
        return 0
    written = write(plan)
    print(f"{written.sentence()}: {target.app} starts MetaCortex as {who}. {target.after}")
    return 0


def _survey(args: argparse.Namespace, settings: Settings, dirs: ApplicationDirs, cwd: Path) -> int:
    """Without --target: preview the change for every application file that exists
    here (the user's and this directory's project files); write nothing."""
    if args.yes:
        raise InvalidArgument(
            "--yes writes one application's file: name it with --target (without --yes "
            "and --target, init previews every application's file it finds)"
        )
    if args.config is not None:
        raise InvalidArgument("--config needs --target: the file's format is the application's")
    missing: list[str] = []
    for target in TARGETS.values():
        for scope in target.scopes:
            if args.scope is not None and scope != args.scope:
                continue
            place = locate(target, scope, None, dirs, cwd, follow_links=args.follow_symlink)
            command = _command(args, target, scope)
            if not os.path.lexists(place.path):
                missing.append(f"  {target.app}: {place.path} ({command})")
                continue
            print()
            try:
                _one(args, settings, target, place, dirs, f"Write it with `{command}`")
            except MetaCortexError as error:
                print(f"Not previewed: {error.message}")
    if missing:
        print("\nNot found (write one with --target; the file is created):")
        print("\n".join(missing))
    print("\nNothing was written: init without --target only shows what it would change.")
    return 0


def _command(args: argparse.Namespace, target: Target, scope: Scope) -> str:
    """The command that writes ``target``'s file of ``scope`` as this survey previewed it."""
    words = [program(), "init", "--target", target.key]
    if len(target.scopes) > 1:
        words += ["--scope", scope]
    if args.url is not None:
        words += ["--url", args.url]
    if args.client is not None:
        words += ["--client", args.client]
    if args.name != DEFAULT_NAME:
        words += ["--name", args.name]
    if args.data_dir is not None:
        words += ["--data-dir", str(args.data_dir)]
    if args.follow_symlink:
        words.append(FOLLOW_FLAG)
    return shlex.join([*words, "--yes"])


def _executable() -> tuple[str, list[str]]:
    """How the application starts this MetaCortex: the ``metacortex`` script installed
    beside this interpreter, else this interpreter with ``-m``. Absolute, since an
    application starts servers without the user's shell or virtual environment."""
    interpreter = Path(sys.executable)
    script = interpreter.parent / ("metacortex.exe" if sys.platform == "win32" else "metacortex")
    if script.is_file():
        return str(script), []
    found = shutil.which("metacortex")
    if found is not None:
        return str(Path(found).absolute()), []
    return str(interpreter), ["-m", "metacortex.cli.main"]
