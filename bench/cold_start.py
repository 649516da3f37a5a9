"""Cold start of the Cloud Functions entry, measured the way Cloud Functions runs it.

    .venv/bin/python bench/cold_start.py [--runs 5] [--json]

For each run, a fresh ``functions-framework --target=metaCortexMcp`` process
(gunicorn + uvicorn worker, as in the Cloud Functions image) is started on the
production composition: the Firestore store on the real emulator and the Gemini
providers, Gemini answered by a loopback fake of its REST API
(``tests/gemini_wire.py``; no network here). Reported, as medians over runs:

- ``import``: importing ``functions/main.py`` in a fresh interpreter (what the
  framework does before it can listen), without the interpreter's own start-up;
- ``first tools/list``: from process start to the first successful MCP
  ``tools/list`` answer on ``/metaCortexMcp/mcp`` (includes interpreter start,
  framework start, app construction and the MCP lifespan);
- ``first search``: from process start to the first successful ``search_context``
  (adds opening the Firestore and Gemini clients and one query embedding).

Targets: first response under 1.5 s on the 2-core development machine (issue
4), in the worst of the runs (issue 9). One start before the measured ones is
not counted (it fills the page cache and warms the emulator), and each measured
start waits until the emulator's JVM is idle: in production Firestore does not
share the function's CPU. The exit status is 0 when the worst run meets 1.5 s.
``FunctionProcess`` is also what tests/cloud/test_functions_entry.py drives.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Final

import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.processes import WatchedProcess

ROOT: Final = Path(__file__).resolve().parent.parent
FUNCTIONS_FRAMEWORK: Final = Path(sys.executable).parent / "functions-framework"
ADMIN_TOKEN: Final = "bench-" + "Q7w8E9r0T1y2U3i4O5p6A7s8D9f0G1h2"
PROJECT: Final = "demo-metacortex-coldstart"
LISTENING: Final = "Listening at:"
# Settings the deployment reads from the environment; cleared so the caller's
# shell cannot change what is measured or tested.
_OWN_PREFIXES: Final = ("MCP_", "METACORTEX_", "GEMINI_", "GOOGLE_", "FIRESTORE_")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def function_environment(settings: Mapping[str, str]) -> dict[str, str]:
    """This process's environment minus MetaCortex/Google settings, plus ``settings``."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(_OWN_PREFIXES)}
    # gunicorn logs "Listening at" at info: the signal that the port is bound.
    return base | {"GUNICORN_LOG_LEVEL": "info", "PYTHONUNBUFFERED": "1"} | dict(settings)


class FunctionProcess:
    """``functions-framework`` serving ``functions/main.py`` on a loopback port.

    ``wait_listening`` returns once gunicorn has bound the port; requests sent
    after that queue in the socket backlog until the worker accepts them, so no
    polling is needed.
    """

    def __init__(self, settings: Mapping[str, str]) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.started_at = time.perf_counter()
        self._process = WatchedProcess(
            [
                str(FUNCTIONS_FRAMEWORK),
                "--target=metaCortexMcp",
                f"--source={ROOT / 'functions' / 'main.py'}",
                "--host=127.0.0.1",
                f"--port={self.port}",
            ],
            LISTENING,
            env=function_environment(settings),
            cwd=ROOT / "functions",
        )

    @property
    def log(self) -> list[str]:
        return self._process.log

    def wait_listening(self, timeout: float = 60.0) -> None:
        self._process.wait_ready(timeout, f"functions-framework on {self.url}")

    def stop(self) -> None:
        self._process.stop()

    def __enter__(self) -> FunctionProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def stateless_call(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """A 2026-07-28 stateless JSON-RPC request: no handshake needed."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "cold-start-bench", "version": "1"},
    }
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": method,
        "params": {**(params or {}), "_meta": meta},
    }


def post_until_answered(url: str, body: dict[str, Any], method: str, deadline: float) -> None:
    """POST until the server answers 200 (connection refused while it starts is retried)."""
    headers = {
        "authorization": f"Bearer {ADMIN_TOKEN}",
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": method,
    }
    if method == "tools/call":
        headers["mcp-name"] = body["params"]["name"]
    while True:
        try:
            response = httpx2.post(url, json=body, headers=headers, timeout=60)
        except httpx2.TransportError:
            if time.perf_counter() > deadline:
                raise
            time.sleep(0.005)  # the port is not bound yet
            continue
        if response.status_code != 200 or "error" in response.json():
            raise RuntimeError(f"{method} answered {response.status_code}: {response.text[:300]}")
        return


def production_settings(emulator_host: str, gemini_url: str) -> dict[str, str]:
    """What the deployed function gets, pointed at the emulator and the fake Gemini."""
    return {
        "FIRESTORE_EMULATOR_HOST": emulator_host,
        "GOOGLE_CLOUD_PROJECT": PROJECT,
        "GEMINI_API_KEY": "AIzaBENCH-not-a-real-key-000000000000",
        "GOOGLE_GEMINI_BASE_URL": gemini_url,
        "GEMINI_EMBEDDING_DIMENSIONS": "8",
        "MCP_ADMIN_TOKEN": ADMIN_TOKEN,
    }


def import_seconds() -> float:
    code = (
        "import time, sys; t = time.perf_counter(); import main; "
        "sys.stdout.write(repr(time.perf_counter() - t))"
    )
    result = subprocess.run(  # noqa: S603 - fixed argv
        [sys.executable, "-c", code],
        cwd=ROOT / "functions",
        env=function_environment({}),
        capture_output=True,
        text=True,
        check=True,
    )
    return float(result.stdout)


def one_cold_start(settings: Mapping[str, str]) -> tuple[float, float]:
    with FunctionProcess(settings) as function:
        url = f"{function.url}/metaCortexMcp/mcp"
        deadline = function.started_at + 60
        post_until_answered(url, stateless_call("tools/list"), "tools/list", deadline)
        listed = time.perf_counter() - function.started_at
        search = stateless_call(
            "tools/call", {"name": "search_context", "arguments": {"query": "launch plan"}}
        )
        post_until_answered(url, search, "tools/call", deadline)
        searched = time.perf_counter() - function.started_at
    return listed, searched


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) the process has used so far, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_until_idle(pid: int, what: str, share: float = 0.05, timeout: float = 60.0) -> None:
    """Return once ``pid`` used under ``share`` of a core for a whole second.

    The emulator's JVM keeps compiling for a while after it starts, on the same
    two cores as the function being measured; in production Firestore runs
    elsewhere, so each cold start here begins once the emulator is idle.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        before = cpu_seconds(pid)
        time.sleep(1.0)
        if cpu_seconds(pid) - before < share:
            return
    print(f"warning: {what} still busy after {timeout:.0f} s; measuring anyway", file=sys.stderr)


@contextmanager
def production_backends() -> Iterator[tuple[dict[str, str], int]]:
    """The Firestore emulator (and its PID) and the fake Gemini wire, while the block runs."""
    from tests.firestore_support import Emulator, find_emulator
    from tests.gemini_wire import FakeGemini, serve_over_http

    command, why = find_emulator()
    if command is None:
        raise SystemExit(f"the Firestore emulator cannot run here: {why}")
    with ExitStack() as stack:
        emulator = Emulator(command)
        stack.callback(emulator.stop)
        emulator.wait_ready()
        gemini_url = stack.enter_context(serve_over_http(FakeGemini()))
        yield production_settings(emulator.host, gemini_url), emulator.pid


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5, help="cold starts to measure (median)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args()

    imports = []
    for run in range(args.runs):
        imports.append(import_seconds())
        print(f"import {run + 1}/{args.runs}: {imports[-1] * 1000:.0f} ms", file=sys.stderr)
    listed: list[float] = []
    searched: list[float] = []
    print("starting the Firestore emulator and the fake Gemini API ...", file=sys.stderr)
    with production_backends() as (settings, emulator_pid):
        # One start first, not counted: it fills the page cache with the venv's files
        # (as runs 2-5 always found it) and warms the emulator's query paths.
        one_cold_start(settings)
        for run in range(args.runs):
            wait_until_idle(emulator_pid, "the Firestore emulator")
            first_list, first_search = one_cold_start(settings)
            listed.append(first_list)
            searched.append(first_search)
            print(
                f"cold start {run + 1}/{args.runs}: tools/list {first_list * 1000:.0f} ms, "
                f"search {first_search * 1000:.0f} ms",
                file=sys.stderr,
            )
    result = {
        "runs": args.runs,
        "import_ms": round(statistics.median(imports) * 1000),
        "first_tools_list_ms": round(statistics.median(listed) * 1000),
        "first_search_ms": round(statistics.median(searched) * 1000),
        "worst_first_tools_list_ms": round(max(listed) * 1000),
        "target_ms": 1500,
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(
            f"median of {args.runs}: import {result['import_ms']} ms; process start → first "
            f"tools/list {result['first_tools_list_ms']} ms (worst "
            f"{result['worst_first_tools_list_ms']} ms); → first search "
            f"{result['first_search_ms']} ms; target: worst <= 1500 ms to first response"
        )
    met = max(listed) <= 1.5
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
