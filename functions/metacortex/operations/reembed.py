"""Rewrite every vector with the configured embedding model, then record its identity."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from metacortex.domain.records import Memory
from metacortex.operations.progress import progress
from metacortex.operations.walk import all_memories, count_memories
from metacortex.providers.base import Embedder
from metacortex.storage.base import MemoryStore, StoreTransaction

if TYPE_CHECKING:
    from metacortex.storage.base import Vector

_BATCH = 64


@dataclass(frozen=True, slots=True)
class ReembedSummary:
    count: int
    identity: str


def reembed(store: MemoryStore, embedder: Embedder) -> ReembedSummary:
    """Stop servers using the store first: searches mid-way would mix two models."""
    total = count_memories(store)
    done = 0
    with progress("re-embed", total) as bar:
        for page in all_memories(store):
            for start in range(0, len(page), _BATCH):
                batch = page[start : start + _BATCH]
                vectors = embedder.embed_documents([m.retrieval_text for m in batch])

                def write(
                    txn: StoreTransaction,
                    batch: list[Memory] = batch,
                    vectors: list[Vector] = vectors,
                ) -> None:
                    for memory, vector in zip(batch, vectors, strict=True):
                        current = txn.get(memory.id)
                        if current is not None:
                            txn.put(current, vector)

                store.transaction(write)
                done += len(batch)
                bar.advance(len(batch))
    store.bind_embedding(embedder.identity, replace=True)
    return ReembedSummary(count=done, identity=embedder.identity.key())
