"""The commands of docs/DEPLOYMENT.md, as the operator's shell runs them.

Every ```sh block of the page, in order, runs in one ``bash`` (so variables set
in step 1 reach step 4, loops and ``$(...)`` expand, quoting is bash's own) with
nothing on ``PATH``: ``gcloud``, ``firebase`` and ``metacortex`` (also as
``.venv/bin/metacortex``) are shell functions that record their arguments and
the settings in their environment, and every other command is a no-op. So
nothing runs and nothing reaches the network; what comes out is exactly the
argument vectors the page makes the operator type.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parents[2]
PAGE: Final = ROOT / "docs" / "DEPLOYMENT.md"
RECORDED_SETTINGS: Final = (
    "METACORTEX_STORE",
    "GOOGLE_CLOUD_PROJECT",
    "FIRESTORE_DATABASE",
    "MEMORY_COLLECTION",
)
_FIELD: Final = "\x1f"
_RECORD: Final = "\x1e"

_PREAMBLE: Final = f"""
PATH=/nonexistent
command_not_found_handle() {{ return 0; }}
record() {{
  {{ printf '%s\\0' "$@"; printf '{_FIELD}'
     printf '%s\\0' {" ".join(f'"{name}=${{{name}-}}"' for name in RECORDED_SETTINGS)}
     printf '{_RECORD}'; }} >> "$RECORD_FILE"
}}
gcloud() {{ record gcloud "$@"; echo 123456789012; }}
firebase() {{ record firebase "$@"; }}
metacortex() {{ record metacortex "$@"; }}
function .venv/bin/metacortex {{ record metacortex "$@"; }}
PROJECT=my-memory-project REGION=us-central1
"""


@dataclass(frozen=True)
class Typed:
    """One command the page makes the operator type: its argv and the settings it saw."""

    argv: list[str]
    settings: dict[str, str]


def shell_blocks(text: str) -> list[str]:
    return re.findall(r"^```sh\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)


def typed_commands(tmp_path: Path, page: Path = PAGE) -> list[Typed]:
    """Every gcloud, firebase and metacortex command of ``page``'s shell blocks."""
    record_file = tmp_path / "typed.records"
    record_file.write_bytes(b"")
    script = _PREAMBLE + "\n".join(shell_blocks(page.read_text(encoding="utf-8")))
    workdir = tmp_path / "operator"
    workdir.mkdir(exist_ok=True)
    done = subprocess.run(  # noqa: S603 - bash with no PATH: only our recorders run
        ["/bin/bash", "-c", script],
        cwd=workdir,
        env={"RECORD_FILE": str(record_file), "HOME": str(workdir), "LC_ALL": "C.UTF-8"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "syntax error" not in done.stderr, done.stderr
    typed = []
    for record in record_file.read_text(encoding="utf-8").split(_RECORD)[:-1]:
        argv_part, settings_part = record.split(_FIELD)
        settings = dict(
            item.split("=", 1) for item in settings_part.split("\0")[:-1] if not item.endswith("=")
        )
        typed.append(Typed(argv_part.split("\0")[:-1], settings))
    return typed
