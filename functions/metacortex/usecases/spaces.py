"""What a caller may see of the spaces: ``list_spaces`` and ``who_am_i``.

Both read the caller's ``Access`` (its effective levels, computed once where it
was built, and the directory of spaces and people it was built with); only the
counts of ``list_spaces`` read the store, one count per space the caller holds.
A space the caller holds no grant on is not listed: it does not exist for them.
"""

from __future__ import annotations

from typing import Any

from metacortex.access.model import OWNER, Space
from metacortex.access.rules import Access
from metacortex.domain.records import ALL_STATES
from metacortex.storage.base import MemoryFilter, MemoryStore


class Spaces:
    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    def list_spaces(self, access: Access) -> dict[str, Any]:
        """Every space the caller holds, by key, with its level, whether it is the
        default, and how many memories it holds in the states the caller may read."""
        readable = tuple(state for state in ALL_STATES if state in access.readable_states)
        spaces = []
        for key in access.readable_spaces():
            space = access.directory.spaces.get(key) or Space(key, key)
            spaces.append(
                {
                    "key": key,
                    "name": space.name,
                    "description": space.description,
                    "level": access.levels[key].word,
                    "default": key == access.default_space,
                    "memories": self._store.count_memories(
                        MemoryFilter(states=readable, space=key)
                    ),
                }
            )
        return {"spaces": spaces, "default_space": access.default_space}

    @staticmethod
    def who_am_i(access: Access) -> dict[str, Any]:
        """The person and credential behind the call, and what they hold (no store read)."""
        person = access.directory.person(access.person) or OWNER
        return {
            "person": {
                "id": person.id,
                "name": person.name,
                "email": person.email,
                "role": person.role.value,
            },
            "client": access.principal,
            "spaces": [
                {
                    "key": key,
                    "name": (access.directory.spaces.get(key) or Space(key, key)).name,
                    "level": access.levels[key].word,
                }
                for key in access.readable_spaces()
            ],
            "default_space": access.default_space,
        }
