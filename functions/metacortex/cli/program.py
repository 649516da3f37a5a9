"""How the operator runs ``metacortex`` from where they are, for commands we print.

A fresh clone has the command only at ``.venv/bin/metacortex`` (``scripts/bootstrap``
puts it there, not on ``PATH``), so a printed ``metacortex owner set-passphrase``
would be "command not found". This names the install that is running: the bare
name when ``PATH`` finds that very script, else its path (relative to the current
directory when it is below it). ``spelled`` adds the words and the data directory
a printed command needs to find the same store.
"""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path
from typing import Final

NAME: Final = "metacortex"


def program() -> str:
    script = Path(sys.executable).parent / NAME  # the venv's bin, not the resolved python
    if not script.is_file():
        return NAME
    found = shutil.which(NAME)
    if found is not None and Path(found).resolve() == script.resolve():
        return NAME
    try:
        return str(script.absolute().relative_to(Path.cwd()))
    except ValueError:
        return str(script.absolute())


def spelled(words: str, data_dir: Path | None = None) -> str:
    """``words`` as a command line to run from here: ``metacortex owner set-passphrase
    --data-dir /srv/mc`` (with ``data_dir``, shell-quoted)."""
    command = f"{program()} {words}"
    return command if data_dir is None else f"{command} --data-dir {shlex.quote(str(data_dir))}"
