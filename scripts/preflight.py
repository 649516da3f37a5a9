"""Deploy preflight: check the configuration that is about to be deployed.

    .venv/bin/python scripts/preflight.py [--env-file deploy.env] [--region R] [--offline]

Reads the same settings the function will read (cloud defaults: Firestore +
Gemini) from the environment or --env-file, and checks, before anything is
deployed: settings parse; the env file holds only what gcloud and Cloud Run
accept (scripts/deploy_env.py: no secrets, reserved names, unparsable lines...;
names that are not settings are noted); the admin token is set and strong; every
client profile is valid; Gemini has credentials (API key, or a project for
Vertex AI); the Firestore project is set; firestore.indexes.json matches the
code's query shapes and its vector dimension equals GEMINI_EMBEDDING_DIMENSIONS;
and (unless --offline) the Secret Manager secrets scripts/deploy references exist.

Secrets need not be in the environment: unless --offline, a secret variable that
is unset is read from its Secret Manager secret (never printed), so the values
the function will really get are the ones validated.
Each failure says what to do. Exit status 1 when anything failed.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "functions"))
sys.path.insert(0, str(ROOT / "scripts"))

from pydantic import ValidationError  # noqa: E402

from deploy_env import EnvFile, refusals  # noqa: E402
from gen_firestore_indexes import INDEX_FILE, render  # noqa: E402
from metacortex.access.profiles import load_profiles  # noqa: E402
from metacortex.config import Settings  # noqa: E402
from metacortex.errors import ConfigurationError  # noqa: E402
from metacortex.providers.summary import models_summary  # noqa: E402

# Secret Manager secret names scripts/deploy binds to environment variables.
SECRETS = {"MCP_ADMIN_TOKEN": "metacortex-admin-token"}
OPTIONAL_SECRETS = {
    "MCP_CLIENT_PROFILES_JSON": "metacortex-client-profiles",
    "GEMINI_API_KEY": "metacortex-gemini-api-key",
}
# Read by the Google libraries the function uses rather than by Settings.
LIBRARY_VARIABLES = frozenset({"GOOGLE_GEMINI_BASE_URL", "GOOGLE_GENAI_USE_VERTEXAI"})


class Preflight:
    def __init__(self) -> None:
        self.failures = 0

    def check(self, name: str, test: Callable[[], str | None]) -> None:
        try:
            problem = test()
        except (ConfigurationError, ValueError, OSError) as error:
            problem = str(error)
        if problem is None:
            print(f"ok    {name}")
        else:
            self.failures += 1
            print(f"FAIL  {name}: {problem}")


def _index_dimensions() -> set[int]:
    data = json.loads(INDEX_FILE.read_text(encoding="utf-8"))
    return {
        field["vectorConfig"]["dimension"]
        for index in data.get("indexes", [])
        for field in index["fields"]
        if "vectorConfig" in field
    }


def _secret_exists(project: str, secret: str) -> bool:
    gcloud = shutil.which("gcloud")
    if gcloud is None:
        raise OSError("gcloud not found; install the Google Cloud SDK or pass --offline")
    result = subprocess.run(  # noqa: S603 - fixed argv
        [gcloud, "secrets", "describe", secret, f"--project={project}", "--format=value(name)"],
        capture_output=True,
        text=True,
        check=False,
    )
    return result.returncode == 0


def _secret_value(project: str, secret: str) -> str | None:
    """The latest version of a Secret Manager secret, or None when it cannot be read."""
    gcloud = shutil.which("gcloud")
    if gcloud is None:
        return None
    result = subprocess.run(  # noqa: S603 - fixed argv
        [
            gcloud,
            "secrets",
            "versions",
            "access",
            "latest",
            f"--secret={secret}",
            f"--project={project}",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    return result.stdout if result.returncode == 0 and result.stdout else None


def with_deployed_secrets(settings: Settings) -> Settings:
    """Fill unset secret settings from Secret Manager, as the deployed function gets them."""
    project = settings.google_cloud_project
    if not project:
        return settings
    updates: dict[str, str] = {}
    for variable, secret in {**SECRETS, **OPTIONAL_SECRETS}.items():
        field = variable.lower()
        if getattr(settings, field) is None:
            value = _secret_value(project, secret)
            if value is not None:
                updates[field] = value
    if not updates:
        return settings
    print(f"      read from Secret Manager: {', '.join(sorted(updates))}")
    return Settings(  # re-validated, exactly as the function will parse them
        _env_file=None,  # type: ignore[call-arg]
        **{**settings.model_dump(exclude_unset=True), **updates},
    )


def _secret_check(project: str, variable: str, secret: str) -> Callable[[], str | None]:
    def check() -> str | None:
        if _secret_exists(project, secret):
            return None
        return f'create it: printf %s "${variable}" | gcloud secrets create {secret} --data-file=-'

    return check


class Checks:
    """Each check of the configuration about to be deployed: None when it passes, else
    what to do."""

    def __init__(self, settings: Settings, env_file: Path | None, region: str) -> None:
        self.settings = settings
        self.env_file = env_file
        self.region = region

    def deployable_env_file(self) -> str | None:
        if self.env_file is None:
            return None
        loaded = EnvFile(self.env_file)
        problems = refusals(loaded, self.settings.google_cloud_project or "", self.region)
        if problems:
            return "; ".join(problems)
        known = Settings.environment_names() | LIBRARY_VARIABLES
        for name in loaded.values:
            if name.upper() not in known:
                print(
                    f"      note: {name} is not a MetaCortex setting (docs/OPERATING.md's "
                    "configuration table); it is deployed as it is"
                )
        return None

    def admin_token(self) -> str | None:
        if self.settings.mcp_admin_token is None:
            return (
                "MCP_ADMIN_TOKEN is not set; generate one with "
                "python -c 'import secrets; print(secrets.token_urlsafe(32))'"
            )
        return None

    def profiles(self) -> str | None:
        loaded = load_profiles(self.settings)  # raises naming the entry and field
        print(f"      profiles: default + {len(loaded.clients)} client(s)")
        return None

    def project(self) -> str | None:
        if not self.settings.google_cloud_project:
            return "set GOOGLE_CLOUD_PROJECT to the Firestore project id"
        return None

    def gemini(self) -> str | None:
        settings = self.settings
        if settings.embeddings_kind != "gemini" and not settings.uses_gemini_generation:
            return None
        if settings.gemini_api_key is None and not settings.google_cloud_project:
            return "set GEMINI_API_KEY, or GOOGLE_CLOUD_PROJECT to use Vertex AI"
        return None

    def gemini_only(self) -> str | None:
        if self.settings.uses_openai:
            return (
                "the function embeds and generates with Gemini: unset METACORTEX_GENERATION "
                "and METACORTEX_EMBEDDINGS (OpenAI-compatible providers are for "
                "`metacortex serve`, docs/openai.md)"
            )
        return None

    def models(self) -> str | None:
        for line in models_summary(self.settings, ocr_installed=False):
            print(f"      {line}")
        return None

    def indexes_match(self) -> str | None:
        if not INDEX_FILE.exists() or INDEX_FILE.read_text(encoding="utf-8") != render(
            self.settings
        ):
            return (
                f"{INDEX_FILE.name} does not match the code for this configuration; run "
                ".venv/bin/python scripts/gen_firestore_indexes.py and commit it"
            )
        return None

    def dimension(self) -> str | None:
        found = _index_dimensions()
        if found != {self.settings.gemini_embedding_dimensions}:
            return (
                f"vector indexes have dimension {sorted(found)} but GEMINI_EMBEDDING_DIMENSIONS "
                f"is {self.settings.gemini_embedding_dimensions}"
            )
        return None

    def hosts(self) -> str | None:
        if not self.settings.metacortex_allowed_hosts:
            print(
                "      note: METACORTEX_ALLOWED_HOSTS is empty, so the Host-header check is off "
                "in the cloud; set it to the function's hostnames once you know them"
            )
        return None


def run(
    settings: Settings, offline: bool, env_file: Path | None = None, region: str = "us-central1"
) -> int:
    flight = Preflight()
    checks = Checks(settings, env_file, region)
    flight.check("settings parse (cloud defaults)", lambda: None)
    if env_file is not None:
        flight.check(
            f"{env_file.name}: what gcloud and Cloud Run accept", checks.deployable_env_file
        )
    flight.check("admin token", checks.admin_token)
    flight.check("client profiles", checks.profiles)
    flight.check("Firestore project", checks.project)
    flight.check("Gemini credentials", checks.gemini)
    flight.check("models are Gemini's", checks.gemini_only)
    # What each save will cost: fact extraction is on wherever a chat model is.
    flight.check("models and fact extraction", checks.models)
    flight.check("firestore.indexes.json matches the code", checks.indexes_match)
    flight.check("index dimension = GEMINI_EMBEDDING_DIMENSIONS", checks.dimension)
    flight.check("allowed hosts", checks.hosts)
    if not offline and settings.google_cloud_project:
        project_id = settings.google_cloud_project
        for variable, secret in SECRETS.items():
            flight.check(
                f"secret {secret} ({variable})", _secret_check(project_id, variable, secret)
            )
    if flight.failures:
        print(f"\npreflight FAILED: {flight.failures} problem(s); nothing was deployed")
        return 1
    print("\npreflight passed")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--env-file", type=Path, help="read settings from this file too")
    parser.add_argument("--offline", action="store_true", help="skip the Secret Manager checks")
    parser.add_argument(
        "--region", default="us-central1", help="the function's region (GOOGLE_CLOUD_LOCATION)"
    )
    args = parser.parse_args()
    try:
        settings = Settings(_env_file=args.env_file, deployment="cloud")  # type: ignore[call-arg]
    except ValidationError as error:
        for detail in error.errors(include_url=False):
            name = "_".join(str(part) for part in detail["loc"]).upper()
            print(f"FAIL  {name}: {detail['msg']}")
        return 1
    if not args.offline:
        try:
            settings = with_deployed_secrets(settings)
        except ValidationError as error:
            for detail in error.errors(include_url=False):
                name = "_".join(str(part) for part in detail["loc"]).upper()
                print(f"FAIL  {name} (from Secret Manager): {detail['msg']}")
            return 1
    return run(settings, args.offline, args.env_file, args.region)


if __name__ == "__main__":
    raise SystemExit(main())
