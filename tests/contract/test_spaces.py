"""Spaces on every store: nothing crosses a space, levels hold, authors are kept and
another person's memory is never retired behind their back (issue 30)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import pytest

from metacortex.access.model import Grants, Level, Person, Role
from metacortex.access.profiles import Profile, with_directory
from metacortex.access.registry import Registry
from metacortex.domain.records import (
    ALL_STATES,
    BranchState,
    Memory,
    Modality,
    new_memory_id,
    utc_now,
)
from metacortex.errors import Forbidden, NotFound
from metacortex.service import Access, MemoryService
from metacortex.storage.base import Event, MemoryFilter, MemoryStore
from tests.fakes import HashingEmbedder

R, W = Level.READ, Level.WRITE


class Team:
    """A household on one store: the owner, Ann (writer) and Ben (reader); spaces
    ``family`` and ``work`` beside ``default``."""

    def __init__(self, store: MemoryStore) -> None:
        self.registry = Registry(store)
        self.registry.add_space("family", "Family")
        self.registry.add_space("work", "Work")
        self.ann = self.registry.add_person(
            "Ann@Example.com", "Ann", Role.WRITER, {"family": W, "work": W}
        )
        self.ben = self.registry.add_person("ben@example.com", "Ben", Role.READER, {"family": W})

    def access(self, person: Person, levels: Mapping[str, Level], default: str) -> Access:
        profile = Profile(
            id=f"laptop-{person.name.lower()}",
            token_sha256=None,
            allowed_tools=frozenset({"save_context", "search_context"}),
            readable_states=frozenset(ALL_STATES),
            default_state=BranchState.ACTIVE,
            may_write_lifecycle=True,
            allowed_origins=frozenset(),
            allow_url_token=False,
            rate_limit_per_minute=1000,
            person=person.id,
            grants=Grants(MappingProxyType(dict(levels)), default),
        )
        return with_directory(profile, self.registry.directory()).access

    def owner(self) -> Access:
        return Access.admin(directory=self.registry.directory())


@pytest.fixture
def team(store: MemoryStore) -> Team:
    return Team(store)


def _save(service: MemoryService, access: Access, content: str, **kw: object) -> str:
    return str(service.save(access, content=content, **kw)["item"]["id"])  # type: ignore[arg-type]


def _ids(found: Mapping[str, object], key: str) -> list[str]:
    return [str(entry["id"]) for entry in found[key]]  # type: ignore[attr-defined]


def test_nothing_saved_in_one_space_is_found_from_another(
    service: MemoryService, team: Team
) -> None:
    owner = team.owner()
    at_home = _save(service, owner, "The spare key is under the blue pot", space="family")
    at_work = _save(service, owner, "The spare key to the lab is at reception", space="work")

    def search(space: str) -> list[str]:
        return _ids(service.search(owner, query="spare key", space=space), "matches")

    assert search("family") == [at_home]
    assert search("work") == [at_work]
    assert search("default") == []
    assert _ids(service.list_memories(owner, space="family"), "items") == [at_home]
    with pytest.raises(NotFound, match="no memory with id"):
        service.fetch(owner, id=at_home, space="work")
    assert service.fetch(owner, id=at_home, space="family")["item"]["metadata"]["space"] == (
        "family"
    )
    assert (
        service.search(owner, query="spare key", space="family")["applied_filters"]["space"]
        == "family"
    )


def test_the_same_words_saved_in_two_spaces_are_two_memories(
    service: MemoryService, team: Team
) -> None:
    owner = team.owner()
    first = service.save(owner, content="Dinner at eight", space="family")
    second = service.save(owner, content="Dinner at eight", space="work")
    again = service.save(owner, content="Dinner at eight", space="family")

    assert second["write_status"] == "created"
    assert second["item"]["id"] != first["item"]["id"]
    assert again["write_status"] == "duplicate"
    assert again["item"]["id"] == first["item"]["id"]


def test_a_space_not_granted_answers_exactly_as_one_that_does_not_exist(
    service: MemoryService, team: Team
) -> None:
    ben = team.access(team.ben, {"family": W}, "family")
    answers = []
    for space in ("work", "no-such-space"):
        with pytest.raises(NotFound) as raised:
            service.search(ben, query="anything", space=space)
        answers.append(raised.value.to_payload()["error"]["message"].replace(space, "<s>"))
    assert answers[0] == answers[1]
    assert "no space '<s>' is available to this credential" in answers[0]


def test_a_reader_may_read_a_space_but_not_write_there_whatever_the_grant_says(
    service: MemoryService, team: Team
) -> None:
    owner = team.owner()
    _save(service, owner, "Grandma's birthday is in May", space="family")
    ben = team.access(team.ben, {"family": W}, "family")

    assert ben.levels == {"family": R}
    assert len(service.search(ben, query="birthday")["matches"]) == 1
    with pytest.raises(Forbidden, match="may only read the space 'family'"):
        service.save(ben, content="Ben was here")


def test_a_grant_on_a_space_the_person_is_not_a_member_of_gives_nothing(team: Team) -> None:
    ben = team.access(team.ben, {"family": W, "work": W}, "family")
    assert dict(ben.levels) == {"family": R}


def test_a_deactivated_persons_credential_holds_no_space(team: Team) -> None:
    team.registry.change_person(team.ann.id, active=False)
    ann = team.access(team.ann, {"family": W}, "family")
    assert dict(ann.levels) == {}


def test_what_a_person_saves_names_them_and_their_credential(
    service: MemoryService, team: Team
) -> None:
    ann = team.access(team.ann, {"family": W}, "family")
    saved = service.save(ann, content="Piano lessons move to Tuesday")["item"]
    assert saved["metadata"]["created_by"] == {
        "person_id": team.ann.id,
        "name": "Ann",
        "client": "laptop-ann",
    }
    assert saved["metadata"]["changed_by"] is None
    found = service.search(ann, query="piano lessons")["matches"][0]
    assert found["metadata"]["created_by"]["name"] == "Ann"


def test_the_admin_tokens_saves_name_the_owner(service: MemoryService, admin: Access) -> None:
    item = service.save(admin, content="Old fact")["item"]
    assert item["metadata"]["created_by"] == {
        "person_id": "owner",
        "name": "Owner",
        "client": "default",
    }


def test_a_memory_written_before_attribution_is_reported_unattributed_and_anyone_retires_it(
    service: MemoryService, store: MemoryStore, embedder: HashingEmbedder, team: Team
) -> None:
    now = utc_now()
    old = Memory(
        id=new_memory_id(),
        content="Written by an older MetaCortex",
        retrieval_text="Written by an older MetaCortex",
        topic="general",
        branch_state=BranchState.ACTIVE,
        modality=Modality.TEXT,
        created_at=now,
        updated_at=now,
        space="family",
    )
    [vector] = embedder.embed_documents([old.retrieval_text])
    store.insert(old, vector, "fingerprint-of-an-old-write", now)
    ann = team.access(team.ann, {"family": W}, "family")

    meta = service.fetch(ann, id=old.id)["item"]["metadata"]
    assert (meta["created_by"], meta["changed_by"]) == (None, None)
    assert "contested_ids" not in service.deprecate(ann, id=old.id)


def test_deprecating_someone_elses_memory_leaves_it_active_and_says_so(
    service: MemoryService, team: Team
) -> None:
    ann = team.access(team.ann, {"family": W, "work": W}, "family")
    owner = team.owner()
    hers = _save(service, ann, "The car needs new tyres")
    theirs = _save(service, owner, "The car needs new tyres and an oil change", space="family")
    other_writer = team.registry.add_person("cy@example.com", "Cy", Role.WRITER, {"family": W})
    cy = team.access(other_writer, {"family": W}, "family")

    result = service.deprecate(cy, id=hers, superseding_id=theirs)

    assert result["contested_ids"] == [hers]
    assert "written by someone else" in result["message"]
    assert service.fetch(ann, id=hers)["item"]["metadata"]["branch_state"] == "active"
    # Its author retires it as before, and it records who did.
    done = service.deprecate(ann, id=hers, superseding_id=theirs)
    assert "contested_ids" not in done
    meta = service.fetch(ann, id=hers)["item"]["metadata"]
    assert (meta["branch_state"], meta["changed_by"]["name"]) == ("deprecated", "Ann")


def test_the_owner_retires_anyones_memory(service: MemoryService, team: Team) -> None:
    ann = team.access(team.ann, {"family": W}, "family")
    hers = _save(service, ann, "Swimming is on Wednesdays")
    owner = team.owner()
    result = service.deprecate(owner, id=hers, space="family")
    assert "contested_ids" not in result
    assert result["item"]["branch_state"] == "deprecated"


def test_a_consolidation_keeps_others_memories_and_is_idempotent_all_the_same(
    service: MemoryService, team: Team
) -> None:
    ann = team.access(team.ann, {"family": W}, "family")
    cy_person = team.registry.add_person("cy@example.com", "Cy", Role.WRITER, {"family": W})
    cy = team.access(cy_person, {"family": W}, "family")
    mine = [_save(service, ann, f"Holiday plan part {n}.", draft=True) for n in (1, 2)]
    theirs = _save(service, cy, "Holiday plan part 3.", draft=True)

    first = service.consolidate(ann, source_ids=[*mine, theirs], topic="holiday")
    again = service.consolidate(ann, source_ids=[*mine, theirs], topic="holiday")

    assert first == again
    assert first["contested_ids"] == [theirs]
    assert first["deprecated_ids"] == mine
    assert service.fetch(cy, id=theirs)["item"]["metadata"]["branch_state"] == "wip"


def test_a_moved_memory_keeps_its_id_and_leaves_its_old_space(
    service: MemoryService, store: MemoryStore, team: Team
) -> None:
    owner = team.owner()
    moved = _save(service, owner, "Renew the passport before June", space="family")

    store.move(moved, "family", "work")

    with pytest.raises(NotFound):
        service.fetch(owner, id=moved, space="family")
    assert service.fetch(owner, id=moved, space="work")["item"]["id"] == moved
    assert _ids(service.search(owner, query="passport", space="work"), "matches") == [moved]
    assert service.search(owner, query="passport", space="family")["matches"] == []
    again = service.save(owner, content="Renew the passport before June", space="family")
    assert again["write_status"] == "created"


def test_an_erased_memory_of_another_space_is_simply_not_there(
    service: MemoryService, team: Team
) -> None:
    owner = team.owner()
    gone = _save(service, owner, "A note to erase", space="family")
    service.erase(owner, ids=[gone], erased_by="test", space="family")

    with pytest.raises(NotFound, match="erased"):
        service.fetch(owner, id=gone, space="family")
    with pytest.raises(NotFound) as raised:
        service.fetch(owner, id=gone, space="work")
    assert raised.value.message == f"no memory with id {gone!r}"


def test_topics_and_counts_are_per_space(
    service: MemoryService, store: MemoryStore, team: Team
) -> None:
    owner = team.owner()
    _save(service, owner, "Bake bread", topic="kitchen", space="family")
    _save(service, owner, "Ship the release", topic="releases", space="work")

    assert [t.topic for t in service.topics(owner, space="family")] == ["kitchen"]
    assert store.count_memories(MemoryFilter(states=(BranchState.ACTIVE,), space="work")) == 1
    listed = service.list_spaces(owner)
    assert [(s["key"], s["memories"]) for s in listed["spaces"]] == [
        ("default", 0),
        ("family", 1),
        ("work", 1),
    ]


def test_who_am_i_names_the_person_their_credential_and_their_spaces(
    service: MemoryService, team: Team
) -> None:
    ann = team.access(team.ann, {"family": W, "work": R}, "work")
    assert service.who_am_i(ann) == {
        "person": {"id": team.ann.id, "name": "Ann", "email": "ann@example.com", "role": "writer"},
        "client": "laptop-ann",
        "spaces": [
            {"key": "family", "name": "Family", "level": "write"},
            {"key": "work", "name": "Work", "level": "read"},
        ],
        "default_space": "work",
    }


def test_a_topic_leaves_the_events_only_once_no_space_holds_it(
    service: MemoryService, store: MemoryStore, team: Team
) -> None:
    owner = team.owner()
    at_home = _save(service, owner, "Plan the surprise party", topic="surprise", space="family")
    at_work = _save(service, owner, "Book the room for the party", topic="surprise", space="work")
    store.record_events(
        [
            Event(
                "memory_events",
                utc_now(),
                None,
                {"event_type": "tool_call", "request": {"topic": "surprise"}},
            )
        ]
    )

    def topics_in_events() -> list[object]:
        return [e["request"]["topic"] for e in store.read_events("memory_events")]

    service.erase(owner, ids=[at_home], erased_by="test", space="family")
    assert topics_in_events() == ["surprise"]
    service.erase(owner, ids=[at_work], erased_by="test", space="work")
    assert topics_in_events() == ["[erased]"]
