"""What the people's browser tests share: a live OAuth-enabled server whose store a
command run with ``--data-dir`` finds, a household with one memory in each space, the
real ``metacortex person invite`` in a fresh process, and the page checks (overflow and
axe-core, light and dark, phone and desktop) in Playwright's async API."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from metacortex.service import Access
from tests.commands import COMMAND, fresh_clone_env, run_command
from tests.console.browser_checks import (
    AXE_RUN,
    AXE_TAGS,
    IMAGES,
    OVERFLOW,
    SCHEMES,
    WIDTHS,
    axe_script,
)
from tests.console.support import ConsoleLive
from tests.oauth_support import OAuthLive, oauth_server
from tests.owner.people_support import Household

SPACES: Final = ("default", "family", "work")


@dataclass
class PeopleLive:
    live: OAuthLive
    household: Household
    # The content of the one memory in each space (saved by the owner).
    contents: dict[str, str]
    directory: Path

    @property
    def console(self) -> ConsoleLive:
        return ConsoleLive(self.live.url, self.live.store, self.live.app)

    def invite(self, email: str) -> str:
        """``metacortex person invite EMAIL`` as the owner runs it: the link it prints."""
        home = self.directory / "home"
        home.mkdir(exist_ok=True)
        where = ["--data-dir", str(self.directory), "--url", self.live.url]
        done = run_command(
            [*COMMAND, "person", "invite", email, *where],
            env=fresh_clone_env(home),
            cwd=self.directory,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()


@contextmanager
def people_server(directory: Path) -> Iterator[PeopleLive]:
    axe_script()  # installed (or skipped loudly) before any server starts
    with oauth_server(
        directory, store_file="metacortex.sqlite3", metacortex_client_refresh_seconds=0
    ) as live:
        household = Household.on(live.store)
        owner = Access.admin(directory=household.registry.directory())
        contents = {space: f"The {space} plan is ready for the weekend" for space in SPACES}
        for space, content in contents.items():
            live.app.state.runtime.require_service().save(owner, content=content, space=space)
        yield PeopleLive(live, household, contents, directory)


async def page_problems(page: Any, url: str) -> dict[str, tuple[list[str], list[str]]]:
    """Open ``url`` in both colour schemes at phone and desktop width: what is wider than
    the window and what axe-core (WCAG 2.2 AA with target size, best practices) reports,
    by where (only where something is wrong)."""
    found: dict[str, tuple[list[str], list[str]]] = {}
    for scheme in SCHEMES:
        await page.emulate_media(color_scheme=scheme)
        for name, size in WIDTHS.items():
            await page.set_viewport_size(size)
            await page.goto(url)
            await page.add_script_tag(path=str(axe_script()))
            violations: list[dict[str, Any]] = await page.evaluate(AXE_RUN, AXE_TAGS)
            result = (
                await page.evaluate(OVERFLOW),
                [
                    f"{v['id']}: " + ", ".join(" ".join(n["target"]) for n in v["nodes"][:3])
                    for v in violations
                ],
            )
            if result != ([], []):
                found[f"{url} at {name}, {scheme}"] = result
    await page.emulate_media(color_scheme="light")
    await page.set_viewport_size(WIDTHS["desktop"])
    return found


async def screenshot(page: Any, name: str) -> None:
    """``docs/images/<name>.png`` of the whole page at phone width, when
    ``METACORTEX_UPDATE_SCREENSHOTS=1`` asks for new ones."""
    if os.environ.get("METACORTEX_UPDATE_SCREENSHOTS") != "1":
        return
    await page.set_viewport_size(WIDTHS["phone"])
    await page.screenshot(path=str(IMAGES / f"{name}.png"), full_page=True)
    await page.set_viewport_size(WIDTHS["desktop"])
