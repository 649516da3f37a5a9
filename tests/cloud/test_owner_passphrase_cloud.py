"""docs/DEPLOYMENT.md step 9: the owner passphrase, set from the operator's machine
against Firestore, lets the owner into the deployed function's console.

Counterparts: the ``metacortex`` command of an install with the cloud extra
running the command the page gives, with the
settings the page puts in its environment (``tests/cloud/deployment_doc.py``
reads them as bash expands them); the real Firestore emulator stands in for
the project's Firestore (``FIRESTORE_EMULATOR_HOST`` in place of the
application-default credentials, which this machine cannot have). Then the
function as Google runs it (functions-framework serving ``functions/main.py``
on the production composition, Gemini faked at its wire) on the same emulator,
and the owner signing in to ``/console`` over real loopback HTTP.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Final

import httpx2
import pytest

from bench.cold_start import PROJECT, FunctionProcess, production_settings
from tests.cloud.deployment_doc import typed_commands
from tests.firestore_support import Emulator
from tests.gemini_wire import FakeGemini, serve_over_http
from tests.install.test_core_install import ENV_PREFIXES
from tests.oauth_support import hidden

pytestmark = [pytest.mark.slow, pytest.mark.firestore, pytest.mark.timeout(900)]

PASSPHRASE: Final = "the owner's own passphrase, 2026"


@pytest.fixture(scope="module")
def cloud_install() -> Path:
    """``bin/`` of the project's virtualenv, which holds the cloud extra. (A fresh
    ``pip install '.[cloud]'`` took 115 s of CI for nothing more: the non-editable
    install and its package data are checked by tests/install/.)"""
    return Path(sys.executable).parent


def sign_in(http: httpx2.Client, passphrase: str) -> httpx2.Response:
    page = http.get("/console")
    assert page.status_code == 200, page.text
    return http.post(
        "/owner/sign-in",
        data={
            "csrf": hidden(page.text, "csrf"),
            "next": hidden(page.text, "next"),
            "passphrase": passphrase,
        },
    )


def test_the_documented_owner_passphrase_command_lets_the_owner_into_the_deployed_console(
    cloud_install: Path, firestore_emulator: Emulator, tmp_path: Path
) -> None:
    documented = next(
        typed
        for typed in typed_commands(tmp_path)
        if typed.argv[:3] == ["metacortex", "owner", "set-passphrase"]
    )
    assert documented.settings["METACORTEX_STORE"] == "firestore"
    assert documented.settings["GOOGLE_CLOUD_PROJECT"] == "my-memory-project"
    firestore_emulator.wipe(PROJECT)
    home = tmp_path / "home"  # no local store to fall back on
    home.mkdir()
    operator = {
        **{k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIXES)},
        **documented.settings,
        "GOOGLE_CLOUD_PROJECT": PROJECT,  # the test's emulator project for the page's
        "FIRESTORE_EMULATOR_HOST": firestore_emulator.host,
        "HOME": str(home),
    }
    with serve_over_http(FakeGemini()) as gemini_url:
        settings = production_settings(firestore_emulator.host, gemini_url)
        with (
            FunctionProcess(settings) as function,
            httpx2.Client(base_url=function.url, timeout=60) as http,
        ):
            function.wait_listening()
            before = http.get("/console")
            set_it = subprocess.run(  # noqa: S603 - the installed entry point, the page's argv
                [str(cloud_install / "metacortex"), *documented.argv[1:], "--stdin"],
                input=PASSPHRASE + "\n",
                env=operator,
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
            refused = sign_in(http, "not the owner's passphrase")
            signed_in = sign_in(http, PASSPHRASE)
            console = http.get("/console")

    assert "No owner passphrase is set yet" in before.text
    assert set_it.returncode == 0, set_it.stderr
    assert not list(home.rglob("*.sqlite3"))  # it went to Firestore, not a local store
    assert refused.status_code == 401
    assert signed_in.status_code == 303, signed_in.text
    assert console.status_code == 200
    assert 'name="passphrase"' not in console.text  # the console itself, not the sign-in
