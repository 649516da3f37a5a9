"""Extraction in a child process that is killed at the deadline.

Trigger: pdfminer.six is pure Python; a hostile or merely huge PDF can keep it busy
for minutes, and a thread cannot be stopped from outside. Why a process: SIGKILL
ends it at once and wherever it is, the kernel takes back all its memory, and its
address space is capped (``RLIMIT_AS``) so an inflating bomb fails with a
``MemoryError`` there instead of pushing the server out of memory; a crash of a C
parser (lxml, zlib) ends only the child. Outcome: every document costs one fork
from a fork server that has already imported the readers (a few milliseconds,
``docs/DOCUMENTS.md``), and the caller's thread blocks until the result, the
deadline or the child's death. Call it from a worker thread, never the event loop.
"""

from __future__ import annotations

import multiprocessing
from multiprocessing.connection import Connection
from multiprocessing.context import SpawnContext
from typing import Final, cast

from metacortex.documents.extract import extract
from metacortex.documents.limits import DocumentLimits
from metacortex.documents.model import ExtractedDocument
from metacortex.errors import DocumentRefused

_METHOD: Final = (
    "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
)
# Both contexts have the same API; typeshed knows the fork server's only on POSIX.
_CONTEXT: Final = cast(SpawnContext, multiprocessing.get_context(_METHOD))
# The fork server imports these once, so each child starts with the readers loaded.
_READERS: Final = [
    "metacortex.documents.extract",
    "metacortex.documents.pdf",
    "metacortex.documents.docx",
    "metacortex.documents.html",
    "metacortex.documents.markdown",
]
if _METHOD == "forkserver":
    multiprocessing.get_context("forkserver").set_forkserver_preload(_READERS)


def _cap_memory(limit: int) -> None:
    if limit <= 0:
        return
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ImportError, ValueError, OSError):
        pass  # no address-space limits on this platform: the deadline still holds


def _child(sender: Connection, data: bytes, media_type: str, limits: DocumentLimits) -> None:
    _cap_memory(limits.memory_bytes)
    outcome: ExtractedDocument | DocumentRefused
    try:
        outcome = extract(data, media_type, limits)
    except DocumentRefused as refused:
        outcome = refused
    sender.send(outcome)
    sender.close()


def extract_isolated(data: bytes, media_type: str, limits: DocumentLimits) -> ExtractedDocument:
    """``extract`` in a child process: its result, its refusal, or ``DocumentRefused``
    (``too_slow``) when it runs past ``limits.seconds`` (the child is killed)."""
    limits.check_size(len(data))  # before paying for a process
    receiver, sender = _CONTEXT.Pipe(duplex=False)
    child = _CONTEXT.Process(
        target=_child,
        args=(sender, data, media_type, limits),
        name="metacortex-document-reader",
        daemon=True,
    )
    try:
        child.start()
        sender.close()
        if not receiver.poll(limits.seconds):
            raise DocumentRefused(
                "too_slow",
                f"reading the document took longer than {limits.seconds:g} seconds "
                "(METACORTEX_DOCUMENT_EXTRACT_SECONDS): split it or raise the limit",
            )
        try:
            outcome = receiver.recv()
        except EOFError:
            child.join()
            raise DocumentRefused(
                "corrupt",
                f"the reader stopped on this document (exit code {child.exitcode}): "
                "it is damaged or built to break readers",
            ) from None
    finally:
        if child.is_alive():
            child.kill()
        if child.pid is not None:
            child.join()
        receiver.close()
    if isinstance(outcome, DocumentRefused):
        raise outcome
    if not isinstance(outcome, ExtractedDocument):
        raise TypeError(f"the reader sent {type(outcome).__name__}")
    return outcome
