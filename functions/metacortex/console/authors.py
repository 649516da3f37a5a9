"""Who wrote a memory and with which client, as the console shows it: the person's name
(read from the people the server holds, no store read) and the client named as the
clients page names it (an OAuth grant by its application and redirect host; one read of
the grants, only when a shown memory was written through one)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from metacortex.access.profiles import ADMIN_PROFILE_ID
from metacortex.clients.grants import PREFIX, client_labels, label_of, list_grants
from metacortex.console.base import ConsoleBase
from metacortex.domain.records import Attribution, Memory

# Credentials that are not client endpoints, in words.
NAMED: Final = {ADMIN_PROFILE_ID: "admin endpoint"}


def clients_of(memories: Iterable[Memory]) -> set[str]:
    return {
        attribution.via
        for memory in memories
        for attribution in (memory.created_by, memory.changed_by)
        if attribution is not None
    }


async def client_names(console: ConsoleBase, clients: Iterable[str]) -> dict[str, str]:
    """Each client id (``created_by.via``) in words."""
    wanted = set(clients)
    labels: dict[str, str] = {}
    if any(client.startswith(PREFIX) for client in wanted):
        grants = await console.call(list_grants, store=console.service.store)
        profiles = (profile.id for profile in console.runtime.profiles.all())
        labels = client_labels(profiles, grants)
    return {client: NAMED.get(client) or label_of(client, labels) for client in wanted}


def author(
    attribution: Attribution | None, names: Mapping[str, str], clients: Mapping[str, str]
) -> dict[str, Any] | None:
    """A person and client as a page shows them; None for a record written before
    attribution (never guessed)."""
    if attribution is None:
        return None
    return {
        "person": attribution.person,
        "name": names.get(attribution.person, attribution.person),
        "client": attribution.via,
        "client_label": clients.get(attribution.via, attribution.via),
    }
