"""``metacortex import chatgpt|claude EXPORT.zip``: a ChatGPT or Claude data export becomes
documents, one per conversation, its messages passages at their own times (the owner's
command; docs/importing.md).

The export is read and checked whole first (``importing.archive``: a refused archive
writes nothing); then each conversation is added whole or not at all, a bar on a terminal
counting messages. At the end, a summary, one line per kind: imported, updated (continued
since), unchanged (already imported), skipped (by reason) and refused conversations. The
exit status is 1 when any conversation was refused, 2 when the export was.
"""

from __future__ import annotations

import argparse
import time
from datetime import timedelta
from pathlib import Path
from typing import Any, Final

from metacortex.access.registry import read_directory
from metacortex.access.rules import Access
from metacortex.cli.data_dir import add_data_dir_option, settings_for, store_errors
from metacortex.composition import build_service
from metacortex.kernel.events import EventRecorder
from metacortex.operations.progress import progress

EXIT_REFUSED: Final = 1
CREDENTIAL: Final = "cli"  # the credential named on what import writes (Attribution.via)


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "import",
        help="import your ChatGPT or Claude conversations (a data export) as documents",
        description="Import a ChatGPT or Claude data export (the zip file the service "
        "mails you, or its conversations.json): each conversation becomes a document whose "
        "passages are its messages, each at the time it was written. Importing the same "
        "export again adds nothing; a conversation continued since becomes a new version. "
        "Exits 1 when any conversation was refused, 2 when the export was (nothing written).",
    )
    parser.add_argument("kind", choices=("chatgpt", "claude"), help="whose export it is")
    parser.add_argument("export", type=Path, metavar="EXPORT", help="the export's zip file")
    parser.add_argument("--space", help="the space to import into (default: 'default')")
    parser.add_argument("--topic", help="the topic of the passages (default 'general')")
    add_data_dir_option(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from metacortex.importing.limits import ImportLimits
    from metacortex.importing.run import import_export, read_export

    settings = settings_for(args)
    export = read_export(args.export, args.kind, ImportLimits.from_settings(settings))
    with store_errors(settings):
        service = build_service(settings)
    events = EventRecorder(
        retention=timedelta(days=settings.metacortex_event_retention_days),
        retrieval_logging=False,
    )
    try:
        owner = Access.admin(directory=read_directory(service.store), principal=CREDENTIAL)
        space = owner.space(args.space)
        events.start(service.store)
        started = time.perf_counter()
        total = sum(len(c.messages) for c in export.conversations)
        with progress(f"import {args.kind}", total, unit="message") as bar:
            summary = import_export(
                service, owner, export, space=space, topic=args.topic, advance=bar.advance
            )
        events.owner_action(
            action="import",
            status="error" if summary.refused else "ok",
            latency_ms=(time.perf_counter() - started) * 1000,
            request_summary={"via": "cli", "kind": args.kind},
            response_summary=summary.counts(),
            space=space,
        )
    finally:
        events.close()
        service.store.close()
    for line in summary.lines():
        print(line)
    return EXIT_REFUSED if summary.refused else 0
