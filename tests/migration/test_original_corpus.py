"""The original's corpus, migrated on the emulator, then used through MCP over loopback.

Counterpart: documents written exactly as the TypeScript MetaCortex writes them
(``original_metacortex.py``, from its source): remember, draft, consolidate and
deprecate calls of the original, a record of its first releases, and one record
in the top-level layout. After ``migrate firestore --apply``, this server, served
on the same Firestore collection and spoken to by the official MCP client, lists,
fetches and searches every record with the topics, states, links
(``superseded_by``, ``derived_from``, ``artifact_refs``) and times the original
had, and deprecate and consolidate keep working on them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from google.cloud import firestore

from metacortex.cli.main import main
from metacortex.errors import FailedPrecondition
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import MemoryService
from metacortex.storage.firestore import FirestoreStore
from tests.fakes import HashingEmbedder
from tests.firestore_support import FirestoreStoreFactory
from tests.migration.original_metacortex import (
    MEMORY_COLLECTION,
)
from tests.migration.support import (
    as_the_original_had_it,
    connected,
    served,
    the_original,
    the_originals_corpus,
)

pytestmark = [pytest.mark.firestore, pytest.mark.anyio]

ALL_STATES = ["active", "wip", "merged", "deprecated"]


def _documents(client: firestore.Client) -> dict[str, dict[str, Any]]:
    return {d.id: d.to_dict() or {} for d in client.collection(MEMORY_COLLECTION).stream()}


def _as_applied(dry_report: str) -> str:
    """A dry run's report in the words of the --apply run that follows it."""
    for dry, applied in (("would update", "updated"), ("would record", "recorded")):
        dry_report = dry_report.replace(dry, applied)
    return dry_report.replace("nothing was written: run again with --apply\n", "")


def migrate(capsys: pytest.CaptureFixture[str], *flags: str) -> str:
    """``metacortex migrate firestore`` as the operator runs it; its report."""
    assert main(["migrate", "firestore", *flags]) == 0
    return capsys.readouterr().out


async def test_the_originals_corpus_migrates_and_answers_through_mcpas_the_original_had_it(
    client: firestore.Client,
    firestore_store_factory: FirestoreStoreFactory,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    ids = the_originals_corpus(the_original(client))
    before = _documents(client)
    expected = {memory_id: as_the_original_had_it(data) for memory_id, data in before.items()}

    dry = migrate(capsys)
    assert _documents(client) == before  # the dry run wrote nothing
    applied = migrate(capsys, "--apply")
    # the dry run reported exactly what --apply wrote
    assert applied == _as_applied(dry)
    assert f"scanned {len(before)} documents; updated {len(before)}\n" in applied
    assert "refused" not in applied
    migrated = _documents(client)
    for memory_id, data in before.items():  # nothing the original wrote is lost
        for key, value in data.items():
            if key not in ("created_at",):  # the top-level record's Timestamp is re-truncated
                assert migrated[memory_id][key] == value, (memory_id, key)

    store = firestore_store_factory(collection=MEMORY_COLLECTION)
    with served(store, tmp_path) as url:
        async with connected(url) as tools:
            listed = {
                item["id"]: state
                for state in ALL_STATES
                for item in (await tools.call("list_context", filter_state=state, limit=100))[
                    "items"
                ]
            }
            assert listed == {i: expected[i]["branch_state"] for i in before}
            for memory_id in before:
                item = (await tools.call("fetch_context", id=memory_id))["item"]
                assert item["content"] == before[memory_id]["content"]
                assert item["metadata"] == expected[memory_id], memory_id

            found = await tools.call(
                "search_context", query="exponential backoff retries", filter_topic="kmp-networking"
            )
            assert found["matches"][0]["id"] == ids["merged"]
            assert {m["id"] for m in found["matches"]}.isdisjoint({ids["draft1"], ids["draft2"]})
            retired = await tools.call(
                "search_context", query="Release 2.0 ships", filter_state="deprecated"
            )
            assert retired["matches"][0]["id"] == ids["wrong"]
            keyword = await tools.call("search_context", query="metacortex-staging")
            assert keyword["matches"][0]["id"] == ids["top-level"]
            recent = await tools.call(
                "list_context",
                filter_topic="release-timeline",
                created_after=expected[ids["right"]]["created_at"],
            )
            assert [item["id"] for item in recent["items"]] == [ids["right"]]

            deprecated = await tools.call(
                "deprecate_context", id=ids["design"], superseding_id=ids["derived"]
            )
            assert deprecated["previous_state"] == "active"
            again = await tools.refused(
                "deprecate_context", id=ids["wrong"], superseding_id=ids["design"]
            )
            assert again["code"] == "conflict"
            merged = await tools.call(
                "consolidate_context",
                topic="ui-settings",
                source_ids=[ids["draft3"], ids["screenshot"]],
            )
            assert sorted(merged["deprecated_ids"]) == sorted([ids["draft3"], ids["screenshot"]])
            source = (await tools.call("fetch_context", id=ids["draft3"]))["item"]["metadata"]
            assert source["superseded_by"] == merged["item"]["merged_id"]
            assert source["branch_state"] == "deprecated"
            retired_source = await tools.refused(
                "consolidate_context", source_ids=[ids["parked"], ids["right"]]
            )
            assert retired_source["code"] == "conflict"

    second = migrate(capsys, "--apply")
    assert f"scanned {len(before) + 1} documents; updated 0\n" in second  # +1: the merge
    assert "embedding model: text-embedding-004:768 already recorded" in second
    assert _documents(client)[ids["design"]]["branch_state"] == "deprecated"  # ours, kept


def test_a_server_configured_for_another_model_refuses_to_start_after_the_migration(
    client: firestore.Client,
    firestore_store_factory: FirestoreStoreFactory,
    capsys: pytest.CaptureFixture[str],
) -> None:
    the_original(client).remember("Uploads time out after 30 seconds.", "kmp-networking")
    migrate(capsys, "--apply")

    store = firestore_store_factory(collection=MEMORY_COLLECTION)
    with pytest.raises(FailedPrecondition) as refused:
        MemoryService(
            store, HashingEmbedder(768, "gemini-embedding-001"), merger=SentenceUnionMerger()
        )
    assert "text-embedding-004:768" in refused.value.message
    assert "gemini-embedding-001:768" in refused.value.message
    assert "metacortex reembed" in refused.value.message


def test_a_model_recorded_by_a_server_started_before_the_migration_is_replaced(
    client: firestore.Client, capsys: pytest.CaptureFixture[str]
) -> None:
    """Trigger: the new server ran once on the unmigrated collection and recorded its own
    model. The collection still holds the original's vectors, so the migration records
    theirs, and that server must re-embed before serving."""
    the_original(client).remember("Uploads time out after 30 seconds.", "kmp-networking")
    gemini = HashingEmbedder(768, "gemini-embedding-001")
    MemoryService(FirestoreStore(client, MEMORY_COLLECTION), gemini, merger=SentenceUnionMerger())

    applied = migrate(capsys, "--apply")

    assert "recorded text-embedding-004:768 in place of gemini-embedding-001:768" in applied
    with pytest.raises(FailedPrecondition, match="metacortex reembed"):
        MemoryService(
            FirestoreStore(client, MEMORY_COLLECTION), gemini, merger=SentenceUnionMerger()
        )
    assert "text-embedding-004:768 already recorded" in migrate(capsys, "--apply")


async def test_a_document_left_in_the_originals_layout_is_refused_not_read_as_active(
    client: firestore.Client,
    firestore_store_factory: FirestoreStoreFactory,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    original = the_original(client)
    good = original.remember("The VPN config lives in the ops vault.", "ops")
    broken = original.remember("Rotate the signing key yearly.", "security", branch_state="wip")
    client.collection(MEMORY_COLLECTION).document(broken).update(
        {"metadata.module_name": firestore.DELETE_FIELD}
    )
    applied = migrate(capsys, "--apply")
    assert f"refused 1 document(s), left as they are:\n  {broken}: no topic" in applied

    with served(firestore_store_factory(collection=MEMORY_COLLECTION), tmp_path) as url:
        async with connected(url) as tools:
            assert (await tools.call("fetch_context", id=good))["item"]["id"] == good
            refused = await tools.refused("fetch_context", id=broken)
    assert refused["code"] == "failed_precondition"
    assert "metacortex migrate firestore" in refused["message"]
