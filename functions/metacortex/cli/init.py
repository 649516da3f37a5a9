"""``metacortex init --target APP``: write MetaCortex into an application's MCP configuration.

Without ``--yes`` it only shows what it would change (a diff). With ``--yes`` it
writes the file atomically and keeps the previous one as ``<file>.bak``. A file its
application's format does not allow is refused and left as it is; re-running
replaces the entry in place, never adds a second one. The entry starts
``metacortex stdio`` on this data directory, as the admin or, with ``--client ID``,
as that client profile (environment-defined or kept in the store). With ``--url``
it is an HTTP entry for a remote server instead (``cli/init_remote.py``). Formats
and their sources: ``appconfig/targets.py``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import Any, Final

from metacortex.appconfig.edit import plan_entry, write
from metacortex.appconfig.targets import TARGETS, Scope, Target
from metacortex.cli.init_remote import run_remote
from metacortex.cli.stdio import choose_profile
from metacortex.config import ApplicationDirs, Settings
from metacortex.errors import InvalidArgument
from metacortex.server.profiles import CLIENT_ID_PATTERN

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
        "in its settings). Shows the change unless --yes is given; with --yes writes it "
        "atomically and keeps a .bak. Re-running changes nothing that is already there.",
    )
    parser.add_argument("--target", required=True, choices=sorted(TARGETS), help="the application")
    parser.add_argument(
        "--scope",
        choices=("user", "project"),
        help="the user's file or this directory's project file, where the application has "
        "both (default: the application's usual one)",
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
    parser.add_argument("--yes", action="store_true", help="write the change (default: show it)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    overrides: dict[str, Any] = {}
    if args.data_dir is not None:
        overrides["metacortex_data_dir"] = args.data_dir
    settings = Settings(**overrides)
    target = TARGETS[args.target]
    path = _path(target, args.scope, args.config, ApplicationDirs())
    if not CLIENT_ID_PATTERN.fullmatch(args.name):
        raise InvalidArgument(
            "--name is 1-64 letters, digits, '-' or '_', starting with a letter or digit"
        )
    if args.url is not None:
        return run_remote(args, settings, target, path)
    profile = choose_profile(settings, args.client)
    command, leading = _executable()
    stdio_args = [*leading, "stdio", "--data-dir", str(settings.metacortex_data_dir)]
    if not profile.is_admin:
        stdio_args += ["--client", profile.id]
    entry = target.stdio_entry(command, stdio_args)
    plan = plan_entry(path, target.format, target.container, args.name, entry)
    who = "the admin" if profile.is_admin else f"client profile {profile.id!r}"
    print(f"{target.app}: {path} (format: {target.source})")
    if not plan.changed:
        print(
            f"MetaCortex ({who}) is already configured there as {args.name!r}: nothing to change."
        )
        return 0
    print(plan.diff(), end="")
    if plan.previous_entry is not None:
        print(f"This replaces the existing entry {args.name!r}.")
    if not args.yes:
        keep = (
            f" and keep the current file as {plan.backup.name}" if plan.before is not None else ""
        )
        print(f"Nothing was written. Run again with --yes to write it{keep}.")
        return 0
    backup = write(plan)
    kept = f" (the previous version is {backup})" if backup is not None else ""
    print(f"Wrote {path}{kept}: {target.app} starts MetaCortex as {who}. {target.after}")
    return 0


def _path(target: Target, scope: str | None, config: Path | None, dirs: ApplicationDirs) -> Path:
    if config is not None:
        return config.expanduser().absolute()
    chosen: Scope = (
        target.default_scope if scope is None else ("user" if scope == "user" else "project")
    )
    if chosen not in target.scopes:
        raise InvalidArgument(
            f"{target.app} has no {chosen} configuration file; it has: " + ", ".join(target.scopes)
        )
    return target.path(chosen, dirs, Path.cwd())


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
