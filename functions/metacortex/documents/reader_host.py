"""The document reader host: ``python -m metacortex.documents.reader_host``.

Started by ``isolation.py`` as a child process. It imports every reader once,
says it is ready, then for each job it receives (pickled ``(data, media_type,
limits)`` from its parent, which it trusts) forks one process that caps its own
address space, extracts, writes the result as JSON and exits. The host waits for
that process and, when it died without an answer (a crash, a kill), answers for
it. One job at a time; the parent kills the whole host at a deadline.

Answers are JSON, never pickles: the process that parsed a hostile file must not
be able to make its parent run code.
"""

from __future__ import annotations

import json
import os
import pickle
import sys
from multiprocessing.connection import Connection
from typing import Any

from metacortex.documents.extract import extract
from metacortex.documents.limits import DocumentLimits
from metacortex.documents.model import ExtractedDocument
from metacortex.documents.wire import document_to_wire
from metacortex.errors import DocumentRefused

READY = b"ready"


def _cap_memory(limit: int) -> None:
    if limit <= 0:
        return
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ImportError, ValueError, OSError):
        pass  # no address-space limits on this platform: the deadline still holds


def answer(data: bytes, media_type: str, limits: DocumentLimits) -> bytes:
    """The JSON answer for one document, in this process."""
    outcome: dict[str, Any]
    try:
        document: ExtractedDocument = extract(data, media_type, limits)
    except DocumentRefused as refused:
        outcome = {"refused": refused.reason, "message": refused.message}
    else:
        outcome = {"document": document_to_wire(document)}
    return json.dumps(outcome).encode()


def _serve(jobs: Connection, answers: Connection) -> None:
    while True:
        try:
            job = jobs.recv_bytes()
        except EOFError:
            return  # the parent is gone
        data, media_type, limits = pickle.loads(job)  # noqa: S301 - from our parent
        reader = os.fork()
        if reader == 0:
            status = 1
            try:
                _cap_memory(limits.address_space)
                answers.send_bytes(answer(data, media_type, limits))
                status = 0
            finally:
                os._exit(status)
        _, status = os.waitpid(reader, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            code = os.waitstatus_to_exitcode(status)
            answers.send_bytes(json.dumps({"crashed": code}).encode())


def main() -> None:
    # Every reader imported here once, so each forked reader starts with them loaded.
    import metacortex.documents.docx
    import metacortex.documents.html
    import metacortex.documents.pdf  # noqa: F401

    jobs = Connection(os.dup(sys.stdin.fileno()), writable=False)
    answers = Connection(os.dup(sys.stdout.fileno()), readable=False)
    # Nothing else may write to the answer pipe: stray prints go to stderr.
    sys.stdout = sys.stderr
    answers.send_bytes(READY)
    _serve(jobs, answers)


if __name__ == "__main__":
    main()
