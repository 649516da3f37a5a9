"""``metacortex backup | restore | reembed``: the store's data, outside the server.

Run them with the server stopped (or, for backup, while it runs: reads are
consistent per page). Each shows a progress bar on a terminal.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Final

from metacortex.cli.data_dir import add_data_dir_option, settings_for, store_errors
from metacortex.composition import build_embedder, build_store
from metacortex.config import Settings
from metacortex.errors import ConfigurationError
from metacortex.operations.backup import BackupError, export_portable, restore_portable
from metacortex.operations.reembed import reembed
from metacortex.storage.sqlite import SQLiteStore

# restore: some records were refused, the others restored (2 is a refusal of the whole).
EXIT_SOME_REFUSED: Final = 1


def add_parser(commands: Any) -> None:
    backup = commands.add_parser(
        "backup",
        help="write a portable backup (NDJSON + manifest), or a full copy with --full",
        description="Portable: every memory in every state, every relation and every document "
        "(its text and bytes) as deterministic NDJSON plus a manifest with each file's "
        "sha256 (no vectors; restore re-embeds and keeps ids). "
        "--full (SQLite only): a consistent copy of the whole database, vectors and events "
        "included. On Firestore use a managed export for a full backup (docs/DEPLOYMENT.md).",
    )
    backup.add_argument("destination", type=Path, help="folder (portable) or file (--full)")
    backup.add_argument("--full", action="store_true", help="copy the SQLite database file")
    add_data_dir_option(backup)
    backup.set_defaults(run=run_backup)

    restore = commands.add_parser(
        "restore",
        help="restore a portable backup into the configured store (re-embeds, keeps ids)",
        description="Restores every memory, document and relation of a portable backup "
        "(this server's, or the TypeScript MetaCortex's backup:memories folder), embedding "
        "memories with the configured model. Ids already present are skipped, so it can be "
        "re-run; a relation whose end is in neither the backup nor the store is skipped and "
        "counted. Records the tools "
        "would refuse (bad ids, control characters, oversized content, unknown values, "
        "supersession loops) are refused and listed; the others are restored, and the "
        "command exits with status 1 saying how many were refused.",
    )
    restore.add_argument(
        "source", type=Path, help="a folder written by `metacortex backup` (or the original's)"
    )
    add_data_dir_option(restore)
    restore.set_defaults(run=run_restore)

    again = commands.add_parser(
        "reembed",
        help="re-embed every memory with the configured embedding model",
        description="Rewrites every vector with the configured model, then records that "
        "model as the store's. Stop servers using the store first.",
    )
    add_data_dir_option(again)
    again.set_defaults(run=run_reembed)


def run_backup(args: argparse.Namespace) -> int:
    settings = settings_for(args)
    with store_errors(settings):
        store = build_store(settings)
    try:
        if isinstance(store, SQLiteStore):
            # A backup reads everything anyway: one that silently skipped a damaged page,
            # or copied it as it is, would be found out only when it is needed.
            store.check_integrity()
        if args.full:
            if not isinstance(store, SQLiteStore):
                raise ConfigurationError(
                    "--full copies the SQLite file; for Firestore run a managed export: "
                    "gcloud firestore export gs://BUCKET/PATH (docs/DEPLOYMENT.md)"
                )
            try:
                store.copy_to(args.destination)
            except FileExistsError:
                raise ConfigurationError(
                    f"{args.destination} already exists (a file or a link): a full backup is "
                    "always a new file; give a new file name, or remove the old copy first"
                ) from None
            print(f"full copy written to {args.destination}")
            return 0
        try:
            with store_errors(settings):
                summary = export_portable(store, args.destination, _identity_label(settings))
        except BackupError as error:
            raise ConfigurationError(str(error)) from None
        print(
            f"{summary.count} memories written to {summary.directory} (sha256 {summary.sha256}), "
            f"with {summary.relations} relations and {summary.documents} document versions"
        )
        return 0
    finally:
        store.close()


def run_restore(args: argparse.Namespace) -> int:
    settings = settings_for(args)
    store = build_store(settings)
    try:
        embedder = build_embedder(settings)
        store.bind_embedding(embedder.identity)
        try:
            summary = restore_portable(store, embedder, args.source)
        except BackupError as error:
            raise ConfigurationError(str(error)) from None
        relations, documents = summary.relations, summary.documents
        print(
            f"restored {summary.restored} memories from {summary.source}; "
            f"{summary.skipped_existing} already present; {len(summary.refused)} refused\n"
            f"documents: restored {documents.restored}; {documents.skipped_existing} already "
            f"present; {len(documents.refused)} refused\n"
            f"relations: restored {relations.restored}; {relations.skipped_existing} already "
            f"present; {relations.missing_ends} skipped (an end is not in the store); "
            f"{len(relations.refused)} refused"
        )
        refused = summary.all_refused
        for refusal in refused:
            print(f"  refused: {refusal}")
        if refused:
            # A script must not read a restore that left records behind as a success.
            print(
                f"metacortex restore: {len(refused)} of the backup's records were "
                "refused (listed above) and are not in the store; the others were restored. "
                "Fix or remove those lines and run it again (restored ids are skipped)",
                file=sys.stderr,
            )
            return EXIT_SOME_REFUSED
        return 0
    finally:
        store.close()


def run_reembed(args: argparse.Namespace) -> int:
    settings = settings_for(args)
    store = build_store(settings)
    try:
        summary = reembed(store, build_embedder(settings))
        print(f"re-embedded {summary.count} memories with {summary.identity}")
        return 0
    finally:
        store.close()


def _identity_label(settings: Settings) -> str:
    if settings.embeddings_kind == "gemini":
        return f"{settings.gemini_embedding_model}:{settings.gemini_embedding_dimensions}"
    if settings.embeddings_kind == "openai":
        from metacortex.providers.openai_models import embedding_dimension

        return f"{settings.openai_embedding_model}:{embedding_dimension(settings)}"
    from metacortex.providers.local import DIMENSION, MODEL_NAME

    return f"{MODEL_NAME}:{DIMENSION}"
