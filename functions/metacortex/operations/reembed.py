"""Rewrite every vector with the configured embedding model, then record its identity."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from metacortex.domain.records import Memory
from metacortex.operations.progress import progress
from metacortex.operations.walk import all_memories, count_memories
from metacortex.providers.base import Embedder
from metacortex.storage.base import MemoryStore, StoreTransaction

if TYPE_CHECKING:
    from metacortex.storage.base import Vector

_BATCH = 64  # memories per write transaction
EMBED_CHUNK = 512  # memories per page and per call to the embedder


@dataclass(frozen=True, slots=True)
class ReembedSummary:
    count: int
    identity: str


def _rewrite(batch: list[Memory], vectors: list[Vector], txn: StoreTransaction) -> None:
    for memory, vector in zip(batch, vectors, strict=True):
        current = txn.get(memory.id)
        if current is not None:
            txn.put(current, vector)


def reembed(store: MemoryStore, embedder: Embedder) -> ReembedSummary:
    """Stop servers using the store first: searches mid-way would mix two models."""
    total = count_memories(store)
    done = 0
    with progress("re-embed", total) as bar:
        for page in all_memories(store, EMBED_CHUNK):
            # One call per page: the local model sorts it by length, so its batches pad
            # little; the writes stay in transactions of _BATCH.
            vectors = embedder.embed_documents([m.retrieval_text for m in page])
            for start in range(0, len(page), _BATCH):
                store.transaction(
                    partial(
                        _rewrite, page[start : start + _BATCH], vectors[start : start + _BATCH]
                    ),
                    space=page[0].space,
                )
            done += len(page)
            bar.advance(len(page))
    store.bind_embedding(embedder.identity, replace=True)
    return ReembedSummary(count=done, identity=embedder.identity.key())
