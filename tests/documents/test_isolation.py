"""The reader process: the same result as in-process extraction, refusals carried
across with their reason, killed at the deadline, and its memory capped."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from bench.documents_corpus import paper_content, two_column_pdf
from metacortex.documents import DocumentLimits, extract, extract_isolated
from metacortex.documents.isolation import MAX_IDLE_HOSTS
from metacortex.errors import DocumentRefused
from tests.documents.craft import flate_bomb_pdf, slow_pdf

PDF = "application/pdf"


def test_the_reader_process_gives_what_extraction_in_process_gives() -> None:
    data = two_column_pdf(paper_content(sections=3, paragraphs=2))
    assert extract_isolated(data, PDF, DocumentLimits()) == extract(data, PDF, DocumentLimits())
    markdown = b"# Title\n\nSome *text*.\n"
    assert (
        extract_isolated(markdown, "text/markdown", DocumentLimits()).text == "Title\n\nSome text."
    )


def test_a_refusal_crosses_from_the_reader_process_with_its_reason_and_message() -> None:
    with pytest.raises(DocumentRefused) as refused:
        extract_isolated(b"%PDF-1.7\n" + bytes(range(256)) * 8, PDF, DocumentLimits())
    assert refused.value.reason == "corrupt"
    assert refused.value.message == str(refused.value)
    assert refused.value.code == "invalid_argument"


def _processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line) of every process, from /proc."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue  # ended meanwhile
            found[int(entry.name)] = (int(stat.rsplit(")", 1)[1].split()[1]), command)
    return found


def _reader_hosts() -> set[int]:
    return {
        pid
        for pid, (parent, command) in _processes().items()
        if parent == os.getpid() and "metacortex.documents.reader_host" in command
    }


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")
def test_a_reader_past_its_deadline_is_killed_and_the_document_refused() -> None:
    data = slow_pdf(400_000)
    assert len(data) < 100_000
    started = time.monotonic()
    with pytest.raises(DocumentRefused) as refused:
        extract_isolated(data, PDF, DocumentLimits(seconds=1.0))
    elapsed = time.monotonic() - started
    assert refused.value.reason == "too_slow"
    assert "METACORTEX_DOCUMENT_EXTRACT_SECONDS" in refused.value.message
    assert elapsed < 6  # in this process it reads for about 13 s on this machine
    hosts = _reader_hosts()
    assert len(hosts) <= MAX_IDLE_HOSTS
    busy = {pid for pid, (parent, _) in _processes().items() if parent in hosts}
    assert busy == set()  # the reader that ran past the deadline is gone, with its host
    quick = extract_isolated(b"after", "text/plain", DocumentLimits(seconds=30))
    assert quick.text == "after"


def test_a_reader_that_needs_more_memory_than_its_cap_is_refused_as_a_bomb() -> None:
    bomb = flate_bomb_pdf(600 << 20, level=1)  # past the budget's reach, not the cap's
    limits = DocumentLimits(max_expansion=100_000, memory_bytes=384 << 20, seconds=60)
    with pytest.raises(DocumentRefused) as refused:
        extract_isolated(bomb, PDF, limits)
    assert refused.value.reason == "bomb"
    assert "METACORTEX_DOCUMENT_MEMORY_MB" in refused.value.message


def test_an_oversized_file_is_refused_before_a_process_starts() -> None:
    with pytest.raises(DocumentRefused) as refused:
        extract_isolated(b"x" * 2048, "text/plain", DocumentLimits(max_bytes=1024))
    assert refused.value.reason == "too_large"
