"""The owner's first steps on a new store, on the Memories page: counts and a checklist
(connect an application, the first memory, invite someone, ingest documents), each
step with its console page and its command (with a Copy button), ticked when done.

Shown to the owner while the page's space holds fewer than ``NEW_STORE_MEMORIES``
memories and a step is left; never on "All spaces" nor to a person."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from starlette.requests import Request

from metacortex.clients.grants import list_grants
from metacortex.console.base import ConsoleBase, access_for
from metacortex.console.clients import manager
from metacortex.console.switcher import all_spaces

# A space with this many memories is no longer new: the checklist steps aside.
NEW_STORE_MEMORIES: Final = 20


@dataclass(frozen=True, slots=True)
class Step:
    key: str
    title: str
    done: bool
    count: int
    counted: str  # "2 applications connected"
    href: str
    page: str  # the link's words
    command: str | None


@dataclass(frozen=True, slots=True)
class Checklist:
    steps: list[Step]

    @property
    def left(self) -> int:
        return sum(not step.done for step in self.steps)


def _plural(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


async def checklist(console: ConsoleBase, request: Request, memories: int) -> Checklist | None:
    """The checklist of the page's space holding ``memories``, or None when it is not
    shown (see the module's note)."""
    access = access_for(request)
    if not access.is_owner or all_spaces(request) or memories >= NEW_STORE_MEMORIES:
        return None
    space = access.space()
    store = console.service.store
    clients = len(await console.call(manager(console).list))
    clients += len(await console.call(list_grants, store=store))
    people = sum(not person.is_owner for person in access.directory.people.values())
    documents = await console.call(store.count_documents, space=space)
    steps = [
        Step(
            "connect",
            "Connect an application",
            clients > 0,
            clients,
            _plural(clients, "application connected", "applications connected"),
            console.url(request, "/console/clients"),
            "Clients",
            f"metacortex client add my-agent --space {space}",
        ),
        Step(
            "memory",
            "Save the first memory",
            memories > 0,
            memories,
            _plural(memories, "memory", "memories"),
            console.url(request, "/console/new"),
            "Add a memory",
            None,
        ),
        Step(
            "invite",
            "Invite someone",
            people > 0,
            people,
            _plural(people, "person besides you", "people besides you"),
            console.url(request, "/console/people"),
            "People",
            f"metacortex person add ann@example.com --name Ann --role reader --space {space}"
            " && metacortex person invite ann@example.com",
        ),
        Step(
            "documents",
            "Add documents",
            documents > 0,
            documents,
            _plural(documents, "document", "documents"),
            console.url(request, "/console/documents"),
            "Documents",
            f"metacortex ingest ~/notes --space {space}",
        ),
    ]
    found = Checklist(steps)
    return found if found.left else None
