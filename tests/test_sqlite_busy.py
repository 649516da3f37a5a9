"""A write lock held elsewhere past SQLite's busy timeout: the save is refused as busy,
retryable, naming who holds the lock, and logged without a traceback.

Counterparts: a second process holding the write lock of the same SQLite file
(``tests/sqlite_holders.py``), and the real MCP client (the ``mcp`` SDK) calling
``save_context`` over the app. Takes the busy timeout (10 s) once, for real.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import mcp_types as types
import pytest

from metacortex import errors
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import Access, MemoryService
from metacortex.storage.sqlite import SQLiteStore
from tests.fakes import HashingEmbedder
from tests.server.conftest import make_settings, started
from tests.sqlite_holders import WRITE, holding, release
from tests.tool_results import payload


@pytest.mark.anyio
async def test_a_save_while_another_process_keeps_the_write_lock_is_a_retryable_busy_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = SQLiteStore(tmp_path / "m.sqlite3")
    service = MemoryService(store, HashingEmbedder(), merger=SentenceUnionMerger())
    service.save(Access.admin(), content="Saved before the lock was taken")
    try:
        async with (
            started(make_settings(tmp_path / "data"), service) as harness,
            harness.connect() as admin,
        ):
            with holding(store.path, WRITE) as holder, caplog.at_level(logging.INFO):
                refused = await admin.call_tool("save_context", {"content": "A new note"})
                release(holder)
            saved = await admin.call_tool("save_context", {"content": "A new note"})
    finally:
        store.close()

    assert refused.is_error
    assert isinstance(refused.content[0], types.TextContent)
    error = json.loads(refused.content[0].text)["error"]
    assert error["code"] == "unavailable"
    message = error["message"]
    assert message.startswith(f"the memory store is busy: process {holder.pid} (")
    assert "has held its write lock for more than 10 seconds; nothing was changed" in message
    assert message.endswith("Retry in a moment.")
    assert errors.StoreBusy.retryable  # the domain error behind "unavailable"
    assert payload(saved)["write_status"] == "created"  # the retry, once the lock is free
    assert not [record for record in caplog.records if record.exc_info]
    assert "Traceback" not in caplog.text
    assert "failed unexpectedly" not in caplog.text
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(f"stayed locked by process {holder.pid} (" in w for w in warnings)
