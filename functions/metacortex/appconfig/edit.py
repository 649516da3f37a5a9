"""Plan and write one change to an application's configuration file.

``plan_entry`` reads the file (a missing file is an empty one), refuses one its
application's format does not allow (``Malformed``) or one init does not write
(``Refused``: a link, a directory, a read-only file; ``appconfig.files``), and
computes the text with the MetaCortex entry set: added once, replaced in place on
a re-run, never a second one. The file's byte-order mark and line endings are kept
(``appconfig.textfile``). ``Plan.diff`` is what ``metacortex init`` shows without
``--yes``; ``write`` applies it atomically (a temporary file in the same directory,
then a rename; the file's mode is kept, a new one is 0600), after keeping the
current bytes as ``<name>.bak``. A file that changed since it was read is not
overwritten. A symbolic link is refused unless the caller follows links
(``--follow-symlink``, a dotfiles repository): then the file it points to is
written and the link stays.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import tomlkit
from tomlkit.exceptions import TOMLKitError

from metacortex.appconfig import files, jsonfile
from metacortex.appconfig.errors import Malformed
from metacortex.appconfig.targets import Format
from metacortex.appconfig.textfile import Text, decode
from metacortex.errors import Conflict, FailedPrecondition

NEW_FILE_MODE: Final = 0o600
PRIVATE_BITS: Final = 0o077  # group and others: cleared on a file that holds a token


@dataclass(frozen=True, slots=True)
class Plan:
    path: Path  # the file as named
    real: Path  # the file written: ``path``, or what its links lead to (--follow-symlink)
    found: files.Found | None  # None: there is no file yet
    before: str | None  # its text as written (no byte-order mark)
    after: str
    after_bytes: bytes
    previous_entry: Any  # the entry that was there under the name, or None

    @property
    def changed(self) -> bool:
        return self.before != self.after

    @property
    def backup(self) -> Path:
        """Where the current file would be kept now."""
        return files.next_backup(self.real)

    def diff(self) -> str:
        lines = difflib.unified_diff(
            (self.before or "").replace("\r\n", "\n").splitlines(keepends=True),
            self.after.replace("\r\n", "\n").splitlines(keepends=True),
            fromfile=f"{self.path} (now)" if self.before is not None else "/dev/null",
            tofile=f"{self.path} (after)",
        )
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


@dataclass(frozen=True, slots=True)
class Written:
    path: Path
    backup: Path | None  # the previous version, or None when there was no file
    passed_over: list[str]  # usual backup names held by something else ("x.bak is a link")
    tightened: bool  # group and other permissions were removed (the file holds a token)

    def sentence(self) -> str:
        """ "Wrote X (the previous version is X.bak)", and what was left alone."""
        notes = [f"the previous version is {self.backup}"] if self.backup is not None else []
        notes += [f"{passed}: left alone" for passed in self.passed_over]
        if self.tightened:
            notes.append("now readable by you alone: it holds a token")
        return f"Wrote {self.path}" + (f" ({'; '.join(notes)})" if notes else "")


# An element of an array that goes with the entry: (the array's path, its key, the element).
Item = tuple[tuple[str, ...], str, dict[str, Any]]


def plan_entry(
    path: Path,
    format: Format,
    container: tuple[str, ...],
    name: str,
    entry: Any,
    items: Sequence[Item] = (),
    *,
    follow_links: bool = False,
    project: Path | None = None,
) -> Plan:
    """The change that sets ``container.name`` to ``entry`` in the file at ``path`` (and
    puts each of ``items`` in its array: VS Code's token prompt). ``project``: the
    project directory ``path`` is a file of (a linked directory inside it is refused)."""
    found = files.read(path, follow_links=follow_links, project=project)
    where = str(path)
    text = decode(found.raw, where) if found is not None else Text("", bom=False)
    try:
        edited, previous = _edit(text.plain, format, (*container, name), entry, items, where)
    except RecursionError:
        raise _too_deep(where) from None
    after = text.render(edited)
    return Plan(
        path=path,
        real=files.written_path(path, follow_links=follow_links),
        found=found,
        before=text.written if found is not None else None,
        after=after,
        after_bytes=text.encode(after),
        previous_entry=previous,
    )


def read_entry(
    path: Path,
    format: Format,
    container: tuple[str, ...],
    name: str,
    *,
    follow_links: bool = False,
    project: Path | None = None,
) -> Any:
    """The entry under ``container.name`` in the file now, or None (no file, no entry);
    Malformed or Refused, as ``plan_entry`` would, for a file it would not write."""
    found = files.read(path, follow_links=follow_links, project=project)
    where = str(path)
    text = decode(found.raw, where).plain if found is not None else ""
    try:
        return _entry_in(text, format, container, name, where)
    except RecursionError:
        raise _too_deep(where) from None


def write(plan: Plan, *, private: bool = False) -> Written:
    """Apply the plan; ``private``: the file will hold a secret, so group and others lose
    their permissions. FailedPrecondition when the file system refuses (the file is
    then as it was)."""
    now = files.read(plan.real, follow_links=False)
    if (now.raw if now else None) != (plan.found.raw if plan.found else None):
        raise Conflict(f"{plan.path} changed while this ran; run the command again")
    mode = plan.found.mode if plan.found is not None else NEW_FILE_MODE
    kept = mode & ~PRIVATE_BITS if private else mode
    try:
        backup: Path | None = None
        passed_over: list[str] = []
        if plan.found is not None:
            backup, passed_over = files.keep_backup(plan.real, plan.found.raw, plan.found.mode)
        files.replace(plan.real, plan.after_bytes, kept)
    except OSError as error:
        raise FailedPrecondition(
            f"{plan.path} could not be written ({error.strerror or error}); it is as it was"
        ) from None
    return Written(plan.path, backup, passed_over, tightened=kept != mode)


def _edit(
    text: str,
    format: Format,
    member: tuple[str, ...],
    entry: Any,
    items: Sequence[Item],
    where: str,
) -> tuple[str, Any]:
    """``text`` with ``member`` set to ``entry``: the new text and the entry it replaces."""
    if format == "toml":
        return _toml_set(text, member, entry, where)
    previous = _entry_in(text, format, member[:-1], member[-1], where)
    after = text if previous == entry else jsonfile.set_member(text, member, entry, where=where)
    for array, key, item in items:
        after = jsonfile.upsert_item(after, array, key, item, where=where)
    return after, previous


def _entry_in(text: str, format: Format, container: tuple[str, ...], name: str, where: str) -> Any:
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
    if text.strip():
        jsonfile.refuse_repeated(text, (*container, name), where=where)
    return jsonfile.get_member(data, (*container, name))


def _too_deep(where: str) -> Malformed:
    return Malformed(
        f"{where} nests deeper than a configuration file does (arrays or objects inside "
        "each other beyond what can be read); it is left as it is"
    )


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
