"""``metacortex``: the operator's command line.

Each command lives in its own module exposing ``add_parser(subparsers)``,
which registers the sub-command and sets ``run(args) -> int`` as its handler;
add a command by adding its module to ``_COMMAND_MODULES``. Errors an operator
can fix (configuration, a model mismatch) are printed as one clear message and
exit with status 2, without a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import Final

from pydantic import ValidationError

from metacortex import __version__
from metacortex.errors import ConfigurationError, MetaCortexError

_COMMAND_MODULES: Final = (
    "metacortex.cli.serve",
    "metacortex.cli.stdio",
    "metacortex.cli.init",
    "metacortex.cli.surface",
    "metacortex.cli.clients",
    "metacortex.cli.data",
    "metacortex.cli.erase",
    "metacortex.cli.evaluate",
    "metacortex.cli.smoke",
    "metacortex.cli.owner",
    "metacortex.cli.oauth",
    "metacortex.cli.migrate",
)
EXIT_USAGE: Final = 2

Handler = Callable[[argparse.Namespace], int]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="metacortex",
        description="Persistent memory for AI agents, spoken to over MCP.",
    )
    parser.add_argument("--version", action="version", version=f"metacortex {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module_name in _COMMAND_MODULES:
        importlib.import_module(module_name).add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler: Handler = args.run
    try:
        return handler(args)
    except ConfigurationError as error:
        return _fail(f"configuration error: {error}")
    except ValidationError as error:
        return _fail("configuration error: " + _settings_problems(error))
    except MetaCortexError as error:
        return _fail(error.message)
    except KeyboardInterrupt:
        return 130


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
