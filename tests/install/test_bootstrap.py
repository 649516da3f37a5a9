"""``scripts/bootstrap``, which ``make serve`` and ``make test`` run first (issue 41 §1:
the first ``make serve`` installed the test and cloud extras, 760 MB, for a server that
needs none of them).

Counterparts: the real script, ``python -m venv`` and pip (the machine's package
index), on a copy of the script beside a project of its own: a ``pyproject.toml``
whose ``dev`` and ``cloud`` extras each pull one small real package, so that what
each run installed is seen by importing it, in seconds rather than the minutes
MetaCortex's own dependencies take (``tests/install/test_core_install.py`` installs
those). And ``make -n`` on the real Makefile, for which run each target asks for.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest

REPO: Final = Path(__file__).resolve().parents[2]
INSTALLING: Final = "==> installing"
# One small package an extra pulls in, and the module that shows it is there.
DEV_MODULE: Final = "iniconfig"
CLOUD_MODULE: Final = "pluggy"
PYPROJECT: Final = """\
[build-system]
requires = ["setuptools>=69"]
build-backend = "setuptools.build_meta"

[project]
name = "bootstrap-probe"
version = "{version}"

[project.optional-dependencies]
dev = ["iniconfig"]
cloud = ["pluggy"]

[tool.setuptools]
py-modules = ["bootstrap_probe"]
"""

# Each test creates a virtualenv and installs into it two or three times: minutes at
# load 20, where the default 120 s ran out.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


@dataclass(frozen=True)
class Project:
    root: Path

    def bootstrap(self, *args: str) -> str:
        """The script as the Makefile runs it; its standard error."""
        env = {k: v for k, v in os.environ.items() if k != "METACORTEX_EXTRAS"}
        done = subprocess.run(  # noqa: S603 - the script under test, fixed arguments
            [str(self.root / "scripts" / "bootstrap"), *args],
            cwd=self.root,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return done.stderr

    def has(self, module: str) -> bool:
        probe = subprocess.run(  # noqa: S603 - the project's own interpreter
            [str(self.root / ".venv" / "bin" / "python"), "-c", f"import {module}"],
            capture_output=True,
            check=False,
        )
        return probe.returncode == 0

    def stamps(self) -> list[Path]:
        return sorted((self.root / ".venv").glob(".installed-*"))


@pytest.fixture
def project(tmp_path: Path) -> Project:
    (tmp_path / "scripts").mkdir()
    shutil.copy2(REPO / "scripts" / "bootstrap", tmp_path / "scripts" / "bootstrap")
    (tmp_path / "pyproject.toml").write_text(PYPROJECT.format(version="1"))
    (tmp_path / "bootstrap_probe.py").write_text("")
    return Project(tmp_path)


def test_make_serve_asks_for_the_core_alone_and_make_test_for_the_extras() -> None:
    def planned(target: str) -> list[str]:
        done = subprocess.run(  # noqa: S603 - make's dry run of our own Makefile
            ["make", "-n", "-C", str(REPO), target],  # noqa: S607 - make from PATH
            capture_output=True,
            text=True,
            check=True,
        )
        return [line for line in done.stdout.splitlines() if "scripts/bootstrap" in line]

    assert planned("serve") == ["scripts/bootstrap --core"]
    assert planned("test") == ["scripts/bootstrap"]


def test_a_venv_made_for_serve_gets_the_extras_at_the_first_test_run_and_none_again_after(
    project: Project,
) -> None:
    assert INSTALLING in project.bootstrap("--core")
    assert project.has("bootstrap_probe")
    assert not project.has(DEV_MODULE)
    assert not project.has(CLOUD_MODULE)

    assert INSTALLING in project.bootstrap()  # make test on the venv make serve made
    assert project.has(DEV_MODULE)
    assert project.has(CLOUD_MODULE)
    [stamp] = project.stamps()
    written = stamp.stat().st_mtime_ns

    for args in ((), ("--core",), ()):  # make test, make serve, make test
        assert INSTALLING not in project.bootstrap(*args)
    assert project.stamps() == [stamp]
    assert stamp.stat().st_mtime_ns == written
    assert project.has(DEV_MODULE)


def test_a_changed_pyproject_reinstalls_once_what_is_asked_for(project: Project) -> None:
    project.bootstrap()
    (project.root / "pyproject.toml").write_text(PYPROJECT.format(version="2"))

    assert INSTALLING in project.bootstrap("--core")
    assert INSTALLING in project.bootstrap()  # the extras, with the changed project
    assert INSTALLING not in project.bootstrap()
    assert len(project.stamps()) == 1
