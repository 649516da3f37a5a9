"""``metacortex ingest PATH...``: files and folders become documents (the owner's command).

Each file (a folder is walked, recursively, taking the files whose extension names a
document type: ``documents.media_type_for_path``) is added as ``create_document`` adds
one, with its absolute path as the source: a file already stored with the same bytes is
skipped (by sha256, before it is read), a changed file replaces its earlier version
(its unchanged passages are kept). A bar on a terminal shows passages embedded per
second. At the end, a summary: added, replaced, skipped (unchanged) and refused files,
each refusal with its reason; the exit status is 1 when any file was refused.

``--dry-run`` says what would happen without reading any file's content or changing
anything: added, replaced or unchanged by hash and source, refused by type and size.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Final

from metacortex.access.registry import read_directory
from metacortex.access.rules import Access
from metacortex.cli.data_dir import add_data_dir_option, settings_for, store_errors
from metacortex.composition import build_service
from metacortex.config import Settings
from metacortex.errors import DocumentRefused, MetaCortexError
from metacortex.kernel.events import EventRecorder
from metacortex.operations.progress import progress
from metacortex.service import MemoryService

EXIT_REFUSED: Final = 1
# The credential named on what ingest writes (Attribution.via).
CREDENTIAL: Final = "cli"


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "ingest",
        help="add files and folders as documents (passages that search finds and cites)",
        description="Add files (text, Markdown, CSV, HTML, PDF, DOCX) and folders (walked "
        "for those, recursively) as documents: each is kept and cut into passages that "
        "search finds, citing its title and page. A file already stored is skipped; a "
        "changed one replaces its earlier version. Exits 1 when any file was refused.",
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", type=Path, help="files or folders")
    parser.add_argument("--space", help="the space to add them to (default: 'default')")
    parser.add_argument("--topic", help="the topic of their passages (default 'general')")
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="say what would be added, replaced, skipped or refused; read and change nothing",
    )
    add_data_dir_option(parser)
    parser.set_defaults(run=run)


@dataclass
class Outcome:
    added: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)
    passages: int = 0

    def summary(self) -> dict[str, int]:
        return {
            "added": len(self.added),
            "replaced": len(self.replaced),
            "skipped": len(self.skipped),
            "refused": len(self.refused),
            "passages": self.passages,
        }


@dataclass(frozen=True, slots=True)
class Candidate:
    path: Path
    media_type: str | None  # None: not a document type


def candidates(paths: Sequence[Path]) -> Iterator[Candidate]:
    """Every file named, and every document file under every folder named (sorted, links
    to folders not followed); a missing path is yielded to be refused."""
    from metacortex.documents import media_type_for_path

    for path in paths:
        if path.is_dir():
            for root, folders, files in os.walk(path):
                folders.sort()
                for name in sorted(files):
                    found = Path(root) / name
                    kind = media_type_for_path(found)
                    if kind is not None and not name.startswith("."):
                        yield Candidate(found, kind)
        else:
            yield Candidate(path, media_type_for_path(path))


def run(args: argparse.Namespace) -> int:
    settings = settings_for(args)
    with store_errors(settings):
        service = build_service(settings)
    try:
        owner = Access.admin(directory=read_directory(service.store), principal=CREDENTIAL)
        space = owner.space(args.space)
        if args.dry_run:
            outcome = _plan(service, owner, args.paths, space)
        else:
            outcome = _ingest(service, owner, args, space, settings)
    finally:
        _shut_down_readers()
        service.store.close()
    _print(outcome, args.dry_run)
    return EXIT_REFUSED if outcome.refused else 0


def _ingest(
    service: MemoryService, owner: Access, args: argparse.Namespace, space: str, settings: Settings
) -> Outcome:
    outcome = Outcome()
    events = EventRecorder(
        retention=timedelta(days=settings.metacortex_event_retention_days),
        retrieval_logging=False,
    )
    events.start(service.store)
    started = time.perf_counter()
    try:
        with progress("ingest", None, unit="passage") as bar:
            for candidate in candidates(args.paths):
                _one(service, owner, candidate, args.topic, space, outcome, bar.advance)
        events.owner_action(
            action="ingest",
            status="error" if outcome.refused else "ok",
            latency_ms=(time.perf_counter() - started) * 1000,
            request_summary={"via": "cli", "paths": len(args.paths)},
            response_summary=outcome.summary(),
            space=space,
        )
    finally:
        events.close()
    return outcome


def _one(
    service: MemoryService,
    owner: Access,
    candidate: Candidate,
    topic: str | None,
    space: str,
    outcome: Outcome,
    advance: Any,
) -> None:
    shown = str(candidate.path)
    refusal = _refusal(candidate, service)
    if refusal is not None:
        outcome.refused.append((shown, refusal))
        return
    done = 0

    def embedded(count: int) -> None:
        nonlocal done
        advance(count - done)
        done = count

    try:
        result = service.create_document(
            owner,
            data=candidate.path.read_bytes(),
            media_type=candidate.media_type,
            source=str(candidate.path.resolve()),
            topic=topic,
            space=space,
            progress=embedded,
        )
    except DocumentRefused as refused:
        outcome.refused.append((shown, f"{refused.reason}: {refused.message}"))
        return
    except MetaCortexError as error:
        outcome.refused.append((shown, error.message))
        return
    except OSError as error:
        outcome.refused.append((shown, f"cannot read it: {error.strerror}"))
        return
    status = result["write_status"]
    {"created": outcome.added, "replaced": outcome.replaced}.get(status, outcome.skipped).append(
        shown
    )
    outcome.passages += result["passages"]["added"] + result["passages"]["kept"]
    if result.get("message"):
        print(f"{shown}: {result['message']}", file=sys.stderr)


def _refusal(candidate: Candidate, service: MemoryService) -> str | None:
    """Why a file is refused before anything reads it (type, existence, size), or None."""
    if not candidate.path.exists():
        return "no such file or folder"
    if candidate.media_type is None:
        return "unsupported_type: not a document type (.txt .md .csv .tsv .html .pdf .docx are)"
    size = candidate.path.stat().st_size
    try:
        service.document_limits.check_size(size)
    except DocumentRefused as refused:
        return f"{refused.reason}: {refused.message}"
    return None


def _plan(service: MemoryService, owner: Access, paths: Sequence[Path], space: str) -> Outcome:
    """What ingest would do, by hash and source only."""
    outcome = Outcome()
    for candidate in candidates(paths):
        shown = str(candidate.path)
        refusal = _refusal(candidate, service)
        if refusal is not None:
            outcome.refused.append((shown, refusal))
            continue
        digest = hashlib.sha256(candidate.path.read_bytes()).hexdigest()
        store = service.store
        if store.find_document(space=space, sha256=digest) is not None:
            outcome.skipped.append(shown)
        elif store.find_document(space=space, source=str(candidate.path.resolve())) is not None:
            outcome.replaced.append(shown)
        else:
            outcome.added.append(shown)
    return outcome


def _print(outcome: Outcome, dry_run: bool) -> None:
    would = "would be " if dry_run else ""
    for label, files in (
        ("added", outcome.added),
        ("replaced", outcome.replaced),
        ("skipped (unchanged)", outcome.skipped),
    ):
        for name in files:
            print(f"{label}: {name}")
    for name, reason in outcome.refused:
        print(f"refused: {name}: {reason}")
    counts = (
        f"{len(outcome.added)} {would}added, {len(outcome.replaced)} {would}replaced, "
        f"{len(outcome.skipped)} skipped as unchanged, {len(outcome.refused)} refused"
    )
    passages = "" if dry_run else f"; {outcome.passages} passages"
    print(f"{counts}{passages}")


def _shut_down_readers() -> None:
    readers = sys.modules.get("metacortex.documents.isolation")
    if readers is not None:
        readers.shut_down()
