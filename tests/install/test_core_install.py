"""The core install, as a laptop user gets it: ``pip install .`` alone (never ``-e``,
no extras) into a fresh virtualenv, then the local commands from that install.

Counterpart: pip and setuptools building the real wheel from a copy of the source
tree (so only declared package data is present), and the installed ``metacortex``
entry point, with no Google library in the environment.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest

from tests.processes import WatchedProcess

REPO = Path(__file__).resolve().parents[2]
ENV_PREFIXES = ("MCP_", "METACORTEX_", "GEMINI_", "GOOGLE_", "FIRESTORE_", "SEARCH_")

# The fixture pip-installs the whole package into a new virtualenv: past the default
# 120 s at load 20 (from the package index, as a user's install).
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


@dataclass(frozen=True)
class CoreInstall:
    bin: Path
    home: Path

    def env(self) -> dict[str, str]:
        keep = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIXES)}
        return {**keep, "HOME": str(self.home), "PYTHONDONTWRITEBYTECODE": "1"}

    def run(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(  # noqa: S603 - the installed entry point, our arguments
            [str(self.bin / "metacortex"), *args],
            cwd=cwd or self.home,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )


def _copy_source(target: Path) -> Path:
    """Only what a source distribution holds: no venv, caches or build leftovers."""
    source = target / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(REPO / name, source / name)
    shutil.copytree(
        REPO / "functions" / "metacortex",
        source / "functions" / "metacortex",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    return source


@pytest.fixture(scope="module")
def core_install(tmp_path_factory: pytest.TempPathFactory) -> CoreInstall:
    root = tmp_path_factory.mktemp("core-install")
    source = _copy_source(root)
    env_dir = root / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    installed = subprocess.run(  # noqa: S603 - pip of the fresh venv, fixed arguments
        [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q", str(source)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if installed.returncode != 0:
        pytest.fail(f"pip install . failed:\n{installed.stdout}\n{installed.stderr}")
    home = root / "home"
    home.mkdir()
    return CoreInstall(env_dir / "bin", home)


def test_the_core_install_has_no_google_library(core_install: CoreInstall) -> None:
    probe = subprocess.run(  # noqa: S603 - the venv's interpreter
        [str(core_install.bin / "python"), "-c", "import google.cloud"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert probe.returncode != 0, "the core install must not pull in Google libraries"


def test_every_local_command_parses_on_the_core_install(core_install: CoreInstall) -> None:
    for command in ("serve", "tools", "backup", "restore", "smoke", "eval", "migrate", "owner"):
        result = core_install.run(command, "--help")
        assert result.returncode == 0, f"{command} --help: {result.stderr}"
        assert "Traceback" not in result.stderr


def test_tools_json_works_on_the_core_install(core_install: CoreInstall) -> None:
    result = core_install.run("tools", "--json")
    assert result.returncode == 0, result.stderr
    assert '"save_context"' in result.stdout


def test_a_cloud_only_command_names_the_extra_to_install(core_install: CoreInstall) -> None:
    result = core_install.run("migrate", "firestore")
    assert result.returncode == 2
    assert "pip install 'metacortex[cloud]'" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_firestore_store_setting_names_the_extra_to_install(
    core_install: CoreInstall, tmp_path: Path
) -> None:
    env = {**core_install.env(), "METACORTEX_STORE": "firestore"}
    result = subprocess.run(  # noqa: S603 - the installed entry point
        [str(core_install.bin / "metacortex"), "serve", "--data-dir", str(tmp_path / "d")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2
    assert "pip install 'metacortex[cloud]'" in result.stderr
    assert "Traceback" not in result.stderr


def test_serve_smoke_backup_and_restore_run_from_the_built_wheel(
    core_install: CoreInstall, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    server = WatchedProcess(
        [str(core_install.bin / "metacortex"), "serve", "--port", "0", "--data-dir", str(data)],
        " client snippets",  # the banner's last line
        env=core_install.env(),
        cwd=core_install.home,
    )
    try:
        server.wait_ready(180, "metacortex serve from the core install")
        banner = "\n".join(server.log)
        base = banner.split("is ready at ", 1)[1].split()[0]
        token = (data / "admin-token").read_text().strip()
        # Package data: the console's and the sign-in page's static files are served.
        for path in ("/console/static/console.css", "/owner/static/icon.svg"):
            response = httpx2.get(f"{base}{path}", timeout=30)
            assert response.status_code == 200, f"{path}: {response.status_code}"
        signin = httpx2.get(f"{base}/console", timeout=30, follow_redirects=True)
        assert signin.status_code == 200
        smoke = subprocess.run(  # noqa: S603 - the installed entry point
            [str(core_install.bin / "metacortex"), "smoke", "--url", f"{base}/mcp"],
            env={**core_install.env(), "MCP_SMOKE_TOKEN": token},
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert smoke.returncode == 0, smoke.stdout + smoke.stderr
    finally:
        server.stop()
    archive = tmp_path / "archive"
    backup = core_install.run("backup", str(archive), "--data-dir", str(data))
    assert backup.returncode == 0, backup.stderr
    assert (archive / "manifest.json").is_file()
    restored = tmp_path / "restored"
    restore = core_install.run("restore", str(archive), "--data-dir", str(restored))
    assert restore.returncode == 0, restore.stderr
    assert "Traceback" not in backup.stderr + restore.stderr


def test_the_local_path_imports_no_google_module() -> None:
    """Parsing every command, building the app, saving and searching on the embedded
    default loads no Google or gRPC module, even where the cloud extra is installed
    (as in this test's own venv)."""
    script = """
import sys, tempfile
from pathlib import Path
# Namespace-package .pth files of the cloud extra pre-load bare `google` and
# `google.cloud` at interpreter start; anything beyond them is a real import.
def cloud_modules():
    return {m for m in sys.modules if m.split(".")[0] in ("google", "grpc")}
at_start = cloud_modules()
from metacortex.cli.main import build_parser
from metacortex.config import Settings
from metacortex.composition import build_service
from metacortex.server.app import create_app
from metacortex.service import Access
build_parser()
settings = Settings(metacortex_data_dir=Path(tempfile.mkdtemp()))
service = build_service(settings)
create_app(settings, service)
service.save(Access.admin(), content="the deploy key rotates on Fridays", topic="ops")
assert service.search(Access.admin(), query="deploy key rotation")["matches"]
loaded = sorted(cloud_modules() - at_start)
print("LOADED", loaded)
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIXES)}
    result = subprocess.run(  # noqa: S603 - our interpreter and a fixed script
        [sys.executable, "-c", script],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "LOADED []" in result.stdout, result.stdout
