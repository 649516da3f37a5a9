"""The TypeScript MCP SDKs' OAuth clients, installed from npm and run from node.

``@modelcontextprotocol/sdk@1.32.2`` (Claude Code, Cursor, the Inspector 1.x) and
``@modelcontextprotocol/client@2.4.0`` (the Inspector 2.x) go into ``.cache/ts-oauth``
on first use; ``tests/ts_oauth_client.mjs`` drives their own discovery, schema and
``auth()`` code. Without npm or the registry the calling test is skipped, loudly.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Final, NoReturn

import pytest

ROOT: Final = Path(__file__).resolve().parents[1]
CACHE: Final = ROOT / ".cache" / "ts-oauth"
PACKAGES: Final = ("@modelcontextprotocol/sdk@1.32.2", "@modelcontextprotocol/client@2.4.0")
SCRIPT: Final = Path(__file__).with_name("ts_oauth_client.mjs")
SDKS: Final = ("v1", "v2")


def _skip(why: str) -> NoReturn:
    pytest.skip(f"TYPESCRIPT SDK OAUTH CLIENTS NOT RUN: {why}")


def install() -> Path:
    """The cache directory holding both SDKs (installed on first use) and the driver."""
    installed = CACHE / "node_modules" / "@modelcontextprotocol"
    marker = CACHE / ".packages"
    if not (marker.exists() and marker.read_text() == " ".join(PACKAGES)):
        npm = shutil.which("npm")
        if npm is None or shutil.which("node") is None:
            _skip("node and npm are not installed (apt install nodejs npm)")
        CACHE.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(  # noqa: S603 - fixed argv
            [npm, "install", "--no-audit", "--no-fund", "--prefix", str(CACHE), *PACKAGES],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if done.returncode != 0 or not (installed / "client").exists():
            _skip(f"npm could not install {', '.join(PACKAGES)} ({done.stderr.strip()[-200:]})")
        marker.write_text(" ".join(PACKAGES))
    # ESM resolves bare imports from the script's own folder: the driver runs from the cache.
    shutil.copyfile(SCRIPT, CACHE / SCRIPT.name)
    return CACHE


def run(sdk: str, action: str, **request: Any) -> dict[str, Any]:
    """One run of the driver; its JSON answer (``ok`` False carries the SDK's error)."""
    cache = install()
    node = shutil.which("node")
    assert node is not None
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump({"sdk": sdk, "action": action, **request}, handle)
    try:
        done = subprocess.run(  # noqa: S603 - our own driver
            [node, str(cache / SCRIPT.name), handle.name],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            cwd=cache,
        )
    finally:
        Path(handle.name).unlink()
    assert done.returncode == 0, done.stderr
    answer: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return answer
