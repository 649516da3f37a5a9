"""Plan and write one change to an application's configuration file.

``plan_entry`` reads the file (a missing file is an empty one), refuses one its
application's format does not allow (``Malformed``: it is left untouched), and
computes the text with the MetaCortex entry set: added once, replaced in place
on a re-run, never a second one. ``Plan.diff`` is what ``metacortex init`` shows
without ``--yes``; ``write`` applies it atomically (a temporary file in the same
directory, then a rename; the file's mode is kept, a new one is 0600), after
copying the current file to ``<name>.bak``. A file that changed since it was
read is not overwritten. A symbolic link (a dotfiles repository) is followed:
the file it points to is written, the link stays.
"""

from __future__ import annotations

import difflib
import os
import shutil
import stat
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import tomlkit
from tomlkit.exceptions import TOMLKitError

from metacortex.appconfig import jsonfile
from metacortex.appconfig.errors import Malformed
from metacortex.appconfig.targets import Format
from metacortex.errors import Conflict, FailedPrecondition

NEW_FILE_MODE: Final = 0o600


@dataclass(frozen=True, slots=True)
class Plan:
    path: Path  # the file as named (a link stays a link)
    before: str | None  # None: there is no file yet
    after: str
    previous_entry: Any  # the entry that was there under the name, or None

    @property
    def changed(self) -> bool:
        return self.before != self.after

    @property
    def backup(self) -> Path:
        real = self.path.resolve()
        return real.with_name(real.name + ".bak")

    def diff(self) -> str:
        lines = difflib.unified_diff(
            (self.before or "").splitlines(keepends=True),
            self.after.splitlines(keepends=True),
            fromfile=f"{self.path} (now)" if self.before is not None else "/dev/null",
            tofile=f"{self.path} (after)",
        )
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


# An element of an array that goes with the entry: (the array's path, its key, the element).
Item = tuple[tuple[str, ...], str, dict[str, Any]]


def plan_entry(
    path: Path,
    format: Format,
    container: tuple[str, ...],
    name: str,
    entry: Any,
    items: Sequence[Item] = (),
) -> Plan:
    """The change that sets ``container.name`` to ``entry`` in the file at ``path`` (and
    puts each of ``items`` in its array: VS Code's token prompt)."""
    before = _read(path)
    text = before or ""
    where = str(path)
    member = (*container, name)
    if format == "toml":
        after, previous = _toml_set(text, member, entry, where)
    else:
        data = jsonfile.load(text, comments=format == "jsonc", where=where) if text.strip() else {}
        problem = jsonfile.container_problem(data, container, where)
        if problem is not None:
            raise Malformed(problem)
        previous = jsonfile.get_member(data, member)
        after = text if previous == entry else jsonfile.set_member(text, member, entry, where=where)
        for array, key, item in items:
            after = jsonfile.upsert_item(after, array, key, item, where=where)
    return Plan(path, before, after, previous)


def read_entry(path: Path, format: Format, container: tuple[str, ...], name: str) -> Any:
    """The entry under ``container.name`` in the file now, or None (no file, no entry);
    Malformed, as ``plan_entry`` would, for a file its format does not allow."""
    text = _read(path) or ""
    where = str(path)
    if format == "toml":
        try:
            node: Any = tomlkit.parse(text).unwrap()
        except TOMLKitError as error:
            raise Malformed(f"{where} is not valid TOML ({error})") from None
        for depth, key in enumerate(container):
            node = node.get(key) if isinstance(node, dict) else None
            if node is None:
                return None
            if not isinstance(node, dict):
                raise Malformed(f"{where}: {'.'.join(container[: depth + 1])} is not a table")
        return node.get(name)
    data = jsonfile.load(text, comments=format == "jsonc", where=where) if text.strip() else {}
    problem = jsonfile.container_problem(data, container, where)
    if problem is not None:
        raise Malformed(problem)
    return jsonfile.get_member(data, (*container, name))


def write(plan: Plan) -> Path | None:
    """Apply the plan; the backup's path, or None when there was no file before.
    FailedPrecondition when the file system refuses (the file is then as it was)."""
    real = plan.path.resolve()
    if _read(real) != plan.before:
        raise Conflict(f"{plan.path} changed while this ran; run the command again")
    try:
        return _replace(plan, real)
    except OSError as error:
        raise FailedPrecondition(
            f"{plan.path} could not be written ({error.strerror or error}); it is as it was"
        ) from None


def _replace(plan: Plan, real: Path) -> Path | None:
    real.parent.mkdir(parents=True, exist_ok=True)
    backup: Path | None = None
    if plan.before is not None:
        mode = stat.S_IMODE(real.stat().st_mode)
        backup = plan.backup
        shutil.copy2(real, backup)
    else:
        mode = NEW_FILE_MODE
    descriptor, temporary = tempfile.mkstemp(
        dir=real.parent, prefix=f".{real.name}.", suffix=".tmp"
    )
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8", newline="") as handle:
            handle.write(plan.after)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, real)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return backup


def _read(path: Path) -> str | None:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        return raw.decode("utf-8-sig" if raw.startswith(b"\xef\xbb\xbf") else "utf-8")
    except UnicodeDecodeError:
        raise Malformed(f"{path} is not UTF-8 text") from None


def _toml_set(text: str, member: tuple[str, ...], entry: Any, where: str) -> tuple[str, Any]:
    try:
        document = tomlkit.parse(text)
    except TOMLKitError as error:
        raise Malformed(f"{where} is not valid TOML ({error})") from None
    table: Any = document
    for depth, key in enumerate(member[:-1]):
        if key not in table:
            table[key] = tomlkit.table(is_super_table=True)
        table = table[key]
        if not isinstance(table, dict):
            raise Malformed(f"{where}: {'.'.join(member[: depth + 1])} is not a table")
    name = member[-1]
    previous = table[name].unwrap() if name in table and hasattr(table[name], "unwrap") else None
    if name in table and previous is None:
        previous = table[name]
    if previous == entry:
        return text, previous
    new = tomlkit.table()
    for key, value in entry.items():
        new[key] = value
    new.add(tomlkit.nl())  # a blank line before whatever table follows
    table[name] = new
    return tomlkit.dumps(document).rstrip("\n") + "\n", previous
