"""Fixtures of the migration tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from google.cloud import firestore

from tests.firestore_support import PROJECT, FirestoreStoreFactory
from tests.migration.original_metacortex import MEMORY_COLLECTION


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def client(
    firestore_store_factory: FirestoreStoreFactory, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> firestore.Client:
    """A client of the wiped emulator, with the environment `metacortex` commands read
    pointing at it (and no stray .env in the working directory)."""
    firestore_store_factory()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", PROJECT)
    monkeypatch.setenv("MEMORY_COLLECTION", MEMORY_COLLECTION)
    return firestore.Client(project=PROJECT)
