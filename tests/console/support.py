"""A live console over loopback: the real app (OAuth on or off), a real SQLite store with the
owner's passphrase, a seeded corpus, and real tool calls through the MCP endpoint for events."""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Final

import httpx2
from starlette.applications import Starlette

from metacortex.domain.records import utc_now
from metacortex.kernel.runtime import Runtime
from metacortex.owner import set_passphrase
from metacortex.owner.sessions import KIND as SESSION_KIND
from metacortex.owner.sessions import digest
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.server.app import create_app
from metacortex.service import Access, MemoryService
from metacortex.storage.base import MemoryStore
from metacortex.storage.sqlite import SQLiteStore
from tests.conftest import PNG_1X1
from tests.fakes import FixedImageDescriber, HashingEmbedder
from tests.oauth_support import PASSPHRASE, hidden, oauth_server, serving, tool_call
from tests.server.conftest import ADMIN_TOKEN, make_settings

ADMIN: Final = Access.admin()


@dataclass
class ConsoleLive:
    url: str
    store: MemoryStore
    app: Starlette

    @property
    def runtime(self) -> Runtime:
        runtime: Runtime = self.app.state.runtime
        return runtime

    @property
    def service(self) -> MemoryService:
        return self.runtime.require_service()

    def flush_events(self) -> None:
        events = self.runtime.events
        assert events is not None
        events.flush()


@contextmanager
def console_server(
    directory: Path, *, oauth: bool = True, **overrides: Any
) -> Iterator[ConsoleLive]:
    if oauth:
        with oauth_server(directory, **overrides) as live:
            yield ConsoleLive(live.url, live.store, live.app)
        return
    store = SQLiteStore(directory / "m.sqlite3")
    try:
        with console_on(store, directory, **overrides) as live:
            yield live
    finally:
        store.close()


@contextmanager
def console_on(store: MemoryStore, directory: Path, **overrides: Any) -> Iterator[ConsoleLive]:
    """The app (OAuth off) serving a given store, with the owner's passphrase set."""
    set_passphrase(store, PASSPHRASE)
    service = MemoryService(
        store, HashingEmbedder(), merger=SentenceUnionMerger(), describer=FixedImageDescriber()
    )
    app = create_app(make_settings(directory / "data", **overrides), service)
    with serving(app) as url:
        assert httpx2.get(f"{url}/healthz", timeout=30).status_code == 200
        yield ConsoleLive(url, store, app)


@dataclass(frozen=True)
class Seeded:
    drafts: list[str]
    garden: list[str]
    image: str
    merged: str
    merge_sources: list[str]


def seed(service: MemoryService) -> Seeded:
    """A small corpus: topics in every state, an image, a finished consolidation."""
    garden = [
        service.save(ADMIN, content=text, topic="garden", origin="user_asserted")["item"]["id"]
        for text in (
            "Tomatoes need six hours of sun a day.",
            "The basil is planted next to the tomatoes.",
            "Water the garden before 9 am in summer.",
        )
    ]
    drafts = [
        service.save(ADMIN, content=text, topic="trip", draft=True)["item"]["id"]
        for text in ("We fly to Lisbon on May 3.", "The hotel is near Rossio station.")
    ]
    image = service.save(
        ADMIN,
        content="Whiteboard from the planning meeting",
        topic="work",
        image_base64=base64.b64encode(PNG_1X1).decode(),
        image_mime_type="image/png",
        artifact_refs=["gs://team-bucket/whiteboard.png"],
    )["item"]["id"]
    sources = [
        service.save(ADMIN, content=text, topic="work", draft=True)["item"]["id"]
        for text in ("Standup moved to 9:30.", "Standup is in room B.")
    ]
    merged = service.consolidate(ADMIN, topic="work")["item"]["merged_id"]
    return Seeded(drafts, garden, image, merged, sources)


def make_events(url: str) -> None:
    """Real traffic: tool calls through the admin endpoint (one search finds nothing) and a
    refused request (a wrong token)."""
    for arguments in (
        {"query": "tomatoes sun"},
        {"query": "tomatoes", "filter_topic": "no-such-topic"},  # finds nothing
    ):
        answer = tool_call(url + "/mcp", ADMIN_TOKEN, "search_context", arguments)
        assert answer.status_code == 200, answer.text
    answer = tool_call(url + "/mcp", ADMIN_TOKEN, "fetch_context", {"id": "0" * 26})
    assert answer.status_code == 200
    refused = tool_call(url + "/mcp", "not-the-token", "search_context", {"query": "x"})
    assert refused.status_code == 401


class Owner:
    """The owner's browser without a browser: cookies, forms, CSRF tokens."""

    def __init__(self, live: ConsoleLive) -> None:
        self.live = live
        self.http = httpx2.Client(base_url=live.url, timeout=30, follow_redirects=False)

    def close(self) -> None:
        self.http.close()

    def sign_in(self, passphrase: str = PASSPHRASE) -> httpx2.Response:
        page = self.http.get("/console")
        return self.http.post(
            "/owner/sign-in",
            data={
                "csrf": hidden(page.text, "csrf"),
                "next": hidden(page.text, "next"),
                "passphrase": passphrase,
            },
        )

    def csrf(self, path: str = "/console") -> str:
        return hidden(self.http.get(path).text, "csrf")

    def post(self, path: str, **form: Any) -> httpx2.Response:
        return self.http.post(path, data={"csrf": self.csrf(), **form})

    def expire_session(self) -> None:
        """The session's stored record reaches its expiry (as after the configured hours)."""
        value = next(v for k, v in self.http.cookies.items() if k.endswith("mc_owner"))
        key = digest(value)
        data = self.live.store.auth_get(SESSION_KIND, key)
        assert data is not None
        self.live.store.auth_put(SESSION_KIND, key, data, utc_now() - timedelta(seconds=1))


def ids_in(html: str) -> list[str]:
    return re.findall(r"/console/memories/([0-9a-z]{26})[\"?]", html)
