"""Fixtures for the MCP Apps views: one live server and host per module, one browser."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.apps.host_support import Live, live_host
from tests.console.browser_checks import chromium
from tests.server.conftest import (  # noqa: F401 (the server tests' in-process harness)
    anyio_backend,
    harness,
    service,
    settings,
)

playwright_sync = pytest.importorskip("playwright.sync_api")


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    with live_host(tmp_path_factory.mktemp("apps")) as running:
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    executable = chromium()
    with playwright_sync.sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=executable, args=["--no-sandbox", "--disable-gpu"]
        )
        yield launched
        launched.close()
