"""The live OAuth-enabled server of the owner and people tests, with spaces and people
re-read at every request (``METACORTEX_CLIENT_REFRESH_SECONDS=0``); a module may define
its own ``live``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.oauth_support import OAuthLive, oauth_server


@pytest.fixture
def live(tmp_path: Path) -> Iterator[OAuthLive]:
    with oauth_server(tmp_path, metacortex_client_refresh_seconds=0) as running:
        yield running
