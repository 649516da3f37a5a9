"""The deploy's gcloud commands, checked by gcloud itself (issue 20, section 3).

Counterpart: the installed Google Cloud SDK's own argument parser and flag
types (``tests/cloud/gcloud_cli.py`` runs them offline, without credentials:
a refused command line exits 2 before gcloud looks for an account). What is
checked is what the operator runs: the commands ``scripts/deploy --dry-run``
prints, and the commands of docs/DEPLOYMENT.md as bash expands them
(``tests/cloud/deployment_doc.py``). Without gcloud these tests skip, loudly.
"""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path
from typing import Final

from dotenv import dotenv_values

from tests.cloud import gcloud_cli
from tests.cloud.deployment_doc import PAGE, typed_commands
from tests.cloud.test_deploy_artifacts import PYTHON, ROOT, TOKEN, clean_env, run
from tests.cloud.test_firebase_discovery import discover

PROJECT: Final = "demo-deploy-parse"


def documented_allowed_hosts() -> str:
    """The METACORTEX_ALLOWED_HOSTS line docs/DEPLOYMENT.md tells the operator to add."""
    found = re.findall(r"^METACORTEX_ALLOWED_HOSTS=(\S+)$", PAGE.read_text(), flags=re.MULTILINE)
    assert len(found) == 1, found
    hosts: str = found[0]
    assert "," in hosts  # the two hostnames, a comma list
    return hosts


def dry_run(env_file: Path, cwd: Path = ROOT) -> list[list[str]]:
    """The commands ``scripts/deploy --dry-run`` prints, split as a shell would."""
    result = run(
        [
            "bash",
            str(ROOT / "scripts" / "deploy"),
            "--project",
            PROJECT,
            "--env-file",
            str(env_file),
            "--dry-run",
        ],
        clean_env(MCP_ADMIN_TOKEN=TOKEN),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return [shlex.split(line[2:]) for line in result.stdout.splitlines() if line.startswith("+ ")]


def test_the_deploy_with_the_documented_allowed_hosts_passes_gclouds_own_parser(
    tmp_path: Path,
) -> None:
    gcloud_cli.gcloud()
    env_file = tmp_path / "deploy.env"
    env_file.write_text(
        "SEARCH_RESULT_LIMIT=5\n"
        f"METACORTEX_ALLOWED_HOSTS={documented_allowed_hosts()}\n"
        "MCP_ALLOWED_ORIGINS=https://claude.ai,https://chatgpt.com\n"
        "METACORTEX_PUBLIC_URL=https://memory.example.com/base\n"
    )
    commands = [argv for argv in dry_run(env_file) if argv[0] == "gcloud"]

    for argv in commands:
        parsed = gcloud_cli.parse(argv, tmp_path / "gcloud", ROOT)
        assert parsed.accepted, parsed.why()
    deploy = next(argv for argv in commands if argv[1:3] == ["functions", "deploy"])
    assert any(arg.startswith("--set-secrets=") for arg in deploy)
    assert len(commands) == 4  # two secret questions, the deploy, the URL


def test_the_env_vars_file_gives_gcloud_exactly_what_settings_reads_from_the_env_file(
    tmp_path: Path,
) -> None:
    """Values that break a ``--set-env-vars`` list or an unquoted YAML scalar: commas,
    colons, ``#``, quotes, backslashes, leading spaces, line breaks, JSON, YAML's
    booleans/numbers/null, non-ASCII and non-printable characters, the empty value."""
    gcloud_cli.gcloud()
    env_file = tmp_path / "deploy.env"
    env_file.write_text(
        "\n".join(
            [
                "# comments and blank lines are not variables",
                "",
                "DEMO_HOSTS=a.example.com,b.example.com",
                "DEMO_URL=https://x.example.com:8443/p?q=1&r=2",
                'DEMO_HASH="value # not a comment"',
                "DEMO_TRAILING=plain # a comment",
                'DEMO_SPACES="  leading and trailing  "',
                "DEMO_SINGLE='it\\'s: \"quoted\"'",
                'DEMO_ESCAPES="line one\\nline two\\ttab \\"q\\" back\\\\slash"',
                'DEMO_JSON=\'[{"id": "claude", "allowedTools": ["a", "b"], "n": 1}]\'',
                "DEMO_YES=yes",
                "DEMO_NULL=null",
                "DEMO_TILDE=~",
                "DEMO_INT=5",
                "DEMO_FLOAT=1e3",
                "DEMO_OCTAL=0o17",
                "DEMO_LIST=- item",
                "DEMO_FLOW={a: b}",
                "DEMO_ANCHOR=&anchor *alias !tag %directive @at `tick`",
                "DEMO_DOCUMENT=---",
                "DEMO_UNICODE=café ✓ 😀 \u2028 \u0085 \x7f",
                "DEMO_EMPTY=",
                "export DEMO_EXPORTED=1",
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    output = tmp_path / "env.yaml"
    written = run(
        [
            PYTHON,
            "scripts/deploy_env.py",
            "--project",
            PROJECT,
            "--region",
            "europe-west1",
            "--env-file",
            str(env_file),
            "--output",
            str(output),
        ],
        clean_env(),
    )
    assert written.returncode == 0, written.stderr

    # python-dotenv is what pydantic-settings (Settings) reads a .env file with.
    expected = dotenv_values(env_file, encoding="utf-8")
    assert len(expected) == 21
    assert gcloud_cli.env_vars_file(output, tmp_path / "gcloud") == {
        "GOOGLE_CLOUD_PROJECT": PROJECT,
        "GOOGLE_CLOUD_LOCATION": "europe-west1",
        **expected,
    }


def test_gcloud_itself_refuses_a_reserved_name_the_preflight_refuses(tmp_path: Path) -> None:
    """The preflight's X_GOOGLE_ rule is gcloud's: its flag type refuses the file."""
    gcloud_cli.gcloud()
    env_yaml = tmp_path / "env.yaml"
    env_yaml.write_text('"X_GOOGLE_DEBUG": "1"\n')
    parsed = gcloud_cli.parse(
        ["gcloud", "functions", "deploy", "f", "--gen2", "--region=us-central1",
         f"--project={PROJECT}", f"--env-vars-file={env_yaml}"],
        tmp_path / "gcloud",
        ROOT,
    )  # fmt: skip
    assert parsed.refused, parsed.why()
    assert "X_GOOGLE_" in parsed.stderr


def test_every_gcloud_command_of_deployment_md_passes_gclouds_own_parser(tmp_path: Path) -> None:
    gcloud_cli.gcloud()
    typed = typed_commands(tmp_path)
    gcloud_commands = [t.argv for t in typed if t.argv[0] == "gcloud"]
    firebase_commands = [t.argv[1] for t in typed if t.argv[0] == "firebase"]

    roles = {arg for argv in gcloud_commands for arg in argv if arg.startswith("--role=")}
    assert "--role=roles/cloudbuild.builds.builder" in roles  # the build's service account
    assert any(argv[1:4] == ["billing", "projects", "link"] for argv in gcloud_commands)
    assert ["gcloud", "auth", "application-default", "login"] in gcloud_commands
    assert "projects:addfirebase" in firebase_commands
    assert len(gcloud_commands) >= 15
    (tmp_path / "profiles.json").write_text("[]")  # the file step 3 has the operator write
    for argv in gcloud_commands:
        if argv[1] == "auth":
            continue  # a sign-in flow, not a parse: it opens a browser
        parsed = gcloud_cli.parse(argv, tmp_path / "gcloud", tmp_path)
        assert parsed.accepted, parsed.why()


def test_the_function_upload_leaves_out_the_venv_caches_and_local_secrets(
    tmp_path: Path,
) -> None:
    """The archive ``gcloud functions deploy --source=functions`` uploads (gcloud's
    ``source_util.CreateSourcesZipFile``), built from a copy of functions/ as an
    operator's checkout has it after the firebase route: a venv, caches, the
    emulator's files and the firebase route's settings."""
    gcloud_cli.gcloud()
    source = tmp_path / "functions"
    shutil.copytree(
        ROOT / "functions",
        source,
        ignore=shutil.ignore_patterns("venv", "__pycache__", "*.egg-info", ".secret.local"),
    )
    for planted in (
        "venv/lib/python3.12/site-packages/x.py",
        "metacortex/__pycache__/a.pyc",
        ".secret.local",
        ".env.local",
        ".env",
        ".mypy_cache/x",
        "metacortex.egg-info/PKG-INFO",
    ):
        (source / planted).parent.mkdir(parents=True, exist_ok=True)
        (source / planted).write_text("MCP_ADMIN_TOKEN=not-for-upload\n")

    uploaded = gcloud_cli.source_upload(source, tmp_path / "gcloud")

    assert {"main.py", "requirements.txt", "metacortex/__init__.py"} <= uploaded
    assert any(name.startswith("metacortex/console/static/") for name in uploaded)
    leaked = {n for n in uploaded if not n.startswith("metacortex/")} - {
        "main.py",
        "requirements.txt",
    }
    assert leaked == set()
    assert not any("__pycache__" in name or name.endswith(".pyc") for name in uploaded)


def test_the_gcloud_route_sizes_the_function_as_main_py_declares_it_for_firebase(
    tmp_path: Path,
) -> None:
    env_file = tmp_path / "deploy.env"
    env_file.write_text("SEARCH_RESULT_LIMIT=5\n")
    deploy = next(argv for argv in dry_run(env_file) if argv[1:3] == ["functions", "deploy"])
    flags = dict(arg.split("=", 1) for arg in deploy if arg.startswith("--") and "=" in arg)
    declared = discover()["endpoints"]["metaCortexMcp"]

    assert flags["--memory"] == f"{declared['availableMemoryMb'] // 1024}Gi"
    assert flags["--cpu"] == str(declared["cpu"])
    assert flags["--concurrency"] == str(declared["concurrency"])
    assert flags["--timeout"] == f"{declared['timeoutSeconds']}s"
    assert flags["--min-instances"] == str(declared["minInstances"])
    assert flags["--max-instances"] == str(declared["maxInstances"])
    assert flags["--region"] == declared["region"][0]
