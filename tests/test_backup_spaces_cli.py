"""``metacortex backup``, ``restore`` and ``reembed`` over several spaces (issue 30 §1:
"backups, restore ... carry spaces"), each a fresh process as the operator runs it
on real SQLite data directories, with the real local embedding model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from metacortex.access.model import Level
from metacortex.access.registry import Registry
from metacortex.domain.records import ALL_STATES, Memory
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import MemoryService
from metacortex.storage.base import MemoryFilter
from metacortex.storage.sqlite import SQLiteStore
from tests.contract.test_spaces import Team
from tests.fakes import HashingEmbedder
from tests.owner_commands import Operator

pytestmark = pytest.mark.slow

W = Level.WRITE


@pytest.fixture
def local_model() -> Any:
    return pytest.importorskip(
        "metacortex.providers.local", reason="LOCAL EMBEDDER NOT AVAILABLE: restore embeds"
    )


def _seed(operator: Operator) -> None:
    """Two spaces beside default (``Team``), memories in each, written by Ann and by the
    owner; one deprecated by the owner (another author for ``changed_by``)."""
    operator.data_dir.mkdir(parents=True)
    with operator.store() as store:
        team = Team(store)
        team.registry.rename_space("family", description="home life")
        service = MemoryService(store, HashingEmbedder(), merger=SentenceUnionMerger())
        ann = team.access(team.ann, {"family": W, "work": W}, "family")
        owner = team.owner()
        service.save(ann, content="The spare key is under the blue pot", space="family")
        old = service.save(ann, content="Dinner is at seven", space="family")["item"]["id"]
        service.deprecate(owner, id=old, space="family")
        service.save(ann, content="Standup is at nine in room 4", space="work")
        service.save(owner, content="The boiler is serviced in October")


def _contents(data_dir: Path) -> dict[str, Any]:
    """Every space (key, name, description) and its records: id, content, state, authors."""
    store = SQLiteStore(data_dir / "metacortex.sqlite3")
    try:
        spaces = Registry(store).directory().spaces

        def records(key: str) -> list[tuple[object, ...]]:
            found: list[Memory] = store.list_page(
                MemoryFilter(states=ALL_STATES, space=key), 100, None
            )
            return sorted(
                (m.id, m.content, m.branch_state.value, m.created_by, m.changed_by) for m in found
            )

        return {key: (space.name, space.description, records(key)) for key, space in spaces.items()}
    finally:
        store.close()


def test_a_backup_restored_into_a_new_data_directory_has_the_same_spaces_records_and_authors(
    tmp_path: Path, local_model: Any
) -> None:
    source = Operator(tmp_path / "source")
    target = Operator(tmp_path / "target")
    target.root.mkdir()
    _seed(source)
    folder = tmp_path / "backup"

    backed_up = source.run("backup", str(folder))
    restored = target.run("restore", str(folder))

    assert backed_up.returncode == 0, backed_up.stderr
    assert restored.returncode == 0, restored.stderr
    assert "restored 4 memories" in restored.stdout
    before, after = _contents(source.data_dir), _contents(target.data_dir)
    assert after == before
    assert [len(before[key][2]) for key in ("default", "family", "work")] == [1, 2, 1]
    ann = {record[3].person for record in before["family"][2]}
    assert len(ann) == 1
    assert ann != {"owner"}


def test_reembed_rewrites_the_vectors_of_every_space_with_the_configured_model(
    tmp_path: Path, local_model: Any
) -> None:
    operator = Operator(tmp_path)
    _seed(operator)  # embedded with the test's hashing model

    ran = operator.run("reembed")

    assert ran.returncode == 0, ran.stderr
    assert f"re-embedded 4 memories with {local_model.IDENTITY.key()}" in ran.stdout
    embedder = local_model.MiniLMEmbedder.load()
    store = SQLiteStore(operator.data_dir / "metacortex.sqlite3")
    try:
        store.bind_embedding(embedder.identity)  # refused if any space kept the old model
        for key in ("default", "family", "work"):
            where = MemoryFilter(states=ALL_STATES, space=key)
            for memory in store.list_page(where, 100, None):
                [vector] = embedder.embed_documents([memory.retrieval_text])
                [best, *_] = store.vector_search(vector, where, 1)
                assert best.memory.id == memory.id
                assert best.score == pytest.approx(1.0, abs=1e-3)
    finally:
        store.close()
