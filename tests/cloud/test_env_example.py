"""functions/.env.example and the files git must never take (issue 20, section 3).

The example lists every setting the deployed function reads, commented out at
its default; what it leaves out is named here with the reason. Counterparts:
``Settings`` itself (pydantic-settings reading the uncommented file), the
deploy's own env-file checks (``scripts/deploy_env.py``), firebase-tools' own
``.env`` reader (as ``firebase deploy`` reads ``functions/.env``), and git's
ignore rules (``git check-ignore``).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Final

import pytest
from dotenv import dotenv_values

from metacortex.config import Settings
from tests.cloud.test_deploy_artifacts import PYTHON, ROOT, clean_env, run
from tests.cloud.test_firebase_emulator import _firebase_cli

EXAMPLE: Final = ROOT / "functions" / ".env.example"

# Settings the function does not take from an env file, and why (the example's
# header says the same).
NOT_FOR_THE_FUNCTION: Final = {
    "MCP_ADMIN_TOKEN": "a secret: Secret Manager only",
    "MCP_CLIENT_PROFILES_JSON": "a secret: Secret Manager only",
    "GEMINI_API_KEY": "a secret: Secret Manager only",
    "GOOGLE_CLOUD_PROJECT": "set by the deploy; the Firebase CLI refuses it in .env",
    "GCLOUD_PROJECT": "set by the Firebase CLI itself",
    "METACORTEX_STORE": "the function always runs on Firestore",
    "METACORTEX_EMBEDDINGS": "the function always embeds with Gemini",
    "METACORTEX_USE_GEMINI_GENERATION": "the function always generates with Gemini",
    "METACORTEX_DATA_DIR": "the local SQLite store",
    "METACORTEX_HEAD_TIMEOUT_SECONDS": "metacortex serve's connection hygiene",
    "METACORTEX_BODY_TIMEOUT_SECONDS": "metacortex serve's connection hygiene",
    "METACORTEX_MAX_CONNECTIONS": "metacortex serve's connection hygiene",
    "MCP_BASE_URL": "metacortex smoke, on the operator's machine",
    "MCP_SMOKE_MODE": "metacortex smoke, on the operator's machine",
    "MCP_SMOKE_TOKEN": "metacortex smoke, on the operator's machine",
    "MCP_SMOKE_ORIGIN": "metacortex smoke, on the operator's machine",
    "MCP_SMOKE_URL_TOKEN": "metacortex smoke, on the operator's machine",
    "METACORTEX_TOKEN": "metacortex smoke, on the operator's machine (an old name)",
    "METACORTEX_OAUTH_CIMD_TEST_ORIGIN": "tests only",
    "METACORTEX_GENERATION": "the function always generates with Gemini",
    "OPENAI_BASE_URL": "OpenAI-compatible providers: metacortex serve only",
    "OPENAI_API_KEY": "OpenAI-compatible providers: metacortex serve only",
    "AZURE_OPENAI_API_KEY": "OpenAI-compatible providers: metacortex serve only",
    "OPENAI_ORG_ID": "OpenAI-compatible providers: metacortex serve only",
    "OPENAI_PROJECT_ID": "OpenAI-compatible providers: metacortex serve only",
    "AZURE_OPENAI_ENDPOINT": "OpenAI-compatible providers: metacortex serve only",
    "AZURE_OPENAI_API_VERSION": "OpenAI-compatible providers: metacortex serve only",
    "OPENAI_API_VERSION": "OpenAI-compatible providers: metacortex serve only",
    "OPENAI_EMBEDDING_MODEL": "OpenAI-compatible providers: metacortex serve only",
    "OPENAI_EMBEDDING_DIMENSIONS": "OpenAI-compatible providers: metacortex serve only",
    "OPENAI_CHAT_MODEL": "OpenAI-compatible providers: metacortex serve only",
    "OPENAI_EXTRACTION_MODEL": "OpenAI-compatible providers: metacortex serve only",
    "OPENAI_VISION_MODEL": "OpenAI-compatible providers: metacortex serve only",
    "OPENAI_STRUCTURED_OUTPUT": "OpenAI-compatible providers: metacortex serve only",
    "OPENAI_TIMEOUT_SECONDS": "OpenAI-compatible providers: metacortex serve only",
    "METACORTEX_OCR": "the ocr extra is not in the function's requirements",
    "METACORTEX_OCR_MAX_PAGES": "the ocr extra is not in the function's requirements",
    "METACORTEX_OCR_SECONDS": "the ocr extra is not in the function's requirements",
}
# Settings without a default value; the example shows what a value looks like.
PLACEHOLDERS: Final = {
    "METACORTEX_TRUSTED_PROXY_HOPS",  # unset: 1 in the cloud, the value shown
    "METACORTEX_ALLOWED_HOSTS",
    "MCP_ALLOWED_ORIGINS",
    "MCP_ALLOWED_TOOLS",
    "MCP_ALLOWED_FILTER_STATES",
    "METACORTEX_PUBLIC_URL",
    "METACORTEX_DOCUMENT_MEMORY_MB",  # unset: sized to the machine (instance)
}


def listed() -> dict[str, str]:
    """NAME -> value of every commented-out ``# NAME=value`` line of the example."""
    text = EXAMPLE.read_text(encoding="utf-8")
    return dict(re.findall(r"^# ([A-Z][A-Z0-9_]*)=(.*)$", text, flags=re.MULTILINE))


@pytest.fixture
def uncommented(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The example with every setting uncommented, as an operator's functions/.env."""
    for name in Settings.environment_names():
        monkeypatch.delenv(name, raising=False)
    env_file = tmp_path / ".env"
    env_file.write_text("".join(f"{name}={value}\n" for name, value in listed().items()))
    return env_file


def test_the_env_example_lists_exactly_the_settings_the_function_reads() -> None:
    names = Settings.environment_names()
    assert set(NOT_FOR_THE_FUNCTION) <= names  # every exclusion is a real setting
    assert set(listed()) == names - set(NOT_FOR_THE_FUNCTION)
    header = EXAMPLE.read_text(encoding="utf-8").split("\n\n# ---", 1)[0]
    for name in set(NOT_FOR_THE_FUNCTION) - {"GCLOUD_PROJECT"}:
        prefix = "MCP_SMOKE_" if name.startswith("MCP_SMOKE_") else name
        assert prefix in header, f"the example's header does not say why {name} is not there"


def test_the_env_example_uncommented_is_the_cloud_defaults_and_deploys(
    uncommented: Path, tmp_path: Path
) -> None:
    settings = Settings(_env_file=uncommented, deployment="cloud")  # type: ignore[call-arg]
    defaults = Settings(_env_file=None, deployment="cloud")  # type: ignore[call-arg]
    for name in set(listed()) - PLACEHOLDERS:
        field = name.lower()
        assert getattr(settings, field) == getattr(defaults, field), name
    for name in PLACEHOLDERS:
        assert getattr(settings, name.lower()), name  # a placeholder that parses

    written = run(
        [PYTHON, "scripts/deploy_env.py", "--project", "demo-p", "--env-file", str(uncommented),
         "--output", str(tmp_path / "env.yaml")],
        clean_env(),
    )  # fmt: skip
    assert written.returncode == 0, written.stderr


_FIREBASE_READS: Final = """
const env = require(process.argv[1]);
const text = require("fs").readFileSync(process.argv[2], "utf8");
try {
  process.stdout.write(JSON.stringify(env.parseStrict(text)));
} catch (error) {
  const children = (error.children || []).map((child) => child.message);
  process.stdout.write(JSON.stringify({ refused: [error.message, ...children] }));
}
"""


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_firebase_cli_reads_the_env_example_as_settings_does(uncommented: Path) -> None:
    """firebase-tools' own ``.env`` reader (``lib/functions/env.js`` ``parseStrict``: its
    line grammar and key rules, reserved names included) on the example as shipped and
    uncommented, against python-dotenv (how Settings reads it)."""
    node, cli = _firebase_cli()
    reader = cli.parents[1] / "functions" / "env.js"

    def firebase_reads(path: Path) -> dict[str, object]:
        done = subprocess.run(  # noqa: S603 - the pinned firebase-tools' own module
            [str(node), "-e", _FIREBASE_READS, str(reader), str(path)],
            capture_output=True, text=True, timeout=120, check=True,
        )  # fmt: skip
        read: dict[str, object] = json.loads(done.stdout)
        return read

    assert firebase_reads(EXAMPLE) == {}  # everything commented out: nothing deployed
    assert firebase_reads(uncommented) == dotenv_values(uncommented, encoding="utf-8")


def test_git_ignores_the_emulators_secret_and_env_files_but_not_the_example() -> None:
    git = shutil.which("git")
    if git is None:
        pytest.skip("GIT NOT INSTALLED: git's ignore rules were not checked")
    paths = ["functions/.secret.local", "functions/.env.local", "functions/.env.example"]
    result = subprocess.run(  # noqa: S603 - git, fixed arguments
        [git, "check-ignore", "--no-index", *paths],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.stdout.split() == ["functions/.secret.local", "functions/.env.local"]
