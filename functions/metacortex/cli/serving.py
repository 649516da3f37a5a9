"""The app of ``metacortex serve`` on uvicorn, once the service is built and warm: the
banner, the address recorded, the listener's backlog, and uvicorn until Ctrl-C.

Kept apart from ``cli/serve.py`` because importing it is most of a start's import
time (the ``mcp`` SDK, Starlette, uvicorn: about 0.6 s): ``serve`` imports it while
the embedding model loads on another thread (docs/benchmarks.md, "Start-up after
spaces").
"""

from __future__ import annotations

import contextlib
import gc
import socket
from collections.abc import Callable

import uvicorn
from starlette.applications import Starlette

from metacortex import ocr, owner
from metacortex.access.profiles import Profiles
from metacortex.cli import server_address
from metacortex.cli.admin_token import AdminToken
from metacortex.cli.banner import banner, base_url
from metacortex.cli.program import spelled
from metacortex.cli.status import status
from metacortex.clients import ClientManager
from metacortex.config import Settings
from metacortex.guard.connections import install_accept_error_filter, uvicorn_config
from metacortex.heap import freeze_startup_heap, release_freed_memory
from metacortex.providers.summary import models_summary
from metacortex.server.app import create_app as create_app
from metacortex.service import MemoryService


def serve(
    app: Starlette,
    settings: Settings,
    service: MemoryService,
    *,
    host: str,
    listener: socket.socket,
    profiles: Profiles,
    admin: AdminToken,
) -> None:
    """Serve ``app`` (``create_app``) until Ctrl-C. The caller disabled automatic
    collections while the store, model and app loaded (what they create lives for
    good): collected once here, frozen, and the collector resumes."""
    freeze_startup_heap()
    gc.enable()
    release_freed_memory()
    listener.listen(2048)
    url = base_url(host, listener.getsockname()[1])
    _record_address(settings, url)
    print(
        banner(
            url=url,
            data_dir=settings.metacortex_data_dir,
            profiles=profiles,
            token_path=admin.path,
            new_token=admin.value if admin.created else None,
            passphrase_set=owner.is_set(service.store),
            command=_command_for(settings),
            oauth=settings.metacortex_oauth,
            stored_clients=stored_client_ids(service, settings),
            models=models_summary(settings, ocr_installed=ocr.installed()),
        ),
        flush=True,
    )
    install_accept_error_filter()
    config = uvicorn_config(app, settings)
    # uvicorn shuts down gracefully on Ctrl-C, then re-raises it for the exit code.
    with contextlib.suppress(KeyboardInterrupt):
        uvicorn.Server(config).run(sockets=[listener])


def _command_for(settings: Settings) -> Callable[[str], str]:
    """Commands as the banner prints them: spelled to run from here, on this server's
    data directory (its store, admin token and recorded address)."""
    data_dir = settings.metacortex_data_dir if settings.store_kind == "sqlite" else None
    return lambda words: spelled(words, data_dir)


def _record_address(settings: Settings, url: str) -> None:
    """Where this server answers, for the commands that print its address."""
    try:
        server_address.record(settings, url)
    except OSError as error:
        status(f"could not record the server's address in {settings.metacortex_data_dir}: {error}")


def stored_client_ids(service: MemoryService, settings: Settings) -> list[str]:
    """The client endpoints kept in the store (``metacortex client add``), for the banner."""
    clients = ClientManager(service.store, settings).list()
    return [client.id for client in clients if client.source == "store"]
