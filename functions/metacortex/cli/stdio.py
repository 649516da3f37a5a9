"""``metacortex stdio``: MCP over stdin/stdout, for an agent that starts the server itself.

Claude Desktop, Claude Code, Codex, Cursor and VS Code can run a local server as
a child process (``metacortex init`` writes that entry). It serves the admin
profile, or a client profile with ``--client ID``, on the embedded store of the
data directory, safely beside a running ``metacortex serve`` on the same one.
Everything but the protocol goes to stderr. Started by hand in a terminal (stdin
a TTY) it says there what it waits for and how to connect an application, since
it otherwise shows nothing and seems to hang.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

import anyio

from metacortex.access.profiles import ADMIN_PROFILE_ID, Profile, load_profiles
from metacortex.appconfig.targets import TARGETS
from metacortex.cli.program import spelled
from metacortex.clients.lookup import profiles_with_stored
from metacortex.composition import check_configuration
from metacortex.config import Settings
from metacortex.errors import ConfigurationError
from metacortex.kernel.logs import configure_logging
from metacortex.server.stdio import serve_stdio


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "stdio",
        help="serve MCP over stdin/stdout (for a local agent that starts it)",
        description="Serve MCP over stdin and stdout: the same tools, resources and prompts "
        "as `serve`, on the same store, as the admin or as a client profile. For an "
        "application that starts its MCP servers itself (`metacortex init` writes its "
        "configuration). Logs go to stderr; it ends when stdin closes.",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        help="where the store lives (default METACORTEX_DATA_DIR or ~/.local/share/metacortex)",
    )
    parser.add_argument(
        "--client",
        metavar="ID",
        help="act as this client profile (its tools and readable states) instead of the admin",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    overrides: dict[str, Any] = {}
    if args.data_dir is not None:
        overrides["metacortex_data_dir"] = args.data_dir.expanduser()
    settings = Settings(**overrides)
    configure_logging(settings.metacortex_log_level, settings.metacortex_log_format)
    logging.captureWarnings(True)  # warnings become log lines on stderr, never stdout
    check_configuration(settings)
    profile = choose_profile(settings, args.client)
    if sys.stdin.isatty():
        print(_waiting(args.data_dir), file=sys.stderr, flush=True)
    anyio.run(serve_stdio, settings, profile)
    return 0


def _waiting(data_dir: Path | None) -> str:
    """What a person who typed ``metacortex stdio`` reads (stderr: stdout is the protocol's)."""
    targets = ", ".join(sorted(TARGETS))
    return (
        "metacortex stdio waits for an MCP client on standard input: an application starts "
        "it and speaks MCP to it; typed by hand it only waits (Ctrl-D ends it).\n"
        f"To connect an application, run: {spelled('init --target APP', data_dir)} "
        f"(APP: {targets}); to serve over HTTP instead: {spelled('serve', data_dir)}"
    )


def choose_profile(settings: Settings, client_id: str | None) -> Profile:
    """The admin profile, or the client profile ``client_id``: defined in the environment
    or kept in the store (ConfigurationError naming the known ones when there is none).
    The store is read only for a client the environment does not define."""
    environment = load_profiles(settings)
    if client_id is None or client_id == ADMIN_PROFILE_ID:
        return environment.admin
    profile = environment.get(client_id)
    if profile is not None:
        return profile
    profiles = profiles_with_stored(settings, environment)
    profile = profiles.get(client_id)
    if profile is None:
        known = ", ".join(sorted(profiles.clients)) or "none"
        raise ConfigurationError(
            f"no client profile {client_id!r} (known: {known}); create one with "
            "`metacortex client add`, or leave --client out to act as the admin"
        )
    return profile
