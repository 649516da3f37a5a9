"""``metacortex migrate profiles | firestore``: coming from the TypeScript MetaCortex.

See docs/MIGRATING.md. ``profiles`` rewrites MCP_CLIENT_PROFILES_JSON (printed on
stdout, every change explained on stderr). ``firestore`` backfills the corpus in
place: a dry run unless ``--apply``, resumable, idempotent, with a progress bar.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from metacortex.composition import require_cloud_extra
from metacortex.config import Settings
from metacortex.errors import ConfigurationError
from metacortex.migration.embedding_model import ORIGINAL_DEFAULT, parse_identity
from metacortex.migration.profiles import (
    migrate_profiles,
    read_profiles_file,
    read_profiles_text,
)
from metacortex.operations.progress import progress

if TYPE_CHECKING:  # the Firestore step needs the cloud extra; `profiles` must not
    from metacortex.migration.firestore_corpus import CorpusReport

# Documents per batch of `migrate firestore` (firestore_corpus.DEFAULT_PAGE; kept
# here so the parser is built without importing the Google library).
DEFAULT_PAGE = 200


def add_parser(commands: Any) -> None:
    migrate = commands.add_parser(
        "migrate",
        help="move profiles and a Firestore corpus over from the TypeScript MetaCortex",
        description="See docs/MIGRATING.md for what changes and why.",
    )
    steps = migrate.add_subparsers(dest="step", metavar="STEP", required=True)

    profiles = steps.add_parser(
        "profiles",
        help="rewrite the original MCP_CLIENT_PROFILES_JSON for this server",
        description="Reads the original profiles (a file, '-' for stdin, or "
        "MCP_CLIENT_PROFILES_JSON), prints the new value on stdout and explains every "
        "change on stderr. Weak tokens are replaced by new ones, shown once.",
    )
    profiles.add_argument("source", nargs="?", help="a JSON file, or - for standard input")
    profiles.add_argument(
        "--keep-url-tokens",
        action="store_true",
        help="keep accepting ?auth_token= for every profile, as the original did",
    )
    profiles.set_defaults(run=run_profiles)

    corpus = steps.add_parser(
        "firestore",
        help="migrate the original's Firestore corpus in place (dry run unless --apply)",
        description="Moves each memory's metadata map to this server's top-level fields "
        "(the map is kept), turns epoch-millisecond and ISO times into Timestamps, adds the "
        "term index, and records the original's embedding model, page by page. A document "
        "that cannot be migrated faithfully is refused and named, never defaulted. Without "
        "--apply nothing is written and the report is exactly what --apply writes. "
        "Interrupted runs continue where they stopped; --restart starts over.",
    )
    corpus.add_argument("--apply", action="store_true", help="write the changes")
    corpus.add_argument("--restart", action="store_true", help="ignore the saved cursor")
    corpus.add_argument(
        "--page-size", type=int, default=DEFAULT_PAGE, help="documents per batch (1-400)"
    )
    corpus.add_argument(
        "--embedding-model",
        default=ORIGINAL_DEFAULT.key(),
        metavar="MODEL:DIMENSION",
        help="the model that made the original's vectors, recorded so a server configured "
        "for another refuses to start until `metacortex reembed` (default: the original's "
        f"default, {ORIGINAL_DEFAULT.key()}; give its GEMINI_EMBEDDING_MODEL and "
        "GEMINI_EMBEDDING_DIMENSIONS if it set them)",
    )
    corpus.set_defaults(run=run_firestore)


def run_profiles(args: argparse.Namespace) -> int:
    if args.source == "-":
        text = read_profiles_text(sys.stdin.buffer, "standard input")
    elif args.source:
        text = read_profiles_file(Path(args.source))
    else:
        text = os.environ.get("MCP_CLIENT_PROFILES_JSON", "")
        if not text.strip():
            raise ConfigurationError(
                "give the original profiles as a file, '-' for standard input, or in "
                "MCP_CLIENT_PROFILES_JSON"
            )
    result = migrate_profiles(text, keep_url_tokens=args.keep_url_tokens)
    for note in result.notes:
        print(f"  {note}", file=sys.stderr)
    for fresh in result.new_tokens:
        print(
            f"  NEW TOKEN for {fresh.client_id} (shown only this once): {fresh.token}",
            file=sys.stderr,
        )
    print(
        f"metacortex: {len(result.profiles)} profile(s) converted; set the JSON below as "
        "MCP_CLIENT_PROFILES_JSON",
        file=sys.stderr,
    )
    print(result.as_json())
    return 0


def run_firestore(args: argparse.Namespace) -> int:
    if not 1 <= args.page_size <= 400:
        raise ConfigurationError("--page-size must be between 1 and 400")
    embedding = parse_identity(args.embedding_model)
    require_cloud_extra("`metacortex migrate firestore`", "firestore")
    from metacortex.migration.firestore_corpus import backfill, count_documents
    from metacortex.storage.firestore import open_client

    settings = Settings(deployment="cloud")
    client = open_client(settings)
    collection = settings.memory_collection
    total = count_documents(client, collection)
    mode = "applying" if args.apply else "dry run (nothing is written; add --apply)"
    print(f"metacortex: {collection}: {total} documents; {mode}", file=sys.stderr)
    with progress("migrate", total, unit="document") as bar:
        report = backfill(
            client,
            collection,
            embedding=embedding,
            apply=args.apply,
            restart=args.restart,
            page_size=args.page_size,
            advance=bar.advance,
        )
    print(summary(report, embedding.dimension))
    return 0


def summary(report: CorpusReport, dimension: int) -> str:
    """The run's report as the operator reads it; a dry run's equals its --apply's but for
    the verbs."""
    verb = "updated" if report.applied else "would update"
    lines = []
    if report.resumed_after:
        lines.append(f"resumed after document {report.resumed_after}")
    lines.append(f"scanned {report.scanned} documents; {verb} {report.changed}")
    found = [f"{report.layouts[name]} {label}" for name, label in _LAYOUTS if report.layouts[name]]
    if found:
        lines.append("layouts: " + ", ".join(found))
    lines += [f"  {count:>7}  {fix}" for fix, count in sorted(report.fixes.items(), key=_by_count)]
    if report.refused:
        lines.append(f"refused {len(report.refused)} document(s), left as they are:")
        lines += [f"  {document_id}: {why}" for document_id, why in report.refused]
    if report.loops:
        lines.append(
            f"{len(report.loops)} record(s) supersede each other in a loop (migrated; "
            "deprecate_context refuses to extend such a chain): " + ", ".join(sorted(report.loops))
        )
    if report.identity is not None:
        lines.append(report.identity.describe(report.applied))
    if report.missing_embedding or report.other_dimension:
        lines.append(
            f"{report.missing_embedding} without an embedding and {report.other_dimension} "
            f"with another dimension than {dimension}: run `metacortex reembed` next"
        )
    if not report.applied and (report.changed or (report.identity and report.identity.writes)):
        lines.append("nothing was written: run again with --apply")
    return "\n".join(lines)


_LAYOUTS = (
    ("nested", "in the original's layout (metadata map)"),
    ("top-level", "with top-level fields"),
    ("current", "already in this server's layout"),
)


def _by_count(item: tuple[str, int]) -> tuple[int, str]:
    return (-item[1], item[0])
