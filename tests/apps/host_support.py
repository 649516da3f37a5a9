"""The test host for the MCP Apps views: real pieces only.

- The host page (``host/host.html`` + ``host/host.mjs``) is built from the npm
  ``@modelcontextprotocol/ext-apps`` package's own host side (``AppBridge``,
  ``PostMessageTransport``) and the TypeScript MCP SDK's ``Client``, bundled for
  the browser with esbuild; all pinned, installed once into ``.cache/apps-host``
  (gitignored; the tests skip loudly without npm or the registry).
- A real MetaCortex app (SQLite store, the production guard, tools and views) under
  uvicorn on a loopback port, with three client credentials that allow the host
  page's origin: ``owner`` (every tool, writes the default space) and ``viewer``
  (every tool, but only reads the spaces ``default`` and ``team``), both from
  ``MCP_CLIENT_PROFILES_JSON``; and ``member``, a stored client as
  ``metacortex client add`` makes one (the default tools), writing both spaces, the
  one credential whose default space a call may change.
- A second host page (``openai-host.html``: the same page, loading
  ``host/openai_host.mjs``) is a host of ChatGPT's older Apps SDK contract
  (``window.openai``, no MCP Apps bridge), as OpenAI documents it: OpenAI
  publishes no host to test against.
- The page is served by a second loopback server, so the MCP requests are
  cross-origin as a browser host's are (CORS through the guard), and the view is
  a sandboxed ``srcdoc`` iframe: an opaque origin of its own.
"""

from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest
from starlette.applications import Starlette
from starlette.responses import FileResponse, HTMLResponse
from starlette.routing import Route

from metacortex.access.registry import Registry
from metacortex.clients.manage import ClientManager
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.server.app import create_app
from metacortex.service import Access, MemoryService
from metacortex.storage.sqlite import SQLiteStore
from metacortex.tool_catalogue import model_tools
from tests.fakes import FixedImageDescriber, HashingEmbedder
from tests.oauth_support import loopback_listener, serving
from tests.server.conftest import make_settings

ROOT: Final = Path(__file__).resolve().parents[2]
CACHE: Final = ROOT / ".cache" / "apps-host"
SOURCE: Final = Path(__file__).parent / "host"
PINNED: Final = {
    "@modelcontextprotocol/ext-apps": "2.0.4",
    "@modelcontextprotocol/client": "2.4.0",
    "@modelcontextprotocol/core": "2.4.0",
    "zod": "4.6.7",
    "esbuild": "0.25.12",
}
OWNER_TOKEN: Final = "apps-owner-" + "K8j7H6g5F4d3S2a1Q0w9E8r7T6y5U4i3"
VIEWER_TOKEN: Final = "apps-viewer-" + "P0o9I8u7Y6t5R4e3W2q1A0s9D8f7G6h5"
TEAM: Final = "team"  # a second space


# Each host page and its bundle: one page (host/host.html), loading one bundle or the other.
HOST_PAGES: Final = {"host.html": "host.js", "openai-host.html": "openai-host.js"}


def _installed() -> bool:
    for package, pin in PINNED.items():
        manifest = CACHE / "node_modules" / package / "package.json"
        if not manifest.exists() or json.loads(manifest.read_text())["version"] != pin:
            return False
    return True


# Each host page's module and the bundle it loads: the MCP Apps host, and the host of
# ChatGPT's older Apps SDK contract (window.openai).
BUNDLES: Final = {"host.mjs": "host.js", "openai_host.mjs": "openai-host.js"}


def host_bundle() -> Path:
    """The folder of the host bundles (``BUNDLES``): each module bundled with the pinned
    packages (installed if missing)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with (CACHE / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two test processes share the cache
        if not _installed():
            npm = shutil.which("npm")
            if npm is None:
                pytest.skip(
                    "SKIPPED LOUDLY: npm is not installed, so the MCP Apps host was not built"
                )
            specs = [f"{package}@{pin}" for package, pin in PINNED.items()]
            done = subprocess.run(  # noqa: S603 (fixed arguments)
                [npm, "install", "--no-audit", "--no-fund", "--prefix", str(CACHE), *specs],
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
            if done.returncode != 0 or not _installed():
                last = (done.stderr.strip().splitlines() or ["no output"])[-1]
                pytest.skip(f"SKIPPED LOUDLY: npm could not install the MCP Apps host ({last})")
        for module, bundle in BUNDLES.items():
            entry = CACHE / module  # beside node_modules, so its imports resolve there
            shutil.copyfile(SOURCE / module, entry)
            built = subprocess.run(  # noqa: S603 (fixed arguments)
                [
                    str(CACHE / "node_modules" / ".bin" / "esbuild"),
                    str(entry),
                    "--bundle",
                    "--format=esm",
                    "--platform=browser",
                    "--log-level=error",
                    f"--outfile={CACHE / bundle}",
                ],
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            assert built.returncode == 0, built.stderr
    return CACHE


@dataclass(frozen=True)
class Seeded:
    old: str  # deprecated, superseded by ``new``
    new: str
    backups: str
    document: str
    draft: str  # a wip memory, for promote


def seed(service: MemoryService) -> Seeded:
    admin = Access.admin()
    old = service.save(
        admin,
        content="The staging database moved to db-staging-2 on 2026-03-01.",
        topic="infra",
    )["item"]["id"]
    new = service.save(
        admin,
        content="The staging database is db-staging-3 since April; the old one is read-only.",
        topic="infra",
    )["item"]["id"]
    service.deprecate(admin, id=old, superseding_id=new, supersession_reason="changed")
    backups = service.save(
        admin, content="Staging backups run nightly at 02:00 UTC.", topic="infra"
    )["item"]["id"]
    document = service.create_document(
        admin,
        content="# Runbook\n\nRestart the staging database with `systemctl restart pg`.\n\n"
        "## Backups\n\nBackups of the staging database are kept for 30 days.",
        media_type="text/markdown",
        source="notes/runbook.md",
        topic="infra",
    )["document"]["id"]
    draft = service.save(
        admin, content="Draft: move the staging backups to 03:00 UTC.", topic="infra", draft=True
    )["item"]["id"]
    return Seeded(old, new, backups, document, draft)


@dataclass(frozen=True)
class Live:
    host_url: str
    server_url: str
    service: MemoryService
    app: Starlette
    seeded: Seeded
    tokens: dict[str, str]

    def page_url(self, credential: str, page: str = "host.html") -> str:
        token = self.tokens[credential]
        return (
            f"{self.host_url}/{page}?server={self.server_url}"
            f"&path=/clients/{credential}/mcp&token={token}"
        )

    def tool_calls(self) -> list[dict[str, Any]]:
        """Every tool call the server recorded (after the background writer is done)."""
        recorder = self.app.state.runtime.events
        if recorder is not None:  # made on the first request
            recorder.flush()
        events = self.service.store.read_events("memory_events", limit=100_000)
        return [e for e in events if e.get("event_type") == "tool_call"]


def _file(path: Path, media_type: str | None = None) -> Route:
    return Route(f"/{path.name}", lambda _: FileResponse(path, media_type=media_type))


def _page(name: str, bundle: str) -> Route:
    html = (SOURCE / "host.html").read_text(encoding="utf-8").replace("/host.js", f"/{bundle}")
    return Route(f"/{name}", lambda _: HTMLResponse(html))


def host_app(bundles: Path) -> Starlette:
    pages = [_page(name, bundle) for name, bundle in HOST_PAGES.items()]
    scripts = [_file(bundles / bundle, "text/javascript") for bundle in BUNDLES.values()]
    return Starlette(routes=[*pages, *scripts])


@contextmanager
def live_host(directory: Path) -> Iterator[Live]:
    bundle = host_bundle()
    host_listener = loopback_listener()
    host_origin = f"http://127.0.0.1:{host_listener.getsockname()[1]}"
    profiles = [
        {
            "id": credential,
            "token": token,
            "allowedTools": list(model_tools()),
            "allowedOrigins": [host_origin],
            "spaces": spaces,
            "defaultSpace": "default",
            "allowedFilterStates": ["active", "wip", "deprecated"],
            # Both may change a memory's lifecycle: the viewer is stopped by its level.
            "mayWriteLifecycle": True,
        }
        for credential, token, spaces in (
            ("owner", OWNER_TOKEN, {"default": "write"}),
            ("viewer", VIEWER_TOKEN, {"default": "read", TEAM: "read"}),
        )
    ]
    store = SQLiteStore(directory / "m.sqlite3")
    service = MemoryService(
        store, HashingEmbedder(), merger=SentenceUnionMerger(), describer=FixedImageDescriber()
    )
    seeded = seed(service)
    Registry(store).add_space(TEAM, "Team")
    settings = make_settings(directory / "data", mcp_client_profiles_json=json.dumps(profiles))
    member = ClientManager(store, settings).create(
        "member",
        spaces={"default": None, TEAM: None},
        default_space="default",
        origins=[host_origin],
    )
    tokens = {"owner": OWNER_TOKEN, "viewer": VIEWER_TOKEN, "member": member.token}
    app = create_app(settings, service)
    try:
        with serving(app) as server_url, serving(host_app(bundle), host_listener) as host_url:
            yield Live(host_url, server_url, service, app, seeded, tokens)
    finally:
        store.close()
