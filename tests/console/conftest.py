"""The console over loopback with OAuth off, and its owner signed in (modules that need
OAuth on, or both, define their own ``live``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.console.support import ConsoleLive, Owner, console_server


@pytest.fixture
def live(tmp_path: Path) -> Iterator[ConsoleLive]:
    with console_server(tmp_path, oauth=False) as running:
        yield running


@pytest.fixture
def owner(live: ConsoleLive) -> Iterator[Owner]:
    user = Owner(live)
    user.sign_in()
    yield user
    user.close()
