"""Fixtures of the connector matrix: the server at each URL form (one per form for the
whole session, as a user's deployment is), the owner's Chromium, the npm clients."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.connectors.consent import ConsentBrowser, chromium_executable
from tests.connectors.deployments import URL_FORMS, Deployment, UrlForm, deployed
from tests.connectors.npm_tools import NpmTools, install


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session", params=URL_FORMS)
def deployment(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployment]:
    form: UrlForm = request.param
    with deployed(form, tmp_path_factory.mktemp("connectors")) as running:
        yield running


@pytest.fixture(scope="session")
def owner_browser() -> Iterator[ConsentBrowser]:
    pytest.importorskip("playwright.sync_api")
    executable = chromium_executable()
    if executable is None:
        pytest.skip(
            "SKIPPED LOUDLY: Debian's chromium is not installed (apt-get install -y chromium; "
            ".ci/run does it when root), so the connector matrix could not give consent"
        )
    browser = ConsentBrowser(executable)
    yield browser
    browser.close()


@pytest.fixture(scope="session")
def npm_tools() -> NpmTools:
    tools = install()
    if isinstance(tools, str):
        pytest.skip(f"SKIPPED LOUDLY: {tools}; the npm clients of the connector matrix did not run")
    return tools
