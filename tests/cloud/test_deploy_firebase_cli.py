"""The deploy's firebase commands, checked by the Firebase CLI itself.

Counterpart: firebase-tools (the version ``test_firebase_emulator.py`` pins,
installed into ``.cache/firebase-tools`` on first use) with no login, in a
copy of the project's Firebase files. Its command parser refuses an unknown
command or option first (``error: unknown option ...``); a command it accepts
stops at "Failed to authenticate, have you run firebase login?". Nothing
reaches a project. Without npm the test is skipped, loudly.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Final

import pytest

from tests.cloud.deployment_doc import typed_commands
from tests.cloud.test_deploy_artifacts import ROOT, TOKEN, clean_env, deploy_commands, run
from tests.cloud.test_firebase_emulator import _firebase_cli

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

NOT_LOGGED_IN: Final = "Failed to authenticate, have you run firebase login?"


def test_every_firebase_command_of_the_deploy_and_its_guide_passes_the_firebase_cli(
    tmp_path: Path,
) -> None:
    node, cli = _firebase_cli()
    dry = run(["bash", "scripts/deploy", "--project", "demo-p", "--dry-run"],
              clean_env(MCP_ADMIN_TOKEN=TOKEN))  # fmt: skip
    assert dry.returncode == 0, dry.stdout + dry.stderr
    from_script = [c.split() for c in deploy_commands(dry.stdout) if c.startswith("firebase ")]
    from_guide = [t.argv for t in typed_commands(tmp_path) if t.argv[0] == "firebase"]
    assert len(from_script) == 1
    assert ["firebase", "projects:addfirebase", "my-memory-project"] in from_guide

    project = tmp_path / "project"
    project.mkdir()
    for name in ("firebase.json", "firestore.rules", "firestore.indexes.json"):
        shutil.copy2(ROOT / name, project / name)
    home = tmp_path / "home"  # no login there
    home.mkdir()
    env = clean_env(HOME=str(home), CI="true")
    for credential in ("FIREBASE_TOKEN", "GOOGLE_APPLICATION_CREDENTIALS"):
        env.pop(credential, None)
    for argv in [*from_script, *from_guide, ["firebase", "deploy", "--no-such-option"]]:
        answer = subprocess.run(  # noqa: S603 - the pinned firebase-tools, a command under test
            [str(node), str(cli), *argv[1:]],
            cwd=project,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        said = answer.stdout + answer.stderr
        if "--no-such-option" in argv:  # the control: the parser does refuse
            assert "unknown option '--no-such-option'" in said
        else:
            assert NOT_LOGGED_IN in said, f"{' '.join(argv)}: {said[-600:]}"
