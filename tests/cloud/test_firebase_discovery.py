"""``firebase deploy`` finds the function: the Firebase CLI's own Python discovery.

The CLI (firebase-tools, ``runtimes/python``) discovers Python functions by
asking the venv's ``firebase_functions`` package where it lives, starting that
package's ``private/serving.py`` in the functions source directory with
``ADMIN_PORT`` set, reading ``/__/functions.yaml`` and calling
``/__/quitquitquit``. This test does exactly that, with the project's
``firebase_functions`` and ``functions/main.py``; only the CLI itself (Node)
is not involved.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any, Final

import httpx
import yaml  # type: ignore[import-untyped]  # pulled in by firebase-functions

from tests.cloud.test_deploy_artifacts import ROOT, clean_env
from tests.processes import WatchedProcess

PYTHON: Final = sys.executable


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def discover() -> dict[str, Any]:
    """The manifest the Firebase CLI reads, as firebase-tools reads it."""
    sdk = subprocess.run(  # noqa: S603 - fixed argv
        [
            PYTHON,
            "-c",
            "import firebase_functions, os; print(os.path.dirname(firebase_functions.__file__))",
        ],
        cwd=ROOT / "functions",
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.strip()
    port = _free_port()
    admin = WatchedProcess(
        [PYTHON, str(Path(sdk) / "private" / "serving.py")],
        "Running on http://127.0.0.1",
        env=clean_env(ADMIN_PORT=str(port)),
        cwd=ROOT / "functions",
    )
    try:
        admin.wait_ready(30, "the firebase_functions admin server")
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
            response = http.get("/__/functions.yaml")
            assert response.status_code == 200, response.text
            manifest: dict[str, Any] = yaml.safe_load(response.text)
            http.get("/__/quitquitquit")
    finally:
        admin.stop()
    return manifest


def test_firebase_discovery_lists_metacortex_mcp_as_an_https_function_with_its_options() -> None:
    manifest = discover()
    print(json.dumps(manifest, indent=2))  # shown in docs/DEPLOYMENT.md

    assert list(manifest["endpoints"]) == ["metaCortexMcp"]
    endpoint = manifest["endpoints"]["metaCortexMcp"]
    assert endpoint["entryPoint"] == "metaCortexMcp"
    assert endpoint["httpsTrigger"] == {}
    assert endpoint["platform"] == "gcfv2"
    assert endpoint["region"] == ["us-central1"]
    assert endpoint["availableMemoryMb"] == 1024
    assert endpoint["timeoutSeconds"] == 60
    assert (endpoint["minInstances"], endpoint["maxInstances"]) == (0, 10)
    assert (endpoint["cpu"], endpoint["concurrency"]) == (1, 80)
    secrets = ["MCP_ADMIN_TOKEN", "MCP_CLIENT_PROFILES_JSON", "GEMINI_API_KEY"]
    assert [s["key"] for s in endpoint["secretEnvironmentVariables"]] == secrets
    assert [(p["name"], p["type"]) for p in manifest["params"]] == [(s, "secret") for s in secrets]


def test_firebase_json_deploys_the_functions_source_as_python_without_its_venv() -> None:
    config = json.loads((ROOT / "firebase.json").read_text())
    (functions,) = config["functions"]
    assert functions["source"] == "functions"
    assert functions["runtime"].startswith("python3")
    assert {"venv", "__pycache__"} <= set(functions["ignore"])
    assert (ROOT / functions["source"] / "main.py").is_file()
    assert (ROOT / functions["source"] / "requirements.txt").is_file()
    assert set(config["firestore"]) == {"rules", "indexes"}
