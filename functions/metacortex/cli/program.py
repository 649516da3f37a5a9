"""How the operator runs ``metacortex`` from where they are, for commands we print.

A fresh clone has the command only at ``.venv/bin/metacortex`` (``scripts/bootstrap``
puts it there, not on ``PATH``), so a printed ``metacortex owner set-passphrase``
would be "command not found". This names the install that is running: the bare
name when ``PATH`` finds that very script, else its path (relative to the current
directory when it is below it). ``spelled`` adds the words and the data directory
a printed command needs to find the same store; ``spelled_in`` does it to the
commands an error message names (``cli.main`` prints domain errors through it).
"""

from __future__ import annotations

import re
import shlex
import shutil
import sys
from pathlib import Path
from typing import Final

NAME: Final = "metacortex"
_NAMED: Final = re.compile(r"`metacortex ([^`]+)`")


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


def spelled_in(message: str, data_dir: Path | None = None) -> str:
    """``message`` with every command it names in backquotes (`` `metacortex person grant
    ann@example.com work` ``, as domain errors name them) spelled as it runs from here,
    with ``data_dir`` when the failed command was given one."""
    return _NAMED.sub(lambda found: f"`{spelled(found.group(1), data_dir)}`", message)
