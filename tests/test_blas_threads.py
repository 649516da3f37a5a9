"""The command line keeps numpy's OpenBLAS threads from busy-waiting between searches.

OpenBLAS reads ``OPENBLAS_THREAD_TIMEOUT`` once, when numpy loads it: the setting only
works if the command-line package sets it before anything imports numpy. Checked in a
fresh interpreter, as the ``metacortex`` console script starts.
"""

from __future__ import annotations

import os
import subprocess
import sys

PROBE = (
    "import sys, os\n"
    "import metacortex.cli\n"
    "loaded_early = 'numpy' in sys.modules\n"
    "import metacortex.cli.main, numpy\n"
    "print(loaded_early, os.environ.get('OPENBLAS_THREAD_TIMEOUT'))\n"
)


def _probe(extra: dict[str, str]) -> str:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"} | extra
    done = subprocess.run(  # noqa: S603 - this interpreter
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def test_the_command_line_sets_the_openblas_thread_timeout_before_numpy_loads() -> None:
    assert _probe({}) == "False 4"


def test_an_operators_own_openblas_thread_timeout_is_kept() -> None:
    assert _probe({"OPENBLAS_THREAD_TIMEOUT": "20"}) == "False 20"
