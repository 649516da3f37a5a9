"""``metacortex erase ID... | --topic T [--space KEY]``: erase memories for good (the
owner's command).

Deprecation keeps a record for history; erasure destroys its content, retrieval
text, embedding, keyword-index entries and write fingerprints and leaves a
tombstone (id, when, by whom). A document goes whole with any of its passages, and a
topic's documents with the topic: every version's record, extracted text, original bytes,
passages and their relations (``usecases/document_erase``). It acts in one space (``--space``, else
``default``). It first says how many memories it will erase and which
consolidated memories took text from them (those stay: erase or correct them
too), then asks (``confirmed``, which ``space remove --erase`` asks with too).
``--yes`` skips the question (for scripts); without a terminal and without
``--yes`` it refuses. Backups taken earlier still hold the records
(docs/CONSOLE.md, "What erase cannot reach").
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Final

from metacortex.access.model import DEFAULT_SPACE
from metacortex.access.registry import Registry
from metacortex.access.rules import Access
from metacortex.cli.data_dir import add_data_dir_option, settings_for
from metacortex.cli.owner_changes import recorded, space_key
from metacortex.composition import build_store
from metacortex.config import Settings
from metacortex.operations.progress import progress
from metacortex.storage.base import MemoryStore
from metacortex.usecases.erase import Erasure, event_summary

ERASED_BY: Final = "owner (metacortex erase)"
EXIT_REFUSED: Final = 2
_SHOWN: Final = 10


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "erase",
        help="erase memories for good (content, vector, index entries; a tombstone stays)",
        description="Erase the named memories, or every memory of a topic, for good: their "
        "content, retrieval text, embedding, keyword-index entries and write fingerprints "
        "are deleted and a tombstone (id, when, by whom) stays. Shows the count and asks "
        "first. Backups and exports taken earlier still hold them. To retire a memory "
        "while keeping its history, deprecate it instead.",
    )
    parser.add_argument("ids", nargs="*", metavar="ID", help="ids of the memories to erase")
    parser.add_argument("--topic", help="erase every memory of this topic, in every state")
    parser.add_argument(
        "--space",
        type=space_key,
        default=DEFAULT_SPACE,
        metavar="KEY",
        help=f"the space the memories or the topic are in (default {DEFAULT_SPACE!r})",
    )
    parser.add_argument("--yes", action="store_true", help="do not ask (for scripts)")
    add_data_dir_option(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if bool(args.ids) == (args.topic is not None):
        print("metacortex erase: give memory ids or --topic TOPIC (one of them)", file=sys.stderr)
        return EXIT_REFUSED
    settings = settings_for(args)
    store = build_store(settings)
    try:
        return _erase(args, settings, store)
    finally:
        store.close()


def _erase(args: argparse.Namespace, settings: Settings, store: MemoryStore) -> int:
    registry = Registry(store)
    registry.space(args.space)  # an unknown space is named before anything else
    owner = Access.admin(directory=registry.directory())
    erasure = Erasure(store)
    plan = erasure.plan_erase(owner, ids=args.ids, topic=args.topic, space=args.space)
    count = plan["count"]
    for tombstone in plan["already_erased"]:
        print(
            f"{tombstone['id']} was already erased on {tombstone['erased_at']} "
            f"by {tombstone['erased_by']}"
        )
    if count == 0 and not plan["documents"]:
        print("nothing to erase")
        return 0
    where = f" of topic {plan['topic']!r}" if plan["topic"] else ""
    if args.space != DEFAULT_SPACE:
        where += f" in the space {args.space!r}"
    what = memories(count)
    if plan["documents"]:
        what += f" and {documents(len(plan['documents']))}"
    print(f"{what}{where} will be erased for good:")
    for record in plan["records"][:_SHOWN]:
        print(f"  {record['id']}  [{record['branch_state']}]  {record['summary']}")
    if count > _SHOWN:
        print(f"  ... and {count - _SHOWN} more")
    _print_documents(plan["documents"])
    _print_derived(plan["derived"], "would keep")
    refused = confirmed("erase", what, yes=args.yes)
    if refused is not None:
        return refused
    summary: dict[str, Any] = {"via": "cli", "selection": "topic" if plan["topic"] else "ids"}
    summary["count"] = count

    def erase() -> dict[str, Any]:
        with erasing(count) as advance:
            return erasure.erase(
                owner,
                erased_by=ERASED_BY,
                ids=plan["ids"] if plan["topic"] is None else (),
                topic=plan["topic"],
                expected_count=count,
                progress=advance,
                space=args.space,
            )

    result = recorded(
        settings, store, "erase", summary, erase, space=args.space, answer=event_summary
    )
    print(f"erased {memories(result['erased_count'])}; a tombstone (id, time, who) stays for each")
    if result["erased_document_ids"]:
        gone = documents(len(result["erased_document_ids"]))
        print(f"erased {gone} whole: record, extracted text, original bytes")
    _print_derived(result["derived"], "kept")
    return 0


def confirmed(command: str, what: str, *, yes: bool) -> int | None:
    """Ask before erasing ``what`` ("3 memories", "3 memories and 1 document"): None to
    go ahead, else the exit status (refused without a terminal, declined by any answer
    but ``yes``)."""
    if yes:
        return None
    if not sys.stdin.isatty():
        print(
            f"metacortex {command}: not erasing {what} without a confirmation: "
            "standard input is not a terminal. Run it in a terminal, or pass --yes.",
            file=sys.stderr,
        )
        return EXIT_REFUSED
    answer = input(f"Erase {what}? This cannot be undone. Type yes to confirm: ")
    if answer.strip().lower() != "yes":
        print("nothing was erased")
        return 1
    return None


@contextmanager
def erasing(count: int) -> Iterator[Callable[[int], None]]:
    """A progress bar (on a terminal) told how many memories are erased so far."""
    with progress("erase", count) as bar:
        done = 0

        def advance(erased: int) -> None:
            nonlocal done
            bar.advance(erased - done)
            done = erased

        yield advance


def _print_derived(derived: list[dict[str, Any]], verb: str) -> None:
    if not derived:
        return
    print(
        f"{memories(len(derived))} {verb} text from them (consolidated from them, or from "
        "such a memory); erase or correct them too:"
    )
    for record in derived:
        print(f"  {record['id']}  [{record['topic']}]  {record['summary']}")


def _print_documents(plan: list[dict[str, Any]]) -> None:
    """The documents that go whole (every version, its text and bytes with its passages)."""
    for document in plan[:_SHOWN]:
        note = "  (an erase of it was cut short: finished now)" if document["unfinished"] else ""
        print(
            f"  document {document['id']}  v{document['version']}  [{document['topic']}]  "
            f"{document['title']}{note}"
        )
    if len(plan) > _SHOWN:
        print(f"  ... and {len(plan) - _SHOWN} more documents")


def memories(count: int) -> str:
    return f"{count} memory" if count == 1 else f"{count} memories"


def documents(count: int) -> str:
    return f"{count} document" if count == 1 else f"{count} documents"
