"""``metacortex person add|list|role|deactivate|reactivate|grant|ungrant`` as an
operator runs them (issue 30 §4): each a fresh process on a real SQLite data
directory. Each prints the person's own levels and the levels their clients get
now, as ``access.profiles.with_directory`` computes them for a server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from metacortex.kernel.events import MEMORY_EVENTS
from tests.owner_commands import Operator


@pytest.fixture
def operator(tmp_path: Path) -> Operator:
    return Operator(tmp_path)


def test_person_add_makes_a_member_at_what_the_role_allows_and_list_shows_them(
    operator: Operator,
) -> None:
    operator.json("space", "add", "family")
    operator.json("space", "add", "work")

    ben = operator.json(
        "person", "add", "Ben@Example.com", "--name", "Ben", "--role", "reader",
        "--space", "family", "--space", "work:write",
    )["person"]  # fmt: skip
    listed = operator.json("person", "list")

    assert ben["email"] == "ben@example.com"
    assert ben["member_of"] == {"family": "read", "work": "write"}
    # A reader never writes, whatever the membership says.
    assert ben["levels"] == {"family": "read", "work": "read"}
    assert [(p["name"], p["role"]) for p in listed] == [("Owner", "owner"), ("Ben", "reader")]
    assert listed[0]["levels"] == {"default": "write", "family": "write", "work": "write"}


def test_role_grant_and_ungrant_print_the_levels_the_persons_clients_get_now(
    operator: Operator,
) -> None:
    operator.json("space", "add", "family")
    operator.json("space", "add", "work")
    operator.json(
        "person", "add", "ann@example.com", "--name", "Ann", "--role", "writer",
        "--space", "family", "--space", "work",
    )  # fmt: skip
    operator.json(
        "client", "add", "ann-laptop", "--person", "ann@example.com",
        "--space", "family", "--space", "work", "--default-space", "family",
    )  # fmt: skip

    reader = operator.json("person", "role", "ann@example.com", "reader")["person"]
    writer = operator.json("person", "role", "ann@example.com", "writer")["person"]
    ungranted = operator.json("person", "ungrant", "ann@example.com", "work")["person"]
    granted = operator.json("person", "grant", "ann@example.com", "work:read")["person"]

    def client_levels(person: dict[str, Any]) -> Any:
        [client] = person["clients"]
        return client["levels"]

    assert client_levels(reader) == {"family": "read", "work": "read"}
    assert client_levels(writer) == {"family": "write", "work": "write"}
    assert client_levels(ungranted) == {"family": "write"}
    assert client_levels(granted) == {"family": "write", "work": "read"}
    assert granted["member_of"] == {"family": "write", "work": "read"}


def test_deactivate_and_reactivate_say_their_clients_are_refused_then_let_in(
    operator: Operator,
) -> None:
    operator.json("person", "add", "cy@example.com", "--name", "Cy", "--role", "writer",
                  "--space", "default")  # fmt: skip
    operator.json("client", "add", "cy-phone", "--person", "cy@example.com")

    off = operator.run("person", "deactivate", "cy@example.com")
    on = operator.json("person", "reactivate", "cy@example.com")["person"]

    assert off.returncode == 0, off.stderr
    assert off.stdout.splitlines()[1:] == [
        "Cy <cy@example.com>  writer  deactivated  spaces: default:write",
        "  client cy-phone [refused: its person is deactivated] may use: no space "
        "(default 'default')",
    ]
    assert on["active"] is True
    assert on["clients"] == [
        {"id": "cy-phone", "status": "active", "levels": {"default": "write"},
         "default_space": "default"},
    ]  # fmt: skip
    with operator.store() as store:
        events = [e for e in store.read_events(MEMORY_EVENTS) if e["event_type"] == "owner_action"]
    person_events = [e for e in events if e["tool_name"].startswith("person_")]
    assert [e["tool_name"] for e in person_events] == [
        "person_add",
        "person_deactivate",
        "person_reactivate",
    ]
    assert {e["response"]["person_id"] for e in person_events} == {on["id"]}
    assert "cy@example.com" not in repr(events)
    assert "Cy" not in repr([e["request"] for e in events])


def test_person_errors_are_one_line_that_says_what_to_run(operator: Operator) -> None:
    operator.json("person", "add", "ann@example.com", "--name", "Ann", "--role", "writer")

    assert operator.refused("person", "role", "nobody@example.com", "reader") == (
        f"metacortex: no person 'nobody@example.com'; {operator.spelled('person list')} "
        "shows the people"
    )
    assert operator.refused("person", "grant", "ann@example.com", "work") == (
        f"metacortex: no space 'work'; create it with {operator.spelled('space add work')}"
    )
    assert operator.refused(
        "person", "add", "ANN@example.com", "--name", "Ann 2", "--role", "reader"
    ) == ("metacortex: a person with the email 'ann@example.com' already exists")
    assert operator.refused("person", "deactivate", "owner") == (
        "metacortex: the owner keeps every right and cannot be deactivated"
    )
    assert operator.refused("person", "ungrant", "ann@example.com", "default") == (
        "metacortex: Ann is not a member of the space 'default'"
    )
    owner_role = operator.run("person", "role", "ann@example.com", "owner")
    assert owner_role.returncode == 2
    assert "invalid choice: 'owner' (choose from 'writer', 'reader')" in owner_role.stderr
