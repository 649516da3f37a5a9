"""Which file ``metacortex init`` writes for a target, and whose file it is.

A project's file (``.mcp.json``, ``.vscode/mcp.json``) lives in the project
directory: whoever opens the project reads it, and it is often committed, so a
token never goes there and links inside the project are refused. A user's file
(``~/.codex/config.toml``) is the user's own, for every project. A file named with
``--config`` is whatever ``--scope`` says it is, else unknown (treated as shared).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from metacortex.appconfig.edit import Item, Plan, plan_entry, read_entry
from metacortex.appconfig.targets import Scope, Target
from metacortex.config import ApplicationDirs
from metacortex.errors import InvalidArgument


@dataclass(frozen=True, slots=True)
class Place:
    path: Path
    scope: Scope | None  # None: a file named with --config, whose we do not know
    named: bool  # named with --config rather than the application's usual file
    follow_links: bool  # --follow-symlink: write the file a link points to
    project: Path | None  # the project directory of a project's file

    @property
    def private(self) -> bool:
        """The user's own file, where a secret may be kept."""
        return self.scope == "user"

    def plan(self, target: Target, name: str, entry: Any, items: Sequence[Item] = ()) -> Plan:
        """The change that sets ``name`` to ``entry`` in this file (``edit.plan_entry``)."""
        return plan_entry(
            self.path,
            target.format,
            target.container,
            name,
            entry,
            items,
            follow_links=self.follow_links,
            project=self.project,
        )

    def entry_now(self, target: Target, name: str) -> Any:
        """The entry under ``name`` in this file now (``edit.read_entry``)."""
        return read_entry(
            self.path,
            target.format,
            target.container,
            name,
            follow_links=self.follow_links,
            project=self.project,
        )

    def heading(self, target: Target) -> str:
        """What ``init`` says before anything else: the application, the file, whose."""
        return f"{target.app}: {self.path}\n  {self.describe(target)}.\n  Format: {target.source}"

    def describe(self, target: Target) -> str:
        """Whose file it is, in words, with the other choice when there is one."""
        other = [scope for scope in target.scopes if scope != self.scope]
        switch = ""
        if other and not self.named:
            switch = (
                "; --scope user for yours alone"
                if other[0] == "user"
                else ("; --scope project for this directory's project file")
            )
        if self.scope == "project":
            where = f" in {self.project}" if self.project is not None else ""
            return (
                f"the project's file{where}: whoever opens the project reads it (and it is "
                f"often committed){switch}"
            )
        if self.scope == "user":
            return f"the user's file: yours alone, for every project{switch}"
        return (
            "the file --config names (add --scope user if it is yours alone, --scope "
            "project if it is a project's)"
        )


def locate(
    target: Target,
    scope: Scope | None,
    config: Path | None,
    dirs: ApplicationDirs,
    cwd: Path,
    *,
    follow_links: bool = False,
) -> Place:
    """The file ``init`` writes for ``target``: ``config`` when given, else the
    application's file of ``scope`` (default: the application's usual one)."""
    if config is not None:
        path = config.expanduser().absolute()
        project = cwd if scope == "project" else None
        return Place(path, scope, named=True, follow_links=follow_links, project=project)
    chosen: Scope = target.default_scope if scope is None else scope
    if chosen not in target.scopes:
        raise InvalidArgument(
            f"{target.app} has no {chosen} configuration file; it has: " + ", ".join(target.scopes)
        )
    project = cwd if chosen == "project" else None
    return Place(
        target.path(chosen, dirs, cwd),
        chosen,
        named=False,
        follow_links=follow_links,
        project=project,
    )
