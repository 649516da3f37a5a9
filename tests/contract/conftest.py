"""The store contract suite runs every test once per backend.

SQLite always runs. Firestore runs on the real emulator when Java and the
emulator JAR exist (``tests/firestore_support.py`` starts it), else it is skipped
with a loud reason.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import Access, MemoryService
from metacortex.storage.base import MemoryStore
from metacortex.storage.sqlite import SQLiteStore
from tests.fakes import HashingEmbedder

StoreFactory = Callable[[], MemoryStore]


@pytest.fixture(params=["sqlite", pytest.param("firestore", marks=pytest.mark.firestore)])
def store_factory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreFactory]:
    """Opens the SAME store again on each call (like a second server process would)."""
    opened: list[MemoryStore] = []
    if request.param == "sqlite":
        path = tmp_path / "memories.sqlite3"

        def make() -> MemoryStore:
            store = SQLiteStore(path)
            opened.append(store)
            return store

        yield make
    else:
        firestore_factory: StoreFactory = request.getfixturevalue("firestore_store_factory")

        def make() -> MemoryStore:
            store = firestore_factory()
            opened.append(store)
            return store

        yield make
    for store in opened:
        store.close()


@pytest.fixture
def store(store_factory: StoreFactory) -> MemoryStore:
    return store_factory()


@pytest.fixture
def embedder() -> HashingEmbedder:
    return HashingEmbedder()


@pytest.fixture
def service(store: MemoryStore, embedder: HashingEmbedder) -> MemoryService:
    return MemoryService(store, embedder, merger=SentenceUnionMerger())


@pytest.fixture
def admin() -> Access:
    return Access.admin()
