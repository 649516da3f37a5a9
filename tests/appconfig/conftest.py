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
