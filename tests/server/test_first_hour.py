"""README's first hour, run as written (issue 41 §1: "a scripted first hour from a fresh
clone reaches each step through the README alone, with no command failing").

Counterparts: the real ``metacortex serve`` in its own process from a fresh clone (its
own ``HOME``, so the default data directory; the venv's bin not on ``PATH``); every
line of README's first-hour shell block run by bash in order, the ``export`` lines
kept for the lines after them as a terminal keeps them; the ``export`` line ``client
add`` prints pasted as README says; ``first.py`` saved from README's Python block and
run by the venv's interpreter (the official ``mcp`` 2.x client); curl. The one change
from README: the port, since ``make serve``'s 8765 may be taken on a test machine.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.commands import COMMAND, VENV_BIN, fresh_clone, run_command

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
README_PORT = "127.0.0.1:8765"
PASSPHRASE = "first hour owner passphrase"


def _first_hour() -> str:
    start = README.index("\n## The first hour\n")
    return README[start : README.index("\n## ", start + 1)]


def _block(language: str) -> str:
    found = re.search(rf"```{language}\n(.*?)```", _first_hour(), re.DOTALL)
    assert found is not None, f"README's first hour has no {language} block"
    return found.group(1)


@dataclass
class Shell:
    """A terminal's state between lines: where it runs and what it exported."""

    cwd: Path
    env: dict[str, str]
    port: str
    exports: list[str] = field(default_factory=list)

    def run(self, line: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        line = line.replace(README_PORT, f"127.0.0.1:{self.port}")
        script = "\n".join([*self.exports, line])
        bash = shutil.which("bash")
        assert bash is not None
        done = run_command(
            [bash, "--noprofile", "--norc", "-c", script], env=self.env, cwd=self.cwd, stdin=stdin
        )
        assert done.returncode == 0, f"{line}\n{done.stdout}\n{done.stderr}"
        if line.startswith("export "):
            self.exports.append(line)
        return done


@pytest.fixture(scope="module")
def shell(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shell]:
    if shutil.which("bash") is None or shutil.which("curl") is None:
        pytest.skip("BASH OR CURL NOT AVAILABLE: README's lines cannot run as written")
    root, env = fresh_clone(tmp_path_factory, "first-hour")
    (root / ".venv").symlink_to(VENV_BIN.parent)  # a clone's venv, where `make serve` made it
    # What `make serve` runs once its venv exists, on a free port.
    process = subprocess.Popen(  # noqa: S603 (our own interpreter and arguments)
        [*COMMAND, "serve", "--port", "0"],
        cwd=root,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        banner = ""
        for line in process.stdout:
            banner += line
            if " client snippets" in line:
                break
        ready = re.search(r"is ready at http://127\.0\.0\.1:(\d+)", banner)
        assert ready is not None, banner
        yield Shell(root, env, ready.group(1))
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=60)
        if process.stdout is not None:
            process.stdout.close()


def test_every_line_of_the_readme_first_hour_runs_as_written(shell: Shell) -> None:
    notes = Path(shell.env["HOME"]) / "notes"
    notes.mkdir()
    (notes / "deploys.md").write_text("# Deploys\n\nThe release train leaves on Mondays.\n")
    (notes / "team.html").write_text("<h1>Team</h1><p>Ann reads the release notes.</p>")
    (shell.cwd / "first.py").write_text(
        _block("python").replace(README_PORT, f"127.0.0.1:{shell.port}")
    )
    said: list[tuple[str, str]] = []
    for line in _block("sh").splitlines():
        command = line.split("  #")[0].strip()
        if not command:
            continue
        done = shell.run(command, stdin=PASSPHRASE + "\n" if "set-passphrase" in command else None)
        said.append((command, done.stdout + done.stderr))
        if command.startswith("metacortex client add"):
            # README: "paste the export line it prints".
            [pasted] = [text.strip() for text in done.stdout.splitlines() if "export " in text]
            shell.exports.append(pasted)

    def output(start: str) -> str:
        [text] = [text for command, text in said if command.startswith(start)]
        return text

    assert "sign in at" in output("metacortex owner set-passphrase")
    searched = json.loads(output("python first.py"))
    found = {match["summary"]: match for match in searched["matches"]}
    newer = found["Staging deploys on Thursdays now."]
    links = [(link["type"], link["direction"]) for link in newer["related"]]
    assert links == [("updates", "outgoing")]
    assert searched["applied_filters"]["space"] == "work"  # the client's one space
    called = json.loads(output("curl "))
    assert called["result"]["content"], called
    assert not called["result"].get("isError"), called
    assert "/owner/invite/" in output("metacortex person invite")
    assert "2 added" in output("metacortex ingest")
