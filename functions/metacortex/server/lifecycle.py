"""Bringing the service up and down around a transport: the HTTP app's lifespan and stdio.

``running(runtime)`` builds the service unless the runtime was given one (opening
the store, loading the embedding model), starts the event writer on its store,
and on exit writes every queued event and closes a store it opened itself.

With ``background=True`` (the Cloud Functions entry) it lets the transport
start at once: ``runtime.started`` is set once the build is over, and a failure
is logged once and kept in ``runtime.failure`` (requests that need the service
are answered "unavailable"). Otherwise a failure raises before anything is served.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import timedelta
from functools import partial

import anyio
import anyio.to_thread

from metacortex.composition import build_service
from metacortex.config import Settings
from metacortex.kernel.events import EventRecorder
from metacortex.kernel.logs import log
from metacortex.kernel.rejections import RejectionBudget
from metacortex.kernel.runtime import Runtime
from metacortex.storage.base import MemoryStore


def event_recorder(settings: Settings) -> EventRecorder:
    return EventRecorder(
        retention=timedelta(days=settings.metacortex_event_retention_days),
        retrieval_logging=settings.retrieval_event_logging_enabled,
        rejection_budget=RejectionBudget(settings.metacortex_rejection_events_per_minute),
    )


@asynccontextmanager
async def running(
    runtime: Runtime,
    *,
    background: bool = False,
    on_start: Callable[[MemoryStore], None] | None = None,
) -> AsyncIterator[None]:
    """The service built and the event writer started for the duration of the block;
    ``on_start(store)`` runs once the store is open (the OAuth server's start)."""
    settings = runtime.settings
    owned = runtime.service is None
    recorder = event_recorder(settings)
    runtime.events = recorder  # queues until started with the store
    started = anyio.Event()
    runtime.started = started

    async def bring_up() -> None:
        if runtime.service is None:
            # A long-lived server: the embedded store reads its vectors while the model
            # loads, not at the first search (docs/benchmarks.md "Scale", fourth pass).
            runtime.service = await anyio.to_thread.run_sync(
                partial(build_service, settings, load_vectors_ahead=True)
            )
        recorder.start(runtime.service.store)
        # Client profiles kept in the store join those of the environment (clients/).
        await anyio.to_thread.run_sync(runtime.clients.attach, runtime.service.store)
        if on_start is not None:
            on_start(runtime.service.store)

    async def bring_up_in_background() -> None:
        try:
            await bring_up()
        except Exception as error:  # noqa: BLE001 - logged once, answered "unavailable"
            runtime.failure = f"{type(error).__name__}: {error}"
            log(logging.ERROR, f"MetaCortex could not start: {runtime.failure}")
        finally:
            started.set()

    building: asyncio.Task[None] | None = None
    if background:
        building = asyncio.create_task(bring_up_in_background())
    try:
        if building is None:
            try:
                await bring_up()
            finally:
                started.set()
        yield
    finally:
        if building is not None:
            await building  # a build in its worker thread cannot be cut short
        await anyio.to_thread.run_sync(recorder.close)
        # The document reader hosts this process started, if it read any document.
        readers = sys.modules.get("metacortex.documents.isolation")
        if readers is not None:
            await anyio.to_thread.run_sync(readers.shut_down)
        if owned and runtime.service is not None:
            runtime.service.store.close()
            runtime.service = None
