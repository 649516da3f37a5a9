"""``metacortex serve``: the embedded server (SQLite + local model by default) on uvicorn.

Order matters: settings and profiles are validated and the port is bound
before the slow part (opening the store, loading the embedding model, one
warm-up query), so mistakes show at once; the socket starts listening only
when the first request can be answered quickly.
"""

from __future__ import annotations

import argparse
import gc
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final

from metacortex.access.profiles import load_profiles
from metacortex.cli.admin_token import ensure_admin_token
from metacortex.cli.data_dir import add_data_dir_option, settings_for, start_fresh, store_errors
from metacortex.cli.status import status
from metacortex.composition import build_service, embedder_loading_ahead, open_store
from metacortex.config import Settings
from metacortex.errors import ConfigurationError
from metacortex.guard.hosts import is_loopback_host
from metacortex.kernel.logs import configure_logging
from metacortex.service import Access, MemoryService

DEFAULT_HOST: Final = "127.0.0.1"
DEFAULT_PORT: Final = 8765
_START_SWITCH_INTERVAL: Final = 0.001  # seconds
_WILDCARDS: Final = frozenset({"0.0.0.0", "::", ""})  # noqa: S104 (compared, not bound)


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "serve",
        help="run the MCP server",
        description="Run MetaCortex over MCP (Streamable HTTP). Binds 127.0.0.1 unless told "
        "otherwise; a non-loopback bind needs MCP_ADMIN_TOKEN. On first run without "
        "MCP_ADMIN_TOKEN an admin token is generated into the data directory and shown once.",
    )
    parser.add_argument(
        "--host", default=DEFAULT_HOST, help="address to bind (default %(default)s)"
    )
    parser.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help="port to bind, 0 for any (default %(default)s)",
    )
    add_data_dir_option(parser)
    parser.add_argument(
        "--start-fresh",
        action="store_true",
        help="make a new, empty store in place of an empty (0-byte) database file, which is "
        "otherwise refused; a database that holds anything is never touched",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    settings = settings_for(args)
    host: str = args.host
    if not is_loopback_host(host):
        if settings.mcp_admin_token is None:
            raise ConfigurationError(
                f"refusing to listen on {host or 'all interfaces'} without MCP_ADMIN_TOKEN: "
                "anyone who can reach the port could try to use it. Set MCP_ADMIN_TOKEN to a "
                "strong secret (and METACORTEX_ALLOWED_HOSTS to the names clients use), or "
                f"bind {DEFAULT_HOST}"
            )
        if host not in _WILDCARDS:
            hosts = (*settings.metacortex_allowed_hosts, host)
            settings = settings.model_copy(update={"metacortex_allowed_hosts": hosts})
    settings = settings.model_copy(update={"bind_is_loopback": is_loopback_host(host)})
    configure_logging(settings.metacortex_log_level, settings.metacortex_log_format)
    admin = ensure_admin_token(settings)
    settings = admin.settings
    profiles = load_profiles(settings)
    listener = _bind(host, args.port)
    # No automatic collections while the store, model and app load: what they create
    # lives for good; ``serving`` collects once, freezes the heap and resumes them.
    gc.disable()
    try:
        status(f"opening the {settings.store_kind} store in {settings.metacortex_data_dir} ...")
        if args.start_fresh and (done := start_fresh(settings)):
            status(done)
        status(f"loading the {settings.embeddings_kind} embedding model ...")
        # The model loads on one thread (onnxruntime releases the GIL while it builds
        # its session) and the store's vectors on another (SQLite reads them with the
        # GIL released, ``sqlite_mirror_rows``) while this one imports the app, which is
        # pure Python and most of a start (docs/benchmarks.md, "Start-up after spaces").
        with _short_turns(), embedder_loading_ahead(settings):
            with store_errors(settings):
                store = open_store(settings, load_vectors_ahead=True)
                try:
                    from metacortex.cli import serving
                except BaseException:
                    store.close()
                    raise
                service = build_service(settings, store=store)
            try:
                # Built while the vectors may still be loading: the warm-up waits for them.
                app = serving.create_app(settings, service)
                _warm_up(service, settings)
            except BaseException:
                service.store.close()
                raise
        try:
            serving.serve(
                app, settings, service, host=host, listener=listener, profiles=profiles, admin=admin
            )
        finally:
            service.store.close()
    finally:
        gc.enable()
        listener.close()
    status("stopped")
    return 0


def _bind(host: str, port: int) -> socket.socket:
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        listener = socket.socket(family, kind, proto)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(address)
    except OSError as error:
        raise ConfigurationError(
            f"cannot listen on {host}:{port}: {error.strerror or error}; choose another --port "
            "or stop the other server"
        ) from None
    return listener


@contextmanager
def _short_turns() -> Iterator[None]:
    """Threads take the GIL in turns of ``_START_SWITCH_INTERVAL`` (Python's default is
    5 ms) while the start's loads run beside the imports: each time the vectors'
    loader comes back from SQLite it waits for the importing thread's turn to end,
    about a hundred times at 100,000 memories (0.4-0.5 s of a start measured at the
    default; docs/benchmarks.md, "Start-up after spaces"). Serving keeps the default."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(_START_SWITCH_INTERVAL)
    try:
        yield
    finally:
        sys.setswitchinterval(previous)


def _warm_up(service: MemoryService, settings: Settings) -> None:
    """One query through the model and the store, so the first real call is fast. It
    reads every record's vector: a damaged page there is refused here, before "ready"."""
    status("warming up ...")
    with store_errors(settings):
        service.search(Access.admin(), query="warm up", limit=1)
