"""A small team on one store, with one credential of each kind, for the spaces suites.

- Spaces ``family``, ``work``, ``lab`` and ``vault`` beside ``default``.
- Ann, a writer, is a member of all four at write. Her credentials (a stored
  client endpoint, an OAuth grant, ``metacortex stdio --client``) are granted
  ``family`` at write (their default: "own space"), ``work`` at read (the grant
  caps her membership: "granted read"), ``lab`` at write ("granted write") and
  not ``vault`` ("not granted", though she is a member there). ``attic`` exists
  nowhere ("missing"); it has as many letters as ``vault``, so even the lengths
  of the two answers match.
- Every space holds one memory that says where its locker code is, saved by the
  owner: the same words everywhere, so a search that crossed a space would show;
  and one in a topic of its own (``only-<key>``), for the topic lists.

Everything is the product's own API (``Registry``, the stored-client record,
``TokenStore``); nothing here is a second implementation of a rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Final

from metacortex.access import scopes, stored_clients
from metacortex.access.model import DEFAULT_SPACE, Level, Person, Role
from metacortex.access.profiles import new_token, token_digest
from metacortex.access.registry import Registry
from metacortex.auth.tokens import TokenStore
from metacortex.service import Access, MemoryService
from metacortex.storage.base import MemoryStore
from metacortex.tool_catalogue import model_tools

SPACES: Final = {"family": "Family", "work": "Work", "lab": "Lab", "vault": "Vault"}
OWN: Final = "family"
READ_ONLY: Final = "work"
WRITABLE: Final = "lab"
NOT_GRANTED: Final = "vault"
MISSING: Final = "attic"
assert len(NOT_GRANTED) == len(MISSING)
GRANTS: Final = {OWN: "write", READ_ONLY: "read", WRITABLE: "write"}
CLIENT_ID: Final = "ann-laptop"
OAUTH_CLIENT: Final = "https://agent.example/client.json"
LOCKER_QUERY: Final = "where is the locker code"


def locker_note(space: str) -> str:
    return f"The locker code for {space} is kept in the grey binder"


@dataclass
class Team:
    store: MemoryStore
    registry: Registry
    ann: Person
    # space -> the id of its locker memory (saved by the owner)
    lockers: dict[str, str]
    # space -> every memory id known to be there (the suites add what they save)
    ids: dict[str, set[str]] = field(default_factory=dict)

    def owner(self) -> Access:
        return Access.admin(directory=self.registry.directory())

    def space_of(self, memory_id: str) -> str | None:
        return next((key for key, ids in self.ids.items() if memory_id in ids), None)

    def remember(self, space: str, memory_id: str) -> None:
        self.ids.setdefault(space, set()).add(memory_id)


def build_team(store: MemoryStore, service: MemoryService) -> Team:
    registry = Registry(store)
    for key, name in SPACES.items():
        registry.add_space(key, name)
    ann = registry.add_person(
        "ann@example.com", "Ann", Role.WRITER, {key: Level.WRITE for key in SPACES}
    )
    owner = Access.admin(directory=registry.directory())
    lockers: dict[str, str] = {}
    own_topics: dict[str, str] = {}
    for key in (DEFAULT_SPACE, *SPACES):
        saved = service.save(owner, content=locker_note(key), topic="lockers", space=key)
        lockers[key] = str(saved["item"]["id"])
        # A topic no other space has: a topic list that crossed a space would show it.
        note = service.save(owner, content=f"Notes kept in {key}", topic=f"only-{key}", space=key)
        own_topics[key] = str(note["item"]["id"])
    team = Team(store, registry, ann, lockers)
    for key in lockers:
        team.remember(key, lockers[key])
        team.remember(key, own_topics[key])
    return team


def client_entry(
    client_id: str,
    token: str,
    person: str,
    spaces: Mapping[str, str],
    default_space: str,
    **extra: Any,
) -> dict[str, Any]:
    """An ``MCP_CLIENT_PROFILES_JSON`` entry with every tool, every state, lifecycle
    rights and ChatGPT's data tools: only the spaces limit it."""
    return {
        "id": client_id,
        "token_sha256": token_digest(token).hex(),
        "allowedTools": list(model_tools()),
        "allowedFilterStates": ["active", "wip", "merged", "deprecated"],
        "mayWriteLifecycle": True,
        "chatgptDataTools": True,
        "person": person,
        "spaces": dict(spaces),
        "defaultSpace": default_space,
        **extra,
    }


def store_client(store: MemoryStore, entry: Mapping[str, Any]) -> None:
    """Keep a client endpoint in the store as ``clients.manage`` does (the record, then
    the marker every server process watches)."""
    assert store.auth_create(
        stored_clients.KIND, str(entry["id"]), stored_clients.record(entry, created_by="test"), None
    )
    stored_clients.mark_changed(store)


def add_ann_client(team: Team, client_id: str = CLIENT_ID) -> str:
    """Ann's client endpoint (also what ``metacortex stdio --client`` serves); its token."""
    token = new_token()
    store_client(team.store, client_entry(client_id, token, team.ann.email or "", GRANTS, OWN))
    return token


def mint_grant(
    store: MemoryStore,
    resource: str,
    person: str,
    spaces: Mapping[str, str],
    default_space: str,
    *,
    preset: str = "curator",
) -> tuple[str, str]:
    """An OAuth grant as the consent page records it (the approver, the spaces chosen,
    ChatGPT's data tools) and an access token for ``resource``, issued as the token
    endpoint issues one after the code exchange: (grant id, access token)."""
    tokens = TokenStore(store, timedelta(hours=1), timedelta(days=1))
    granted = (scopes.READ, scopes.WRITE)
    grant_id = tokens.create_grant(
        {
            "client_id": OAUTH_CLIENT,
            "client_name": "Agent",
            "redirect_host": "agent.example",
            "resource": resource,
            "scopes": list(granted),
            "preset": preset,
            "chatgpt_tools": True,
            "person": person,
            "spaces": dict(spaces),
            "default_space": default_space,
        }
    )
    issued = tokens.issue(grant_id, OAUTH_CLIENT, resource, granted, refresh=False)
    return grant_id, issued.access_token
