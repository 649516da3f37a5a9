"""gcloud's own argument parser, run offline and without credentials.

``parse(argv)`` runs the installed ``gcloud`` with an empty configuration of its
own (a fresh ``CLOUDSDK_CONFIG``: no account, no project, no GCE metadata probe,
no prompts). gcloud parses the whole command line first, flag types included
(``--env-vars-file`` is read and validated then, ``--set-secrets`` checked
against its patterns), and only then looks for credentials. So a command it
refuses ends with exit status 2 and ``argument --...: ...``; one it accepts
stops at "You do not currently have an active account selected" (or succeeds,
for a local command such as ``gcloud config set``). Nothing reaches the network.

Two pieces of ``gcloud functions deploy`` (2nd gen) that run after parsing are
called directly, in gcloud's bundled Python with its own modules:
``env_vars_file(path)`` reads an env-vars file with the very flag type
``--env-vars-file`` uses (``map_util.ArgDictFile`` with the Cloud Functions key
and value validators) and returns what gcloud would send; ``source_upload(dir)``
builds the source archive with ``source_util.CreateSourcesZipFile``, as
``_GetSourceLocal`` does before uploading, and returns the names in it.

Without gcloud every test using these is skipped, loudly.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest

NO_CREDENTIALS: Final = "You do not currently have an active account selected"
_CLEARED_PREFIXES: Final = ("CLOUDSDK_", "GOOGLE_", "GCLOUD_", "MCP_", "METACORTEX_")


def gcloud() -> str:
    found = shutil.which("gcloud")
    if found is None:
        pytest.skip(
            "GCLOUD NOT INSTALLED: gcloud's own argument parser was not run "
            "(install the Google Cloud SDK to run this test)"
        )
    return found


def _environment(config_dir: Path) -> dict[str, str]:
    config_dir.mkdir(parents=True, exist_ok=True)
    base = {k: v for k, v in os.environ.items() if not k.startswith(_CLEARED_PREFIXES)}
    return base | {
        "CLOUDSDK_CONFIG": str(config_dir),
        "CLOUDSDK_CORE_DISABLE_PROMPTS": "1",
        "CLOUDSDK_CORE_CHECK_GCE_METADATA": "false",
        "CLOUDSDK_CORE_DISABLE_USAGE_REPORTING": "true",
        "CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK": "true",
    }


@dataclass(frozen=True)
class Parsed:
    argv: list[str]
    returncode: int
    stderr: str

    @property
    def refused(self) -> bool:
        """gcloud's parser rejected the command line (argparse's exit status 2)."""
        return self.returncode == 2

    @property
    def accepted(self) -> bool:
        """Parsed completely: it ran (a local command) or stopped at the credentials."""
        return self.returncode == 0 or (self.returncode == 1 and NO_CREDENTIALS in self.stderr)

    def why(self) -> str:
        return f"{' '.join(self.argv)}\n  -> exit {self.returncode}: {self.stderr.strip()[:600]}"


def parse(argv: list[str], config_dir: Path, cwd: Path) -> Parsed:
    """Run ``argv`` (a ``gcloud ...`` command line) through the real gcloud, offline."""
    assert argv[0] == "gcloud", argv
    result = subprocess.run(  # noqa: S603 - the installed gcloud, a command under test
        [gcloud(), *argv[1:]],
        cwd=cwd,
        env=_environment(config_dir),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return Parsed(argv, result.returncode, result.stderr)


@functools.cache
def _sdk() -> tuple[str, str]:
    """gcloud's bundled Python and the SDK root."""
    info = subprocess.run(  # noqa: S603 - the installed gcloud, fixed arguments
        [gcloud(), "info", "--format=json(basic.python_location,installation.sdk_root)"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    data = json.loads(info.stdout)
    return data["basic"]["python_location"], data["installation"]["sdk_root"]


_READ_ENV_VARS_FILE: Final = """
import json, sys
from googlecloudsdk.command_lib.util.args import map_util
from googlecloudsdk.command_lib.functions.v2.deploy import env_vars_util
read = map_util.ArgDictFile(
    key_type=env_vars_util.EnvVarKeyType, value_type=env_vars_util.EnvVarValueType
)
json.dump(read(sys.argv[1]), sys.stdout)
"""


_ZIP_SOURCE: Final = """
import sys
from googlecloudsdk.command_lib.functions import source_util
print(source_util.CreateSourcesZipFile(sys.argv[1], sys.argv[2], None))
"""


def _gcloud_python(code: str, *args: str, config_dir: Path) -> str:
    """Run ``code`` in gcloud's bundled Python with gcloud's modules; its stdout."""
    python, sdk_root = _sdk()
    lib = Path(sdk_root) / "lib"
    result = subprocess.run(  # noqa: S603 - gcloud's own Python and modules
        [python, "-c", code, *args],
        env=_environment(config_dir) | {"PYTHONPATH": f"{lib / 'third_party'}:{lib}"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def env_vars_file(path: Path, config_dir: Path) -> dict[str, str]:
    """What ``gcloud functions deploy --env-vars-file=path`` reads from ``path``."""
    loaded: dict[str, str] = json.loads(
        _gcloud_python(_READ_ENV_VARS_FILE, str(path), config_dir=config_dir)
    )
    return loaded


def source_upload(source: Path, config_dir: Path) -> set[str]:
    """The files ``gcloud functions deploy --source=source`` puts in its upload."""
    zip_dir = config_dir / "zip"
    zip_dir.mkdir(parents=True, exist_ok=True)
    archive = _gcloud_python(_ZIP_SOURCE, str(zip_dir), str(source), config_dir=config_dir)
    with zipfile.ZipFile(archive.strip()) as zipped:
        return {name for name in zipped.namelist() if not name.endswith("/")}
