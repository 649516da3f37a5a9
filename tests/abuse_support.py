"""A live server for the abuse tests (issue 19), attacked over real loopback sockets.

MetaCortex with OAuth on (so the sign-in, token and registration routes exist) runs
under uvicorn the way it is deployed:

* ``like="serve"``: exactly as ``metacortex serve`` runs it
  (``server.connections.uvicorn_config``: the guarded h11 protocol, its deadlines
  and connection cap, no proxy headers);
* ``like="cloud"``: the cloud deployment's settings under uvicorn configured as
  functions-framework's gunicorn ``UvicornWorker`` configures it (uvicorn's
  defaults: ``X-Forwarded-For`` believed from 127.0.0.1 and ::1). The test client
  plays Google's front end: it sends ``X-Forwarded-For`` as the front end delivers
  it, the client's own value with the front end's entry appended.

Only the embedding model is a stand-in (``tests.fakes``). Nothing sleeps: a test
waits for the server to act (an answer, a close), bounded by ``WAIT``, which only
matters when the behaviour is missing.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

import httpx2
import uvicorn
from starlette.applications import Starlette

from metacortex.guard.connections import uvicorn_config
from metacortex.owner import set_passphrase
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.server.app import create_app
from metacortex.service import MemoryService
from metacortex.storage.sqlite import SQLiteStore
from tests.fakes import FixedImageDescriber, HashingEmbedder
from tests.oauth_support import PASSPHRASE, hidden
from tests.server.conftest import make_settings

WAIT: Final = 20.0  # seconds a test waits for the server before declaring the behaviour missing
# Sign-in budgets configured down: a bucket of 2 a minute refills one attempt in 30 s,
# longer than a test takes however slow the passphrase KDF runs on a busy machine.
SIGN_IN_BUDGET: Final[dict[str, Any]] = {"metacortex_sign_in_per_minute": 2}


@dataclass
class Live:
    url: str
    port: int
    store: SQLiteStore
    app: Starlette

    def connect(self) -> socket.socket:
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=WAIT)
        sock.settimeout(WAIT)
        return sock

    def client(self) -> httpx2.Client:
        return httpx2.Client(base_url=self.url, timeout=WAIT, follow_redirects=False)


@contextmanager
def live_server(
    directory: Path, *, like: Literal["serve", "cloud"] = "serve", **overrides: Any
) -> Iterator[Live]:
    store = SQLiteStore(directory / "m.sqlite3")
    set_passphrase(store, PASSPHRASE)
    service = MemoryService(
        store, HashingEmbedder(), merger=SentenceUnionMerger(), describer=FixedImageDescriber()
    )
    values: dict[str, Any] = {"metacortex_oauth": True, **overrides}
    if like == "cloud":
        values["deployment"] = "cloud"
    settings = make_settings(directory / "data", **values)
    app = create_app(settings, service)
    config = (
        uvicorn_config(app, settings)
        if like == "serve"
        else uvicorn.Config(app, log_config=None, access_log=False)
    )
    # A TCP socket as serve binds it (proto IPPROTO_TCP): asyncio sets TCP_NODELAY only
    # on those, and without it every response on a reused connection waits for the
    # client's delayed ACK (40 ms).
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listener.bind(("127.0.0.1", 0))
    listener.listen(2048)  # connections queue here until the server accepts them
    port = listener.getsockname()[1]
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{port}"
        assert httpx2.get(f"{url}/healthz", timeout=WAIT).status_code == 200
        yield Live(url, port, store, app)
    finally:
        server.should_exit = True
        thread.join(timeout=WAIT)
        listener.close()
        store.close()


def sign_in(
    http: httpx2.Client, passphrase: str = PASSPHRASE, headers: dict[str, str] | None = None
) -> httpx2.Response:
    """One sign-in attempt as a browser makes it (the form, then its post)."""
    page = http.get("/owner/sign-in", headers=headers)
    return http.post(
        "/owner/sign-in",
        data={"csrf": hidden(page.text, "csrf"), "next": "", "passphrase": passphrase},
        headers=headers,
    )


def read_until_closed(sock: socket.socket) -> bytes | None:
    """Everything the server sends until it closes the connection; None if it has not
    closed it within WAIT."""
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except ConnectionResetError:
        pass
    except TimeoutError:
        return None
    return received


def read_response_head(sock: socket.socket) -> bytes:
    """Bytes up to the end of one response head (the status line and headers)."""
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = sock.recv(65536)
        if not chunk:
            break
        received += chunk
    return received
