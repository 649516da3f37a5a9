"""What the service says when Firestore refuses it outright.

A function whose service account lacks the Datastore role gets PERMISSION_DENIED
on every call. The client library's transaction wrapper then tries to roll back
a transaction that never began, and its "The transaction has no transaction ID"
ValueError hid the real refusal (a stack trace instead of a 503 naming it).

Firestore here is a gRPC server on loopback that refuses every call the way
Firestore does; the emulator cannot be made to refuse.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent import futures
from datetime import UTC, datetime, timedelta
from typing import Any

import grpc  # type: ignore[import-untyped]
import pytest
from google.cloud import firestore

from metacortex.domain.records import BranchState, Memory, Modality, new_memory_id
from metacortex.errors import Unavailable
from metacortex.storage.firestore import FirestoreStore
from tests.fakes import HashingEmbedder
from tests.firestore_support import PROJECT

REFUSAL = "Missing or insufficient permissions."
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


class _RefuseEverything(grpc.GenericRpcHandler):  # type: ignore[misc]
    def service(self, handler_call_details: Any) -> Any:
        def refuse(request: bytes, context: Any) -> Any:
            context.abort(grpc.StatusCode.PERMISSION_DENIED, REFUSAL)

        method = str(handler_call_details.method)
        if method.endswith(("/RunQuery", "/BatchGetDocuments", "/RunAggregationQuery")):
            return grpc.unary_stream_rpc_method_handler(refuse)
        return grpc.unary_unary_rpc_method_handler(refuse)


@pytest.fixture
def refusing_store(monkeypatch: pytest.MonkeyPatch) -> Iterator[FirestoreStore]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers([_RefuseEverything()])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    monkeypatch.setenv("FIRESTORE_EMULATOR_HOST", f"127.0.0.1:{port}")
    store = FirestoreStore(firestore.Client(project=PROJECT), "memory_vectors")
    yield store
    store.close()
    server.stop(grace=None)


def test_a_refused_transaction_is_reported_as_the_refusal_not_as_a_failed_rollback(
    refusing_store: FirestoreStore,
) -> None:
    memory = Memory(
        id=new_memory_id(),
        content="a note",
        retrieval_text="a note",
        topic="general",
        branch_state=BranchState.ACTIVE,
        modality=Modality.TEXT,
        created_at=NOW,
        updated_at=NOW,
    )
    [vector] = HashingEmbedder(32).embed_documents([memory.retrieval_text])

    with pytest.raises(Unavailable, match=REFUSAL):
        refusing_store.insert(
            memory, vector, "fp-refused", memory.created_at - timedelta(minutes=15)
        )


def test_a_refused_read_names_the_role_the_operator_must_grant(
    refusing_store: FirestoreStore, caplog: pytest.LogCaptureFixture
) -> None:
    with pytest.raises(Unavailable, match=f"refused this service's credentials: {REFUSAL}"):
        refusing_store.get(new_memory_id())

    [record] = [r for r in caplog.records if r.name == "metacortex.storage.firestore"]
    assert "roles/datastore.user" in record.getMessage()
