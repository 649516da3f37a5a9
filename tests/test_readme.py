"""README and the operator page say what the code does (issue 21 §4, README; issue 41
§1: the tables moved to ``docs/OPERATING.md``): the configuration table names every
setting ``Settings`` reads, with the defaults it has; README's tool table names real
arguments (``save_context`` takes ``content``); and the way README gives to put
``metacortex`` on the PATH works in a fresh shell (the counterpart: bash).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from pydantic import AliasChoices, SecretStr

from metacortex.access.profiles import load_profiles
from metacortex.cli.surface import surface
from metacortex.config import Settings
from tests.server.conftest import ADMIN_TOKEN

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
OPERATING = (ROOT / "docs" / "OPERATING.md").read_text(encoding="utf-8")


def _section(title: str, page: str = README) -> str:
    start = page.index(f"\n## {title}\n")
    end = page.find("\n## ", start + 1)
    return page[start : end if end != -1 else None]


def _table_rows(section: str) -> list[list[str]]:
    rows = []
    for line in section.splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows[1:]  # without the header


def _environment_names() -> dict[str, str]:
    """Every variable Settings reads, to its field (internal fields left out)."""
    names: dict[str, str] = {}
    for field_name, info in Settings.model_fields.items():
        if info.exclude:
            continue  # set by the composition roots, never from the environment
        alias = info.validation_alias
        choices = alias.choices if isinstance(alias, AliasChoices) else [field_name]
        for choice in choices:
            names[str(choice).upper()] = field_name
    return names


def _documented() -> dict[str, list[str]]:
    """Variable -> the row's cells, from the operator page's configuration table."""
    found: dict[str, list[str]] = {}
    for row in _table_rows(_section("Configuration", OPERATING)):
        for name in re.findall(r"`([A-Z][A-Z0-9_]+)`", row[0]):
            found[name] = row
    return found


def test_the_configuration_table_names_every_setting_and_only_real_ones() -> None:
    real, documented = _environment_names(), _documented()
    assert sorted(set(real) - set(documented)) == []
    assert sorted(set(documented) - set(real)) == []


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if hasattr(value, "value"):  # an enum
        return str(value.value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # 10.0 seconds reads as 10
    return str(value)


def test_the_configuration_table_gives_the_defaults_settings_has() -> None:
    """Rows of one variable whose default is one literal; the others say in words."""
    defaults = Settings(_env_file=None)  # type: ignore[call-arg]
    names = _environment_names()
    checked = 0
    for name, row in _documented().items():
        literals = re.findall(r"`([^`]+)`", row[1])
        if len(re.findall(r"`[A-Z][A-Z0-9_]+`", row[0])) != 1 or len(literals) != 1:
            continue
        value = getattr(defaults, names[name])
        if value is None or isinstance(value, tuple | Path):
            continue
        assert literals[0] == _shown(value), (
            f"{name}: the table says {literals[0]}, Settings {value}"
        )
        checked += 1
    assert checked >= 30


def test_the_admin_rate_limit_the_readme_gives_is_the_one_served() -> None:
    admin = load_profiles(_admin_settings()).admin
    row = _documented()["METACORTEX_ADMIN_RATE_LIMIT_PER_MINUTE"]
    assert row[1] == f"`{admin.rate_limit_per_minute}`"


def test_the_tool_table_names_real_arguments_and_save_context_takes_content() -> None:
    tools = {
        tool["name"]: tool for tool in surface(load_profiles(_admin_settings()).admin)["tools"]
    }
    rows = {
        row[0].strip("`"): row
        for row in _table_rows(_section("What it does"))
        if row[0].startswith("`")
    }
    for name, tool in tools.items():
        if name not in rows:
            continue
        named = set(re.findall(r"`([a-z_]+)`", rows[name][2]))
        arguments = set(tool["inputSchema"]["properties"])
        assert set(tool["inputSchema"].get("required", [])) <= named, name
        assert (
            not {word for word in named if "_" in word or word in arguments}
            - arguments
            - {
                "write_status",
                "retrieval_query_events",
            }
        ), name
    assert "`content`" in rows["save_context"][2]


def _admin_settings() -> Settings:
    return Settings(_env_file=None, mcp_admin_token=SecretStr(ADMIN_TOKEN))  # type: ignore[call-arg]


@pytest.mark.skipif(shutil.which("bash") is None, reason="BASH NOT AVAILABLE")
def test_the_readme_way_to_put_metacortex_on_the_path_works_in_a_fresh_shell() -> None:
    [line] = [
        text for text in README.splitlines() if text.startswith('export PATH="$PWD/.venv/bin')
    ]
    command = line.split("#")[0].strip()
    path = ":".join(part for part in os.environ.get("PATH", "").split(":") if ".venv" not in part)
    bash = shutil.which("bash")
    assert bash is not None
    done = subprocess.run(  # noqa: S603 (bash, with README's own line)
        [bash, "--noprofile", "--norc", "-c", f"{command} && command -v metacortex"],
        cwd=ROOT,
        env={"PATH": path, "HOME": os.environ.get("HOME", "/")},
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(done.stdout.strip()) == ROOT / ".venv" / "bin" / "metacortex"


def test_the_readme_links_the_operator_page_it_moved_its_tables_to() -> None:
    assert "`docs/OPERATING.md`" in _section("The first hour")
    assert "\n## Configuration\n" not in README
    assert "\n## Operator commands\n" in OPERATING
