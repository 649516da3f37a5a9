"""docs/SPACES.md's "Set up a team of three from nothing" works as written: its
commands, run one by one as fresh processes on a new data directory, succeed, and
``person list`` then prints exactly what the page shows. The commands of its
"Later changes" table that name no placeholder succeed too, in order."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from tests.owner_commands import Operator

ROOT = Path(__file__).resolve().parent.parent
TITLE = "Set up a team of three from nothing"


def _section() -> str:
    text = (ROOT / "docs" / "SPACES.md").read_text(encoding="utf-8")
    start = text.index(f"\n## {TITLE}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def _blocks(section: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", section, re.S)


def _words(line: str) -> list[str]:
    words = shlex.split(line)
    assert words[0] == "metacortex", line
    return words[1:]


def test_the_walkthrough_runs_as_written_and_person_list_prints_what_the_page_shows(
    tmp_path: Path,
) -> None:
    section = _section()
    *setup, check = [line for block in _blocks(section, "sh") for line in block.splitlines()]
    [shown] = _blocks(section, "text")
    operator = Operator(tmp_path)

    for line in setup:
        ran = operator.run(*_words(line))
        assert ran.returncode == 0, (line, ran.stderr)
    listed = operator.run(*_words(check))

    assert listed.returncode == 0, listed.stderr
    assert listed.stdout == shown

    table = [row for row in section.split("Later changes:")[1].splitlines() if row[:1] == "|"]
    later = [
        command
        for row in table
        for command in re.findall(r"`(metacortex [^`]+)`", row)
        if not re.search(r"\b[A-Z]{2,}\b", command)  # KEY, ID, T: placeholders
    ]
    assert len(later) == 5, later
    for line in later:
        ran = operator.run(*_words(line))
        assert ran.returncode == 0, (line, ran.stderr)
