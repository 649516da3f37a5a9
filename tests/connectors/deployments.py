"""The two URL forms every connector is tried at.

- ``root``: the server's own origin, ``http://127.0.0.1:PORT/mcp`` (``metacortex
  serve``, a custom domain, a tunnel).
- ``cloudfunctions.net``: ``http://127.0.0.1:PORT/metaCortexMcp/mcp`` behind the
  emulation of Google's front end for Cloud Functions (``tests.google_front``), with
  ``METACORTEX_PUBLIC_URL`` set to the function's URL as docs/CONNECTORS.md says.

Both are the production app (``create_app``) with OAuth on, a SQLite store and the
loopback fixture serving client metadata documents.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from metacortex.kernel.routes import FUNCTION_PREFIX
from tests.google_front import CloudFunctionsFrontEnd
from tests.oauth_support import MetadataFixture, OAuthLive, loopback_listener, oauth_server, serving

UrlForm = Literal["root", "cloudfunctions.net"]
URL_FORMS: Final[tuple[UrlForm, ...]] = ("root", "cloudfunctions.net")


@dataclass
class Deployment:
    form: UrlForm
    live: OAuthLive
    base: str  # the public base URL: what the owner's MCP URL starts with
    frontend: CloudFunctionsFrontEnd | None

    @property
    def mcp(self) -> str:
        """The MCP URL the owner pastes into the client."""
        return self.base + "/mcp"

    @property
    def documents(self) -> MetadataFixture:
        return self.live.documents

    def refused_mark(self) -> int:
        return len(self.frontend.refused) if self.frontend is not None else 0

    def refused_since(self, mark: int) -> list[str]:
        """The requests Google's front end answered with its 404 page since ``mark``:
        the probes a client made that never reach a deployed function."""
        return list(self.frontend.refused[mark:]) if self.frontend is not None else []


# The owner signs in once per connector (tests.connectors.consent), from one address,
# faster than a person would: the sign-in limit (5 a minute) has its own tests.
_SIGN_INS: Final[dict[str, Any]] = {
    "metacortex_sign_in_per_minute": 600,
    "metacortex_sign_in_per_minute_overall": 600,
}


@contextmanager
def deployed(form: UrlForm, directory: Path) -> Iterator[Deployment]:
    if form == "root":
        with oauth_server(directory, **_SIGN_INS) as live:
            yield Deployment(form, live, live.url, None)
        return
    listener = loopback_listener()
    public = f"http://127.0.0.1:{listener.getsockname()[1]}{FUNCTION_PREFIX}"
    with oauth_server(directory, metacortex_public_url=public, **_SIGN_INS) as live:
        frontend = CloudFunctionsFrontEnd(live.url)
        with serving(frontend, listener):
            yield Deployment(form, live, public, frontend)
