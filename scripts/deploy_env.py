"""The function's environment, as a file for ``gcloud functions deploy --env-vars-file``.

    .venv/bin/python scripts/deploy_env.py --project P [--region R] [--env-file deploy.env] \\
        --output FILE

Reads the env file exactly as ``Settings`` reads it (python-dotenv, UTF-8), adds
GOOGLE_CLOUD_PROJECT (the project) and GOOGLE_CLOUD_LOCATION (the region, unless
the file sets it), and writes a YAML map in which every key and value is a
double-quoted string with every character outside printable ASCII escaped. So a
comma list (METACORTEX_ALLOWED_HOSTS), a URL, a colon, ``#``, quotes, leading
spaces, newlines or JSON reach the function exactly as written, where pasting
them into ``--set-env-vars`` breaks on the first comma.

Refused, with what to do (exit status 1, nothing written): what gcloud or Cloud
Run would refuse (names reserved or starting with X_GOOGLE_, a NUL character,
more than 32 KiB in all), a line that is not NAME=value (Settings would skip it
silently), a name without a value, a secret (those come from Secret Manager
only), and a GOOGLE_CLOUD_PROJECT other than the project being deployed.
``scripts/preflight.py`` runs the same checks, so ``scripts/deploy --dry-run``
catches them too.
"""

from __future__ import annotations

import argparse
import io
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from dotenv import dotenv_values
from dotenv.parser import parse_stream

# Bound from Secret Manager by scripts/deploy (and by `firebase deploy`, functions/main.py).
SECRET_NAMES: Final = ("MCP_ADMIN_TOKEN", "MCP_CLIENT_PROFILES_JSON", "GEMINI_API_KEY")
# Set by Cloud Run / Cloud Functions themselves; a deploy that sets them is refused
# (https://cloud.google.com/run/docs/configuring/services/overview-environment-variables).
RESERVED_NAMES: Final = frozenset(
    {"PORT", "K_SERVICE", "K_REVISION", "K_CONFIGURATION", "FUNCTION_TARGET",
     "FUNCTION_SIGNATURE_TYPE"}
)  # fmt: skip
RESERVED_PREFIX: Final = "X_GOOGLE_"
# Cloud Functions: names and values of all runtime environment variables together.
MAX_TOTAL_BYTES: Final = 32 * 1024
PROJECT_NAMES: Final = ("GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT")


class EnvFile:
    """An env file as ``Settings(_env_file=path)`` reads it: ``values`` (None for a name
    without ``=``) and the numbers of the lines it cannot parse (which Settings skips)."""

    def __init__(self, path: Path) -> None:
        if not path.is_file():
            raise OSError(f"{path} does not exist or is not a file")
        text = path.read_text(encoding="utf-8")
        self.path = path
        self.values: dict[str, str | None] = dict(dotenv_values(path, encoding="utf-8"))
        self.unparsed = [
            binding.original.line for binding in parse_stream(io.StringIO(text)) if binding.error
        ]


def refusals(env_file: EnvFile, project: str, region: str) -> list[str]:
    """What gcloud, Cloud Run or this deploy would refuse in the env file, one line each."""
    problems = [
        f"line {line} is not NAME=value or a # comment (Settings would skip it)"
        for line in env_file.unparsed
    ]
    for name, value in env_file.values.items():
        if value is None:
            problems.append(f"{name} has no value (write {name}=value, or remove the line)")
            continue
        if name in SECRET_NAMES:
            problems.append(
                f"{name} is a secret: remove it from the env file and store it in Secret "
                "Manager (docs/DEPLOYMENT.md, step 3); the deploy binds it from there"
            )
        elif name.startswith(RESERVED_PREFIX) or name in RESERVED_NAMES:
            problems.append(f"{name} is reserved by Cloud Functions; remove it")
        elif name in PROJECT_NAMES and value != project:
            problems.append(
                f"{name}={value} but the deploy is for project {project}: remove the line "
                "(the deploy sets it) or deploy with --project " + value
            )
        if "\x00" in value:
            problems.append(f"{name} contains a NUL character, which no environment variable holds")
    environment = function_environment(env_file.values, project, region)
    total = sum(len(name.encode()) + len(value.encode()) for name, value in environment.items())
    if total > MAX_TOTAL_BYTES:
        problems.append(
            f"the variables take {total} bytes; Cloud Functions allows {MAX_TOTAL_BYTES} "
            "(names and values together)"
        )
    return problems


def function_environment(
    file_values: Mapping[str, str | None], project: str, region: str
) -> dict[str, str]:
    """Every variable the function gets besides its secrets, in deploy order."""
    environment = {"GOOGLE_CLOUD_PROJECT": project, "GOOGLE_CLOUD_LOCATION": region}
    for name, value in file_values.items():
        if value is not None and name not in SECRET_NAMES:
            environment[name] = value
    return environment


def yaml_string(text: str) -> str:
    """``text`` as a YAML double-quoted scalar that every YAML 1.1/1.2 parser reads back
    unchanged: printable ASCII as is (but ``"`` and ``\\``), everything else escaped, so
    no line break, tab, non-printable or non-ASCII character is ever folded or refused."""
    out = ['"']
    for char in text:
        code = ord(char)
        if char in '"\\':
            out.append("\\" + char)
        elif 0x20 <= code < 0x7F:
            out.append(char)
        elif code <= 0xFF:
            out.append(f"\\x{code:02x}")
        elif code <= 0xFFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def yaml_document(environment: Mapping[str, str]) -> str:
    lines = [
        "# The function's environment variables, written by scripts/deploy from the env file",
        "# (edit that file, not this one). Secrets are not here: they come from Secret Manager.",
    ]
    lines += [f"{yaml_string(name)}: {yaml_string(value)}" for name, value in environment.items()]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--project", required=True)
    parser.add_argument("--region", default="us-central1")
    parser.add_argument("--env-file", type=Path, help="KEY=VALUE settings (deploy.env)")
    parser.add_argument("--output", type=Path, required=True, help="the YAML file to write")
    args = parser.parse_args()
    values: dict[str, str | None] = {}
    if args.env_file is not None:
        try:
            env_file = EnvFile(args.env_file)
        except (OSError, UnicodeDecodeError) as error:
            print(f"deploy: cannot read the env file: {error}", file=sys.stderr)
            return 1
        problems = refusals(env_file, args.project, args.region)
        for problem in problems:
            print(f"deploy: {args.env_file}: {problem}", file=sys.stderr)
        if problems:
            return 1
        values = env_file.values
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(
        yaml_document(function_environment(values, args.project, args.region)),
        encoding="utf-8",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
