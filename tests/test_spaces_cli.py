"""``metacortex space add|list|rename|remove`` as an operator runs them (issue 30 §4):
each a fresh process on a real SQLite data directory; what it prints is what the
store then holds, and the levels it prints are those a server computes."""

from __future__ import annotations

from pathlib import Path

import pytest

from metacortex.access.registry import Registry
from metacortex.auth.tokens import GRANT
from metacortex.documents.isolation import shut_down
from metacortex.domain.records import ALL_STATES
from metacortex.kernel.events import MEMORY_EVENTS
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import Access, MemoryService
from metacortex.storage.base import MemoryFilter
from tests.documents.craft import pdf_of_pages
from tests.fakes import HashingEmbedder
from tests.owner_commands import Operator
from tests.terminal_support import window


@pytest.fixture
def operator(tmp_path: Path) -> Operator:
    return Operator(tmp_path)


def _save(operator: Operator, space: str, *contents: str) -> list[str]:
    """Memories saved by the owner into ``space``, as the tools would."""
    with operator.store() as store:
        owner = Access.admin(directory=Registry(store).directory())
        service = MemoryService(store, HashingEmbedder(), merger=SentenceUnionMerger())
        return [
            str(service.save(owner, content=text, space=space)["item"]["id"]) for text in contents
        ]


def _team(operator: Operator) -> None:
    """Spaces family and work; Ann (writer) in both, her client in both, default family."""
    operator.json("space", "add", "family", "--name", "Family", "--description", "home")
    operator.json("space", "add", "work")
    operator.json(
        "person", "add", "ann@example.com", "--name", "Ann", "--role", "writer",
        "--space", "family", "--space", "work:read",
    )  # fmt: skip
    operator.json(
        "client", "add", "ann-laptop", "--person", "ann@example.com",
        "--space", "family", "--space", "work", "--default-space", "work",
    )  # fmt: skip


def test_space_add_list_and_rename_show_its_members_and_the_levels_clients_get_there(
    operator: Operator,
) -> None:
    _team(operator)
    _save(operator, "family", "The spare key is under the blue pot")

    renamed = operator.json("space", "rename", "work", "--name", "Office")
    listed = {space["key"]: space for space in operator.json("space", "list")}

    assert renamed["space"]["name"] == "Office"
    assert list(listed) == ["default", "family", "work"]
    assert listed["family"] == {
        "key": "family",
        "name": "Family",
        "description": "home",
        "created_at": listed["family"]["created_at"],
        "memories": 1,
        "members": [
            {"id": listed["family"]["members"][0]["id"], "email": "ann@example.com",
             "name": "Ann", "level": "write"},
        ],
        "clients": [{"id": "ann-laptop", "person": "ann@example.com", "level": "write"}],
    }  # fmt: skip
    # Ann is a member of work at read: her client, granted write there, gets read.
    assert listed["work"]["clients"] == [
        {"id": "ann-laptop", "person": "ann@example.com", "level": "read"}
    ]
    assert listed["default"]["members"] == listed["default"]["clients"] == []


def test_space_add_refuses_a_key_that_is_not_one_and_a_key_that_exists(
    operator: Operator,
) -> None:
    operator.json("space", "add", "work")

    assert operator.refused("space", "add", "work") == ("metacortex: a space 'work' already exists")
    bad = operator.run("space", "add", "Family Trip")
    assert bad.returncode == 2
    assert "'family-trip'" in bad.stderr
    assert operator.refused("space", "rename", "work") == (
        "metacortex: give the space 'work' a new --name, a new --description, or both"
    )


def test_a_space_holding_memories_is_not_removed_and_the_refusal_says_how_many_and_what_to_run(
    operator: Operator,
) -> None:
    operator.json("space", "add", "work")
    _save(operator, "work", "Standup at nine", "Retro on Fridays")

    line = operator.refused("space", "remove", "work")

    assert line == (
        "metacortex: the space 'work' holds 2 memories, and only an empty space is removed; "
        f"to erase them for good with it, run {operator.spelled('space remove work --erase')}"
    )
    assert "work" in {space["key"] for space in operator.json("space", "list")}


def test_a_space_holding_only_a_scanned_document_is_not_empty_and_erase_takes_it_whole(
    operator: Operator,
) -> None:
    """Issue 37: a document without text has no passage, and the space was called empty."""
    operator.json("space", "add", "work")
    scan = pdf_of_pages([None])  # a scanned page: kept, nothing to index
    with operator.store() as store:
        service = MemoryService(store, HashingEmbedder(), merger=SentenceUnionMerger())
        owner = Access.admin(directory=Registry(store).directory())
        lease = service.create_document(
            owner, data=scan, media_type="application/pdf", space="work"
        )["document"]
    shut_down()

    line = operator.refused("space", "remove", "work")
    ran = operator.run("space", "remove", "work", "--erase", "--yes")
    operator.json("space", "add", "work")

    assert line.startswith("metacortex: the space 'work' holds 1 document, and only an empty")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith("1 document in the space 'work' will be erased for good")
    assert "; 1 document erased whole;" in ran.stdout
    with operator.store() as store:
        assert store.get_document(lease["id"], space="work") is None
        assert store.document_bytes(lease["id"], space="work") is None
        assert store.count_documents(space="work") == 0


def test_the_default_space_is_never_removed(operator: Operator) -> None:
    assert operator.refused("space", "remove", "default", "--erase", "--yes").startswith(
        "metacortex: the default space cannot be removed"
    )


def test_space_remove_with_erase_erases_its_memories_and_leaves_no_member_or_grant_behind(
    operator: Operator,
) -> None:
    _team(operator)
    at_work = _save(operator, "work", "Standup at nine", "Retro on Fridays")
    at_home = _save(operator, "family", "Dinner at eight")
    with operator.store() as store:  # a connector Ann approved for both spaces
        store.auth_put(
            GRANT,
            "g1",
            {"preset": "read", "spaces": {"work": "read", "family": "read"},
             "default_space": "work", "person": "ann@example.com"},
            None,
        )  # fmt: skip

    removed = operator.json("space", "remove", "work", "--erase", "--yes")
    operator.json("space", "add", "work")  # made again: its old members get nothing
    ann = operator.json("person", "list")[1]

    assert removed["erased"] == 2
    assert removed["members"] == [{"id": ann["id"], "email": "ann@example.com"}]
    assert removed["clients"] == [
        {"id": "ann-laptop", "levels": {"family": "write"}, "default_space": "family"}
    ]
    assert removed["oauth_grants"] == ["g1"]
    assert ann["member_of"] == {"family": "write"}
    assert ann["clients"][0]["levels"] == {"family": "write"}
    with operator.store() as store:
        assert store.get_many(at_work, space="work") == [None, None]
        assert sorted(store.tombstones(at_work, space="work")) == sorted(at_work)
        assert store.get(at_home[0], space="family") is not None
        grant = store.auth_get(GRANT, "g1")
        events = [e for e in store.read_events(MEMORY_EVENTS) if e["tool_name"] == "space_remove"]
    assert grant is not None
    assert (grant["spaces"], grant["default_space"]) == ({"family": "read"}, "family")
    assert [(e["space"], e["request"], e["response"]["erased_count"]) for e in events] == [
        ("work", {"via": "cli", "erase": True}, 2)
    ]


def test_space_remove_erase_without_a_terminal_and_without_yes_refuses_and_erases_nothing(
    operator: Operator,
) -> None:
    operator.json("space", "add", "work")
    kept = _save(operator, "work", "Standup at nine")

    ran = operator.run("space", "remove", "work", "--erase")

    assert ran.returncode == 2
    assert ran.stdout == "1 memory in the space 'work' will be erased for good with it\n"
    assert ran.stderr.strip() == (
        "metacortex space remove: not erasing 1 memory without a confirmation: standard "
        "input is not a terminal. Run it in a terminal, or pass --yes."
    )
    with operator.store() as store:
        assert store.get(kept[0], space="work") is not None


def test_on_a_terminal_space_remove_erase_asks_as_erase_does_and_removes_after_yes(
    operator: Operator,
) -> None:
    operator.json("space", "add", "work")
    _save(operator, "work", "Standup at nine", "Retro on Fridays")
    argv = operator.argv("space", "remove", "work", "--erase")

    with window(argv, env=operator.env, cwd=operator.root) as shown:
        asked = shown.expect("Erase 2 memories? This cannot be undone. Type yes to confirm: ")
        shown.type("yes\n")
        said = shown.expect(" s\n")
        status = shown.finish()

    assert status == 0, shown.shown
    assert "2 memories in the space 'work' will be erased for good with it" in asked
    assert "space 'work' removed from the SQLite store" in said
    assert "; 2 memories erased;" in said
    with operator.store() as store:
        assert "work" not in Registry(store).directory().spaces
        assert store.count_memories(MemoryFilter(states=ALL_STATES, space="work")) == 0


def test_a_space_is_not_removed_while_a_client_or_a_grant_holds_only_it_and_nothing_changes(
    operator: Operator,
) -> None:
    operator.json("space", "add", "work")
    operator.json("client", "add", "desk", "--space", "work")
    with operator.store() as store:
        store.auth_put(GRANT, "g2", {"preset": "read", "spaces": {"work": "read"}}, None)

    line = operator.refused("space", "remove", "work")

    assert line == (
        "metacortex: the space 'work' was not removed: client 'desk' holds only the space "
        f"'work': grant it another ({operator.spelled('client grant desk KEY --default')}) "
        f"or remove it ({operator.spelled('client remove desk')}); the OAuth grant g2 holds "
        f"only the space 'work': revoke it ({operator.spelled('oauth grants revoke g2')})"
    )
    [desk] = operator.json("client", "list")
    assert desk["levels"] == {"work": "write"}
