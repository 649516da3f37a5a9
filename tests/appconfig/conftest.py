"""What every ``metacortex init`` test starts from: an empty directory, with none of
MetaCortex's (or the operator's) settings in the environment."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Final

import pytest

from tests.appconfig.support import READER

ENV_PREFIXES: Final = ("MCP_", "METACORTEX_", "GEMINI_", "SEARCH_", "DEFAULT_FILTER", "RETRIEVAL_")


@pytest.fixture
def place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A clean environment in an empty directory (the current one)."""
    for name in list(os.environ):
        if name.startswith(ENV_PREFIXES):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def place_with_reader(place: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The clean directory with one environment-defined client, ``reader``; the data
    directory is ``data`` there."""
    monkeypatch.setenv("MCP_CLIENT_PROFILES_JSON", json.dumps([READER]))
    return place


@pytest.fixture
def home(place: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's home (HOME, none of the applications' own variables), ``home`` in the
    clean directory: where the user's files are looked for."""
    home = place / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("CODEX_HOME", "XDG_CONFIG_HOME", "APPDATA"):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture
def project(place: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project directory (a cloned repository), the current directory: its project
    files are the ones found and, for some applications, the default."""
    project = place / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    return project
