"""Which token ``metacortex smoke`` sends (issue 21 §4: "one name, and smoke works with
no variable on a local server"): run against a live server over real loopback HTTP
with the official MCP client, as an operator runs it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from metacortex.cli.main import main
from tests.server.conftest import ADMIN_TOKEN, LiveServer

pytestmark = pytest.mark.slow

_TOKEN_VARIABLES = ("MCP_ADMIN_TOKEN", "MCP_SMOKE_TOKEN", "METACORTEX_TOKEN", "METACORTEX_DATA_DIR")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)  # no stray .env
    for name in list(os.environ):
        if name.startswith("MCP_SMOKE_") or name in _TOKEN_VARIABLES:
            monkeypatch.delenv(name)


def test_smoke_reads_the_admin_token_from_the_data_directory_of_a_local_server(
    live: LiveServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "admin-token").write_text(ADMIN_TOKEN + "\n")
    (data / "admin-token").chmod(0o600)

    assert main(["smoke", "--url", f"{live.url}/mcp", "--data-dir", str(data)]) == 0
    assert ADMIN_TOKEN not in capsys.readouterr().err


def test_smoke_still_reads_the_token_under_the_name_earlier_banners_exported(
    live: LiveServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("METACORTEX_TOKEN", ADMIN_TOKEN)
    empty = tmp_path / "no-token-here"
    assert main(["smoke", "--url", f"{live.url}/mcp", "--data-dir", str(empty)]) == 0


def test_smoke_never_sends_this_machines_admin_token_to_another_host(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "admin-token").write_text(ADMIN_TOKEN + "\n")
    url = "https://memory.example.invalid/mcp"

    assert main(["smoke", "--url", url, "--data-dir", str(data)]) == 2
    err = capsys.readouterr().err
    assert f"no token for {url}: set MCP_ADMIN_TOKEN" in err
    assert "only for a local endpoint" in err
