"""The home page: memories newest first (paged both ways, with where you are in the total),
or those containing the words typed in its keyword box (best match first, the words
marked); the topics with their counts, the filters (who wrote them, with which client,
when), and a selection (select all) to deprecate, promote, move, consolidate or erase;
one clear state when the store is empty. The owner's "All spaces" lists every space's
memories merged by time (``console.listing``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from starlette.requests import Request
from starlette.responses import Response

from metacortex.access.model import DEFAULT_SPACE
from metacortex.clients.grants import list_grants
from metacortex.console import listing
from metacortex.console.authors import author, client_names, clients_of
from metacortex.console.base import ConsoleBase, access_for
from metacortex.console.excerpt import excerpt
from metacortex.console.filtering import Filters, form_context, read_filters
from metacortex.console.home import checklist
from metacortex.console.listing import NOBODY, decode_position, encode_position
from metacortex.console.switcher import all_spaces, space_labels
from metacortex.domain import limits
from metacortex.domain.occurrence import TimeSource
from metacortex.domain.records import ALL_STATES, BranchState, Memory
from metacortex.errors import MetaCortexError
from metacortex.owner import Session
from metacortex.retrieval.text import query_terms
from metacortex.service import Access
from metacortex.usecases.reading import memory_filter

PAGE_SIZE: Final = 25
# The keyword box lists at most this many memories (the best keyword matches).
MAX_WORD_MATCHES: Final = 100
STATE_WORDS: Final = {
    "active": "active",
    "wip": "draft",
    "merged": "merged",
    "deprecated": "deprecated",
}
Counts = dict[str, dict[BranchState, int]]


def row(memory: Memory, href: str, matched: Iterable[str] = (), **extra: Any) -> dict[str, Any]:
    """What a listing shows of a record: a title and a preview with the ``matched`` terms
    marked, its facts, and the link to its page (``href``). ``extra``: its author
    (``authors.author``) and, listed from several spaces, its space."""
    return {
        "id": memory.id,
        "href": href,
        "content": memory.content,
        "excerpt": excerpt(memory.content, matched),
        "topic": memory.topic,
        "state": memory.branch_state.value,
        "created_at": memory.created_at,
        # When it happened, shown when it is known apart from when it was saved.
        "happened": (
            memory.occurrence.to_wire()
            if memory.occurrence.source is not TimeSource.SAVED
            else None
        ),
        "origin": memory.provenance.origin.value if memory.provenance.origin else None,
        "image": memory.modality.value != "text",
        "score": None,
        "breakdown": None,
        "author": None,
        "space": None,
        **extra,
    }


def record_link(console: ConsoleBase, request: Request, memory_id: str, **query: str) -> str:
    """A record's page; ``query`` (a search's ``q`` and filters, or ``words``) lets that
    page say why the record was found."""
    return console.url(request, f"/console/memories/{memory_id}", **query)


async def rows(
    console: ConsoleBase,
    request: Request,
    memories: list[Memory],
    matched: Iterable[str] = (),
    found: Mapping[str, str] | None = None,
    extras: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Listing rows with their authors (names and clients read once for the page); from
    several spaces, each row names its space and links to the record in it. ``found``:
    the search or words the records' pages should explain; ``extras``: more per id."""
    access = access_for(request)
    clients = await client_names(console, clients_of(memories))
    several = all_spaces(request)
    labels = space_labels(access.directory, sorted(access.levels)) if several else {}
    out = []
    for memory in memories:
        query = dict(found or {})
        if several:
            query["space"] = memory.space
        by = author(memory.created_by, access.names, clients)
        if by is not None:
            by["person_href"] = console.url(request, "/console", person=by["person"])
            by["client_href"] = console.url(request, "/console", client=by["client"])
        out.append(
            row(
                memory,
                record_link(console, request, memory.id, **query),
                matched,
                author=by,
                space=labels.get(memory.space) if several else None,
                **(extras or {}).get(memory.id, {}),
            )
        )
    return out


def count_words(state: str, count: int) -> str:
    """ "3 active", "1 draft", "2 drafts", "4 deprecated"."""
    if state == BranchState.WIP.value:
        return f"{count} draft" if count == 1 else f"{count} drafts"
    return f"{count} {state}"


def listed_spaces(request: Request) -> tuple[list[str], int]:
    """The spaces a listing reads: the page's space, or for "All spaces" every space of
    the caller's (``default`` first, then by key) up to ``listing.MAX_SPACES``; and how
    many were left out."""
    access = access_for(request)
    if not all_spaces(request):
        return [access.space()], 0
    keys = sorted(access.levels, key=lambda key: (key != DEFAULT_SPACE, key))
    return keys[: listing.MAX_SPACES], max(0, len(keys) - listing.MAX_SPACES)


async def topic_counts(console: ConsoleBase, spaces: list[str]) -> Counts:
    """Topics and their counts per state over ``spaces`` (a name in several, summed)."""
    merged: Counts = {}
    for space in spaces:
        counts = await console.call(console.service.store.topic_counts, space=space)
        for name, by_state in counts.items():
            into = merged.setdefault(name, {})
            for state, count in by_state.items():
                into[state] = into.get(state, 0) + count
    return dict(sorted(merged.items()))


def _start(request: Request) -> int:
    value = request.query_params.get("start", "1")
    return max(1, int(value)) if value.isdigit() and len(value) < 10 else 1


def _topics(counts: Counts, current: str | None) -> list[dict[str, Any]]:
    return [
        {
            "name": name,
            "total": sum(by_state.values()),
            "counts": [
                (state.value, count_words(state.value, by_state[state]))
                for state in ALL_STATES
                if by_state.get(state)
            ],
            "current": name == current,
        }
        for name, by_state in counts.items()
    ]


def _what(filters: Filters) -> str:
    """The listing's noun phrase: "active memories", "memories in every state"."""
    state = filters.state
    if isinstance(state, list):
        return "memories in every state"
    return f"{STATE_WORDS.get(state, state)} memories"


async def _author_choices(console: ConsoleBase, access: Access, filters: Filters) -> dict[str, Any]:
    """The "Written by" and "Client" menus: the owner picks among every person and
    client; a person among the members of the space and their own clients."""
    directory = access.directory
    space = access.default_space
    people = [
        person
        for person in sorted(
            directory.people.values(), key=lambda p: (not p.is_owner, p.name.casefold(), p.id)
        )
        if access.is_owner or person.level_in(space) is not None
    ]
    profiles = [
        profile.id
        for profile in console.runtime.profiles.all()
        if access.is_owner or profile.person in (access.person, _email(access))
    ]
    clients = [*profiles, "console", *(["stdio"] if access.is_owner else [])]
    named = await client_names(console, clients)
    if access.is_owner:
        grants = await console.call(list_grants, store=console.service.store)
        named |= await client_names(console, [grant.client_id for grant in grants])
    chosen = filters.given.get("client")
    if chosen and chosen not in named:
        named[chosen] = (await client_names(console, [chosen]))[chosen]
    return {
        "people_choices": [(p.id, p.name) for p in people]
        + [(NOBODY, "nobody recorded (written before attribution)")],
        "client_choices": sorted(named.items(), key=lambda pair: pair[1].casefold()),
    }


def _email(access: Access) -> str | None:
    person = access.directory.person(access.person)
    return person.email if person is not None else None


async def browse(console: ConsoleBase, request: Request, session: Session) -> Response:
    access = access_for(request)
    spaces, left_out = listed_spaces(request)
    counts = await topic_counts(console, spaces)
    several = all_spaces(request)
    all_total = sum(sum(by_state.values()) for by_state in counts.values())
    home = await checklist(console, request, all_total)
    if not counts:
        return console.render(
            request,
            session,
            "browse.html",
            {
                "title": "Memories",
                "empty": True,
                "several": several,
                "left_out": left_out,
                "home": home,
            },
        )
    filters = read_filters(request, counts)
    query = _here_query(request)
    author = filters.author
    chosen = await client_names(console, [author.client] if author.client else [])
    context: dict[str, Any] = {
        "title": "Memories",
        "empty": False,
        "several": several,
        "spaces_read": len(spaces),
        "left_out": left_out,
        "selectable": not several and console.may_write(request),
        "topics": _topics(counts, filters.topic),
        "all_total": all_total,
        "home": home,
        "drafts": sum(by_state.get(BranchState.WIP, 0) for by_state in counts.values()),
        "items": [],
        "total": 0,
        "start": 1,
        "what": _what(filters),
        "words": filters.words,
        "by": _by_words(filters, access, chosen),
        "scan": None,
        "capped": False,
        "older_url": None,
        "newer_url": None,
        "newest_url": None,
        "all_selected": request.query_params.get("select") == "all",
        "select_all_url": console.url(request, "/console", **query, select="all"),
        "clear_url": console.url(request, "/console", **query),
        "topic": filters.topic,
        "topic_total": sum(counts[filters.topic].values()) if filters.topic else 0,
        "author_filters": True,
        **form_context(filters, counts),
        **await _author_choices(console, access, filters),
    }
    if filters.topic is not None and filters.topic != filters.given.get("topic"):
        context["notice"] = f"Showing topic “{filters.topic}” (topic names match in any case)."
    if filters.unknown_topic is not None:
        return console.render(request, session, "browse.html", context)
    try:
        wheres = [
            memory_filter(access, space=space, **filters.store_arguments()) for space in spaces
        ]
        if filters.words:
            await _word_matches(console, request, filters, wheres, context)
        else:
            await _newest_first(console, request, filters, wheres, context)
    except MetaCortexError as error:
        context["error"] = error.message
        return console.render(request, session, "browse.html", context, status_code=400)
    return console.render(request, session, "browse.html", context)


def _by_words(filters: Filters, access: Access, clients: Mapping[str, str]) -> str | None:
    """ "written by Ann", "saved with laptop-codex", both, or None."""
    author = filters.author
    parts = []
    if author.person == NOBODY:
        parts.append("written before attribution")
    elif author.person is not None:
        parts.append(f"written by {access.names.get(author.person, author.person)}")
    if author.client is not None:
        parts.append(f"saved with {clients.get(author.client, author.client)}")
    return " and ".join(parts) or None


async def _newest_first(
    console: ConsoleBase,
    request: Request,
    filters: Filters,
    wheres: list[Any],
    context: dict[str, Any],
) -> None:
    cursor = request.query_params.get("at") or None
    newer = request.query_params.get("newer") == "1"
    position = decode_position(cursor) if cursor else None
    found = await console.call(
        listing.page,
        store=console.service.store,
        wheres=wheres,
        size=PAGE_SIZE,
        position=position,
        newer=newer and position is not None,
        author=filters.author,
        order=filters.order,
    )
    start = _start(request) if found.newer is not None else 1
    shown = len(found.memories)
    links = filters.link_arguments()
    context.update(
        items=await rows(console, request, found.memories),
        total=found.total,
        start=start,
        end=start + shown - 1,
    )
    if filters.author.active:
        context["scan"] = {"read": found.read, "cut_short": found.cut_short}
    if found.older is not None:
        query = {**links, "at": encode_position(found.older), "start": str(start + shown)}
        context["older_url"] = console.url(request, "/console", **query)
    if found.newer is not None:
        query = {
            **links,
            "at": encode_position(found.newer),
            "newer": "1",
            "start": str(max(1, start - PAGE_SIZE)),
        }
        context["newer_url"] = console.url(request, "/console", **query)
        if start > PAGE_SIZE + 1 or filters.author.active:
            context["newest_url"] = console.url(request, "/console", **links)


async def _word_matches(
    console: ConsoleBase,
    request: Request,
    filters: Filters,
    wheres: list[Any],
    context: dict[str, Any],
) -> None:
    """The keyword box: the memories containing the words, best match first, 25 a page
    (by position: the matches are read again for each page, at most 100)."""
    words = limits.check_query(filters.words or "")
    matched = query_terms(words)
    store = console.service.store

    def search(where: Any) -> list[tuple[Memory, float]]:
        return [
            (hit.memory, hit.score)
            for hit in store.lexical_search(matched, where, MAX_WORD_MATCHES)
        ]

    found = (
        await console.call(
            listing.word_matches,
            search=search,
            wheres=wheres,
            limit=MAX_WORD_MATCHES,
            author=filters.author,
        )
        if matched
        else []
    )
    start = min(_start(request), max(1, len(found)))
    shown = found[start - 1 : start - 1 + PAGE_SIZE]
    links = filters.link_arguments()
    context.update(
        items=await rows(console, request, shown, matched, {"words": words}),
        total=len(found),
        capped=len(found) >= MAX_WORD_MATCHES,
        start=start,
        end=start + len(shown) - 1,
    )
    if start - 1 + PAGE_SIZE < len(found):
        context["older_url"] = console.url(
            request, "/console", **links, start=str(start + PAGE_SIZE)
        )
    if start > 1:
        earlier = {**links, "start": str(max(1, start - PAGE_SIZE))}
        context["newer_url"] = console.url(request, "/console", **earlier)


def _here_query(request: Request) -> dict[str, str]:
    """This page's query without the selection switch."""
    return {name: value for name, value in request.query_params.items() if name != "select"}
