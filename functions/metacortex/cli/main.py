"""``metacortex``: the operator's command line.

Each command lives in its own module exposing ``add_parser(subparsers)``,
which registers the sub-command and sets ``run(args) -> int`` as its handler;
add a command by adding its module to ``_COMMANDS``. A sub-command may live in a
module of its own (``person invite``: ``cli/invite.py``), listed in
``_SUBCOMMANDS`` with its group. Errors an operator
can fix (configuration, a model mismatch) are printed as one clear message and
exit with status 2, without a traceback; the commands a message names are spelled
as the operator runs them (``cli.program.spelled_in``).
"""

from __future__ import annotations

import argparse
import errno
import gc
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import Final

from pydantic import ValidationError

from metacortex import __version__
from metacortex.cli.program import spelled_in
from metacortex.errors import ConfigurationError, MetaCortexError

# Each command module and the commands it registers. A command line that names one
# imports only its module: the modules import their backends at the top, and
# importing all of them costs ~0.2 s of ``metacortex serve``'s start (docs/benchmarks.md
# "Scale", third pass). Help and unknown commands import them all.
_COMMANDS: Final = {
    "metacortex.cli.serve": ("serve",),
    "metacortex.cli.stdio": ("stdio",),
    "metacortex.cli.init": ("init",),
    "metacortex.cli.surface": ("tools",),
    "metacortex.cli.clients": ("client",),
    "metacortex.cli.spaces": ("space",),
    "metacortex.cli.people": ("person",),
    "metacortex.cli.data": ("backup", "restore", "reembed"),
    "metacortex.cli.erase": ("erase",),
    "metacortex.cli.ingest": ("ingest",),
    "metacortex.cli.importer": ("import",),
    "metacortex.cli.evaluate": ("eval",),
    "metacortex.cli.smoke": ("smoke",),
    "metacortex.cli.owner": ("owner",),
    "metacortex.cli.oauth": ("oauth",),
    "metacortex.cli.migrate": ("migrate",),
}
_COMMAND_MODULES: Final = tuple(_COMMANDS)
# Sub-commands kept in a module of their own, added to a group another module makes
# (``person``: ``metacortex.cli.people``); each exposes ``add_subcommand(actions)``.
# The group is made here when no module made it.
_SUBCOMMANDS: Final = {
    "metacortex.cli.invite": "person",
}
EXIT_USAGE: Final = 2

Handler = Callable[[argparse.Namespace], int]


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser for ``argv``: only the named command's module is imported when the
    first argument is a command; all of them otherwise (or when ``argv`` is None)."""
    parser = argparse.ArgumentParser(
        prog="metacortex",
        description="Persistent memory for AI agents, spoken to over MCP.",
    )
    parser.add_argument("--version", action="version", version=f"metacortex {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    modules, extensions = _modules_for(argv)
    for module_name in modules:
        importlib.import_module(module_name).add_parser(commands)
    for module_name in extensions:
        actions = _group_actions(commands, _SUBCOMMANDS[module_name])
        importlib.import_module(module_name).add_subcommand(actions)
    return parser


def _modules_for(argv: Sequence[str] | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The command modules and the sub-command modules ``argv`` needs."""
    if argv:
        named = [module for module, names in _COMMANDS.items() if argv[0] in names]
        extending = [module for module, group in _SUBCOMMANDS.items() if group == argv[0]]
        if named or extending:
            return tuple(named), tuple(extending)
    return _COMMAND_MODULES, tuple(_SUBCOMMANDS)


def _group_actions(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], name: str
) -> argparse._SubParsersAction[argparse.ArgumentParser]:
    """The sub-commands of the command ``name``, made when no module made that command."""
    group = commands.choices.get(name)
    if group is None:
        group = commands.add_parser(name, help=f"{name} commands")
    for action in group._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return group.add_subparsers(dest="action", metavar="ACTION", required=True)


def main(argv: Sequence[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else list(argv)
    # Importing a command (the MCP SDK, pydantic schemas, numpy) creates hundreds of
    # thousands of objects that live for good and little garbage: the collector's
    # automatic passes over them are wasted start-up time (docs/benchmarks.md "Scale").
    gc.disable()
    try:
        args = build_parser(arguments).parse_args(arguments)
    finally:
        gc.enable()
    handler: Handler = args.run
    try:
        return handler(args)
    except KeyboardInterrupt:
        return 130
    except BaseException as raised:
        # A server's task group wraps what stopped it (``stdio``): the one error inside.
        message = _refusal(_alone(raised), args)
        if message is None:
            raise
        return _fail(message)


def _alone(error: BaseException) -> BaseException:
    """The only error inside (nested) exception groups of one error each, else ``error``."""
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error


def _refusal(error: BaseException, args: argparse.Namespace) -> str | None:
    """The one line an expected failure prints, or None for a bug (its traceback shows)."""
    if isinstance(error, ConfigurationError):
        return f"configuration error: {error}"
    if isinstance(error, ValidationError):
        return "configuration error: " + _settings_problems(error)
    if isinstance(error, MetaCortexError):
        # A command the message names is spelled as the operator runs it from here.
        return spelled_in(error.message, getattr(args, "data_dir", None))
    if isinstance(error, OSError) and error.errno == errno.ENOSPC:
        where = error.filename or getattr(args, "data_dir", None) or "the data directory"
        return f"the disk holding {where} is full: free space on it, then run this again"
    return None


def _fail(message: str) -> int:
    print(f"metacortex: {message}", file=sys.stderr)
    return EXIT_USAGE


def _settings_problems(error: ValidationError) -> str:
    """Environment problems named by variable, e.g. ``SEARCH_RESULT_LIMIT: ...``."""
    problems = []
    for detail in error.errors(include_url=False):
        name = "_".join(str(part) for part in detail["loc"]).upper() or "settings"
        problems.append(f"{name}: {detail['msg']}")
    return "; ".join(problems)


if __name__ == "__main__":
    sys.exit(main())
