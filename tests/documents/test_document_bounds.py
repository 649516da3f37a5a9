"""What one document may become, how many are read at once, and work that stops when its
caller is gone (issue 37, Medium).

The review's case: a 29.7 KB DOCX expanded to 6,186 passages and 819 s of server time,
the server's memory grew from 0.3 to 1.18 GB, and the server worked on for 700 s after
the client gave up. Reproduced here with a DOCX that python-docx writes (64 KB, 6,200
paragraphs, 5.5 million characters): it is refused by the reader, naming the limit and
what to do, before anything is embedded.

Counterparts: python-docx for the file, the product's reader process, real SQLite
files, the official ``mcp`` SDK's client over real loopback HTTP (uvicorn) for a client
that goes away, and the SDK's in-process client for a cancelled request. The embedder
is the test one, held inside its first call (an event) so that the caller leaves while
the work is in progress, without sleeping.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Final

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from bench.document_bounds import expanding_docx
from metacortex.config import Settings
from metacortex.documents import DocumentLimits
from metacortex.documents.isolation import shut_down
from metacortex.documents.limits import MIB, READER_MEMORY_CEILING, READER_MEMORY_FLOOR
from metacortex.documents.media import DOCX
from metacortex.errors import Busy, DocumentRefused
from metacortex.mcp_surface.mcp_server import build_mcp_server
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.server.app import create_app
from metacortex.service import Access, MemoryService
from metacortex.storage.sqlite import SQLiteStore
from metacortex.usecases.documents import RETRY_AFTER_SECONDS
from metacortex.usecases.options import ServiceOptions
from tests.fakes import HashingEmbedder
from tests.oauth_support import loopback_listener, serving
from tests.server.conftest import ADMIN_TOKEN, make_settings, started
from tests.tool_results import error_code

ADMIN: Final = Access.admin()
HOLD: Final = 60.0  # seconds any wait here may take at most before the test fails


@pytest.fixture(scope="module", autouse=True)
def _reader_hosts() -> Iterator[None]:
    yield
    shut_down()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class CountingEmbedder(HashingEmbedder):
    """The test embedder, counting its batches (one call of ``embed_documents`` each)."""

    def __init__(self) -> None:
        super().__init__()
        self.batches = 0

    def embed_documents(self, texts: Sequence[str]) -> list[Any]:
        self.batches += 1
        return super().embed_documents(texts)


class HeldEmbedder(CountingEmbedder):
    """Each call says it started, then waits until the test releases them all."""

    def __init__(self) -> None:
        super().__init__()
        self.started = threading.Event()
        self.release = threading.Event()
        self._entered = threading.Condition()
        self._inside = 0

    def embed_documents(self, texts: Sequence[str]) -> list[Any]:
        with self._entered:
            self._inside += 1
            self._entered.notify_all()
        self.started.set()
        assert self.release.wait(HOLD), "the test never released the embedder"
        return super().embed_documents(texts)

    def wait_inside(self, calls: int) -> bool:
        """Until ``calls`` calls are held inside (each document past its slot)."""
        with self._entered:
            return self._entered.wait_for(lambda: self._inside >= calls, HOLD)


def _service(
    tmp_path: Path, embedder: HashingEmbedder | None = None, **limits: Any
) -> MemoryService:
    return MemoryService(
        SQLiteStore(tmp_path / "m.sqlite3"),
        embedder or CountingEmbedder(),
        merger=SentenceUnionMerger(),
        options=ServiceOptions(document_limits=lambda: DocumentLimits(**limits)),
    )


def _nothing_kept(service: MemoryService) -> None:
    assert service.list_documents(ADMIN)["documents"] == []
    assert service.list_memories(ADMIN)["items"] == []


# --------------------------------------------------------------- what one may become
def test_a_small_docx_that_expands_to_thousands_of_passages_is_refused_before_embedding(
    tmp_path: Path,
) -> None:
    data = expanding_docx()
    assert len(data) < 100_000
    embedder = CountingEmbedder()
    service = _service(tmp_path, embedder)

    with pytest.raises(DocumentRefused) as refused:
        service.create_document(ADMIN, data=data, media_type=DOCX)

    assert refused.value.reason == "too_much_text"
    assert refused.value.message == (
        "the document's text runs past 5,000,000 characters, the limit "
        "(METACORTEX_DOCUMENT_MAX_CHARS): split it into smaller files, or raise the limit"
    )
    assert embedder.batches == 0
    _nothing_kept(service)


def test_past_the_passage_limit_a_document_is_refused_naming_it(tmp_path: Path) -> None:
    embedder = CountingEmbedder()
    service = _service(tmp_path, embedder, max_chars=50_000_000)

    with pytest.raises(DocumentRefused) as refused:
        service.create_document(ADMIN, data=expanding_docx(), media_type=DOCX)

    assert refused.value.reason == "too_many_passages"
    assert "the limit is 5,000 (METACORTEX_DOCUMENT_MAX_PASSAGES)" in refused.value.message
    assert "split it into smaller files" in refused.value.message
    assert embedder.batches == 0
    _nothing_kept(service)


def test_embedding_past_its_time_is_stopped_and_nothing_is_kept(tmp_path: Path) -> None:
    """The deadline is checked between batches of 256 passages: with a limit no batch
    fits, the second one never starts."""
    embedder = CountingEmbedder()
    service = _service(tmp_path, embedder, embed_seconds=1e-9)

    with pytest.raises(DocumentRefused) as refused:
        service.create_document(ADMIN, data=expanding_docx(400), media_type=DOCX)

    assert refused.value.reason == "too_slow"
    assert "(METACORTEX_DOCUMENT_EMBED_SECONDS; 256 were done)" in refused.value.message
    assert embedder.batches == 1
    _nothing_kept(service)


def test_the_readers_memory_cap_is_sized_to_the_machine_unless_set() -> None:
    machine = DocumentLimits.from_settings(Settings(_env_file=None))  # type: ignore[call-arg]
    assert READER_MEMORY_FLOOR <= machine.memory_bytes <= READER_MEMORY_CEILING
    memory = Path("/proc/meminfo").read_text().split("\n")[0].split()[1]
    if int(memory) * 1024 >= 2 * machine.concurrent * READER_MEMORY_FLOOR:
        # Every reader at once within half the machine's memory.
        assert machine.concurrent * machine.memory_bytes <= int(memory) * 1024 // 2
    set_by_operator = Settings(_env_file=None, metacortex_document_memory_mb=700)  # type: ignore[call-arg]
    assert DocumentLimits.from_settings(set_by_operator).memory_bytes == 700 * MIB
    unlimited = Settings(_env_file=None, metacortex_document_memory_mb=0)  # type: ignore[call-arg]
    assert DocumentLimits.from_settings(unlimited).memory_bytes == 0


# ------------------------------------------------------------------ how many at once
def _adding(service: MemoryService, access: Access, text: str) -> threading.Thread:
    """``create_document`` on a thread (it holds its slot until the embedder lets go)."""
    errors: list[BaseException] = []

    def add() -> None:
        try:
            service.create_document(access, content=text, media_type="text/markdown")
        except BaseException as error:  # noqa: BLE001 - kept for the test to see
            errors.append(error)

    thread = threading.Thread(target=add)
    thread.start()
    thread.errors = errors  # type: ignore[attr-defined]
    return thread


def test_past_the_bounds_per_credential_and_per_server_a_document_is_busy_retry_after(
    tmp_path: Path,
) -> None:
    embedder = HeldEmbedder()
    service = _service(tmp_path, embedder, concurrent=2, concurrent_per_credential=1)
    ann = Access.admin(principal="ann-laptop")
    ben = Access.admin(principal="ben-phone")
    first = _adding(service, ann, "# One\n\nThe first document.")
    assert embedder.started.wait(HOLD)

    with pytest.raises(Busy) as per_credential:
        service.create_document(ann, content="# Two\n\nAnother.", media_type="text/markdown")
    second = _adding(service, ben, "# Three\n\nBen's document.")
    assert embedder.wait_inside(2)  # Ben's holds the second slot
    with pytest.raises(Busy) as per_server:
        service.create_document(
            Access.admin(principal="cleo"), content="# Four\n\nCleo's.", media_type="text/plain"
        )
    embedder.release.set()
    first.join(HOLD)
    second.join(HOLD)

    assert per_credential.value.retry_after_seconds == RETRY_AFTER_SECONDS
    assert "METACORTEX_DOCUMENT_CONCURRENCY_PER_CREDENTIAL=1" in per_credential.value.message
    assert f"busy, retry after {RETRY_AFTER_SECONDS} s" in per_credential.value.message
    assert "(METACORTEX_DOCUMENT_CONCURRENCY=2)" in per_server.value.message
    assert per_server.value.to_payload() == {
        "error": {
            "code": "unavailable",
            "message": per_server.value.message,
            "retry_after_seconds": RETRY_AFTER_SECONDS,
        }
    }
    assert first.errors == second.errors == []  # type: ignore[attr-defined]
    assert len(service.list_documents(ADMIN)["documents"]) == 2
    assert service.document_slots.running == 0
    # Slots are given back: the same credential adds the next one.
    again = service.create_document(ann, content="# Five\n\nLater.", media_type="text/plain")
    assert again["write_status"] == "created"


@pytest.mark.anyio
async def test_a_busy_server_answers_a_tool_call_with_a_retryable_error_and_when_to_retry(
    tmp_path: Path,
) -> None:
    embedder = HeldEmbedder()
    service = _service(tmp_path, embedder, concurrent=1)
    async with started(make_settings(tmp_path / "data"), service) as harness:
        holding = _adding(service, Access.admin(principal="console"), "# Held\n\nHeld.")
        assert await anyio.to_thread.run_sync(embedder.started.wait, HOLD)
        async with harness.connect() as admin:
            refused = await admin.call_tool("create_document", {"content": "# Busy\n\nNo."})
        embedder.release.set()
        await anyio.to_thread.run_sync(holding.join, HOLD)

    assert error_code(refused) == "unavailable"  # retryable, in the spec's error codes
    text = refused.content[0]
    assert isinstance(text, types.TextContent)
    error = json.loads(text.text)["error"]
    assert error["retry_after_seconds"] == RETRY_AFTER_SECONDS
    assert error["message"].endswith(f"busy, retry after {RETRY_AFTER_SECONDS} s")


# -------------------------------------------------------- the caller goes away: stop
class _Watching(logging.Handler):
    """Sets ``stopped`` when the server logs that it stopped the tool's work, ``ended``
    when it logs the call's end."""

    def __init__(self) -> None:
        super().__init__()
        self.stopped = threading.Event()
        self.ended = threading.Event()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        line = record.getMessage()
        self.lines.append(line)
        if "create_document stopped:" in line:
            self.stopped.set()
        if line == "tool create_document error":
            self.ended.set()


@pytest.fixture
def watching() -> Iterator[_Watching]:
    handler = _Watching()
    server_logger = logging.getLogger("metacortex.server")
    level = server_logger.level
    server_logger.addHandler(handler)
    server_logger.setLevel(logging.INFO)
    yield handler
    server_logger.removeHandler(handler)
    server_logger.setLevel(level)


async def _work_stops(embedder: HeldEmbedder, watching: _Watching, service: MemoryService) -> None:
    """The server says it stopped; the embedder let go, the work ends at its next step."""
    assert await anyio.to_thread.run_sync(watching.stopped.wait, HOLD)
    embedder.release.set()
    assert await anyio.to_thread.run_sync(service.document_slots.idle, HOLD)


def _stopped_keeping_nothing(
    embedder: HeldEmbedder, watching: _Watching, service: MemoryService, why: str
) -> None:
    assert f"tool create_document stopped: {why} before it was done" in watching.lines
    assert embedder.batches == 1  # the batch held when the caller left; no other
    _nothing_kept(service)
    service.store.close()


LONG: Final = "\n\n".join(f"Paragraph {n}. " + "Words to embed. " * 50 for n in range(40))


@pytest.mark.anyio
async def test_a_client_that_disconnects_stops_the_servers_work_and_nothing_is_kept(
    tmp_path: Path, watching: _Watching
) -> None:
    """A real client over loopback HTTP gives up (its task is cancelled: the SDK closes
    the connection); the server sees the disconnect, logs that it stopped, and the
    document's work ends at its next step without writing anything."""
    embedder = HeldEmbedder()
    service = _service(tmp_path, embedder)
    app = create_app(make_settings(tmp_path / "data"), service)
    with serving(app, loopback_listener()) as url:  # uvicorn runs the app's lifespan

        async def call() -> None:
            async with (
                httpx2.AsyncClient(
                    headers={"authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=HOLD
                ) as http,
                Client(
                    streamable_http_client(url + "/mcp", http_client=http), mode="2026-07-28"
                ) as client,
            ):
                await client.call_tool("create_document", {"content": LONG})

        async with anyio.create_task_group() as client_side:
            client_side.start_soon(call)
            assert await anyio.to_thread.run_sync(embedder.started.wait, HOLD)
            client_side.cancel_scope.cancel()  # the client gives up and goes away

        await _work_stops(embedder, watching, service)
        assert await anyio.to_thread.run_sync(watching.ended.wait, HOLD)

    _stopped_keeping_nothing(embedder, watching, service, "the client disconnected")


@pytest.mark.anyio
async def test_a_cancelled_request_stops_the_servers_work_and_nothing_is_kept(
    tmp_path: Path, watching: _Watching
) -> None:
    """The SDK's own client, in process: cancelling the call sends
    ``notifications/cancelled``; the SDK cancels the server's handler; the work stops."""
    embedder = HeldEmbedder()
    service = _service(tmp_path, embedder)
    async with started(make_settings(tmp_path / "data"), service) as harness:
        admin = harness.runtime.profiles.admin

        async def as_admin(ctx: Any) -> Any:
            return admin

        server = build_mcp_server(harness.runtime, as_admin)
        async with Client(server) as client, anyio.create_task_group() as caller:
            caller.start_soon(client.call_tool, "create_document", {"content": LONG})
            assert await anyio.to_thread.run_sync(embedder.started.wait, HOLD)
            caller.cancel_scope.cancel()

        await _work_stops(embedder, watching, service)

    _stopped_keeping_nothing(embedder, watching, service, "the request was cancelled")


def test_a_reader_whose_caller_is_gone_is_killed_at_once(tmp_path: Path) -> None:
    """Cancelled while the reader process works on a PDF that takes seconds: the reader
    is killed and the caller told, not the deadline's refusal."""
    from metacortex.cancellation import Cancellation
    from metacortex.documents import extract_isolated
    from metacortex.errors import CallerGone
    from tests.documents.craft import slow_pdf

    class CancelledWhileReading(Cancellation):
        """Cancelled the third time it is looked at: the job is with the reader then."""

        looked = 0

        @property
        def cancelled(self) -> bool:
            self.looked += 1
            return self.looked >= 3

    with pytest.raises(CallerGone):
        extract_isolated(
            slow_pdf(400_000),
            "application/pdf",
            DocumentLimits(seconds=120),
            CancelledWhileReading(),
        )
    quick = extract_isolated(b"after", "text/plain", DocumentLimits(seconds=30))
    assert quick.text == "after"
