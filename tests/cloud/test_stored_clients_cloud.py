"""docs/DEPLOYMENT.md: a client created from the operator's machine in the project's
Firestore is served by the running function without a redeploy, and a pause reaches it
within the bound (issue 21 §2).

Counterparts: the ``metacortex`` command of the project's install with the cloud
extra, running the ``client add`` the page gives with the settings it puts in its
environment (``tests/cloud/deployment_doc.py``); the real Firestore emulator for the
project's Firestore; the function as Google runs it (functions-framework serving
``functions/main.py``, background start, Gemini faked at its wire), asked over real
loopback HTTP the way ChatGPT's connector asks (the token in the URL, its Origin).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Final

import httpx2
import pytest

from bench.cold_start import PROJECT, FunctionProcess, production_settings
from tests.cloud.deployment_doc import typed_commands
from tests.firestore_support import Emulator
from tests.gemini_wire import FakeGemini, serve_over_http
from tests.install.test_core_install import ENV_PREFIXES

pytestmark = [pytest.mark.slow, pytest.mark.firestore, pytest.mark.timeout(900)]

BOUND_S: Final = 1.0
DEADLINE_S: Final = 300.0


def _run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - the installed entry point, the page's argv
        [str(Path(sys.executable).parent / "metacortex"), *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _tools_list(http: httpx2.Client, url: str) -> int:
    answer = http.post(
        url,
        headers={
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "origin": "https://chatgpt.com",
            "mcp-protocol-version": "2025-11-25",
        },
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
    )
    return answer.status_code


def _after_the_bound(http: httpx2.Client, url: str, changed_at: float) -> int:
    """The status of the first request that started one bound after the change."""
    while True:
        started = time.monotonic()
        status = _tools_list(http, url)
        if started >= changed_at + BOUND_S:
            return status
        assert time.monotonic() < changed_at + DEADLINE_S


def test_the_documented_client_add_is_served_by_the_running_function_and_its_pause_too(
    firestore_emulator: Emulator, tmp_path: Path
) -> None:
    documented = next(
        typed
        for typed in typed_commands(tmp_path)
        if typed.argv[:3] == ["metacortex", "client", "add"]
    )
    assert documented.settings["METACORTEX_STORE"] == "firestore"
    assert documented.settings["GOOGLE_CLOUD_PROJECT"] == "my-memory-project"
    firestore_emulator.wipe(PROJECT)
    home = tmp_path / "home"
    home.mkdir()
    operator = {
        **{k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIXES)},
        **documented.settings,
        "GOOGLE_CLOUD_PROJECT": PROJECT,  # the test's emulator project for the page's
        "FIRESTORE_EMULATOR_HOST": firestore_emulator.host,
        "HOME": str(home),
    }
    client_id = documented.argv[3]
    with serve_over_http(FakeGemini()) as gemini_url:
        settings = {
            **production_settings(firestore_emulator.host, gemini_url),
            "METACORTEX_CLIENT_REFRESH_SECONDS": str(BOUND_S),
        }
        with (
            FunctionProcess(settings) as function,
            httpx2.Client(base_url=function.url, timeout=60) as http,
        ):
            function.wait_listening()
            added = _run([*documented.argv[1:], "--json"], operator)
            assert added.returncode == 0, added.stderr
            created: dict[str, Any] = json.loads(added.stdout)
            url = f"/metaCortexMcp/clients/{client_id}/mcp?auth_token={created['token']}"
            served = _after_the_bound(http, url, time.monotonic())
            paused = _run(["client", "pause", client_id], operator)
            refused = _after_the_bound(http, url, time.monotonic())

    assert "the SQLite store" not in added.stderr
    assert not list(home.rglob("*.sqlite3"))  # it went to Firestore, not a local store
    assert served == 200
    assert paused.returncode == 0, paused.stderr
    assert "Firestore (project" in paused.stdout
    assert refused == 403
