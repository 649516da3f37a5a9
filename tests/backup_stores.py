"""Two stores of one backend for backup tests: the one backed up and the one restored into.

``backup_stores`` runs each test on SQLite (two real files) and on the real Firestore
emulator (two collection prefixes of one emulator project, ``tests/firestore_support.py``;
marked ``firestore``). ``open(name)`` opens store ``name``, the same one again on each
call with that name (as a second process would).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from metacortex.storage.base import MemoryStore
from metacortex.storage.sqlite import SQLiteStore

OpenStore = Callable[[str], MemoryStore]


@pytest.fixture(params=["sqlite", pytest.param("firestore", marks=pytest.mark.firestore)])
def backup_stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[OpenStore]:
    opened: list[MemoryStore] = []
    if request.param == "sqlite":

        def make(name: str) -> MemoryStore:
            store = SQLiteStore(tmp_path / f"{name}.sqlite3")
            opened.append(store)
            return store

    else:
        # Closed by the emulator fixture, which opened them.
        factory = request.getfixturevalue("firestore_store_factory")

        def make(name: str) -> MemoryStore:
            store: MemoryStore = factory(collection=f"{name}_vectors")
            return store

    yield make
    for store in opened:
        store.close()
