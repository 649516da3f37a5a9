"""The isolation matrix (issue 30 §2 and §6, issue 37): every tool, resource and prompt ×
every route (admin token, stored client endpoint, OAuth grant, ``metacortex stdio
--client``, and a client of ``MCP_CLIENT_PROFILES_JSON`` over HTTP and over stdio) ×
{own space, granted read, granted write, not granted, missing}, on SQLite and on the
real Firestore emulator.

Counterparts: the official ``mcp`` SDK's ``Client`` over real loopback HTTP (uvicorn)
and over the pipes of a real ``metacortex stdio`` subprocess; real SQLite files and
the Firestore emulator; the local embedding model.

One server per store, one connection per route, many calls: each route's test walks
every cell as subtests. What each cell must do:

- own space (no ``space`` argument), granted write: everything works, and nothing
  read comes from another space;
- granted read: reads work; every write is a ``forbidden`` tool error (or prompt
  error) saying the credential may only read there;
- not granted, missing: every call is the same ``not_found`` answer, byte for byte
  once the space key is replaced (the raw HTTP body; over stdio the SDK's message);
- a memory id of another space, wherever it is named, is "no memory with id";
- granted read or write: the credential makes that space its own default
  (``set_default_space``) and its next call naming no space acts there, then moves it
  back; the admin token and the environment's client keep it in the server's
  configuration, so it is refused saying how the operator changes it.

The admin token is the owner's: it holds every space at write, so its cells are
own (``default``), granted write and missing.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import INVALID_PARAMS

from metacortex.access.model import DEFAULT_SPACE
from metacortex.access.rules import no_space_message
from metacortex.clients.own_default import ADMIN_REFUSAL
from tests.spaces.team import (
    CLIENT_ID,
    LOCKER_QUERY,
    MISSING,
    NOT_GRANTED,
    OWN,
    READ_ONLY,
    SPACES,
    WRITABLE,
    mint_grant,
)
from tests.spaces.world import (
    ENVIRONMENT_CLIENT_ID,
    ROUTES,
    STDIO_ROUTES,
    STORES,
    Answer,
    Connection,
    RouteName,
    World,
    world,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(300)]

ALL_SPACES: Final = (DEFAULT_SPACE, *SPACES)
ENVIRONMENT_REFUSAL: Final = (
    f"client {ENVIRONMENT_CLIENT_ID!r} is defined in MCP_CLIENT_PROFILES_JSON: its default "
    "space is that entry's defaultSpace, which the operator changes there (then restarts the "
    "server)"
)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module", params=STORES)
def team_world(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[World]:
    directory: Path = tmp_path_factory.mktemp(f"spaces-{request.param}")
    with world(request.param, directory, request) as built:
        yield built


@dataclass(frozen=True)
class Cell:
    name: str
    space: str
    level: str | None  # "write", "read", or None: no access at all
    explicit: bool = True  # False: the call names no space (the credential's default)

    def args(self) -> dict[str, Any]:
        return {"space": self.space} if self.explicit else {}

    def query(self) -> str:
        return f"?space={self.space}" if self.explicit else ""


ADMIN_CELLS: Final = (
    Cell("own space", DEFAULT_SPACE, "write", explicit=False),
    Cell("granted write", WRITABLE, "write"),
    Cell("missing", MISSING, None),
)
PERSON_CELLS: Final = (
    Cell("own space", OWN, "write", explicit=False),
    Cell("granted read", READ_ONLY, "read"),
    Cell("granted write", WRITABLE, "write"),
    Cell("not granted", NOT_GRANTED, None),
    Cell("missing", MISSING, None),
)


def cells_of(route: RouteName) -> tuple[Cell, ...]:
    return ADMIN_CELLS if route == "admin" else PERSON_CELLS


def _ok(answer: Answer) -> dict[str, Any]:
    assert answer.ok, answer.shown
    return answer.payload


def _tool_error(answer: Answer, code: str, message: str) -> None:
    assert not answer.ok, answer.shown
    assert answer.payload == {"error": {"code": code, "message": message}}, answer.shown


def _no_memory(answer: Answer, memory_id: str) -> None:
    """A memory of another space, named anywhere: exactly an id that never existed."""
    message = f"no memory with id {memory_id!r}"
    if "error" in answer.payload:
        _tool_error(answer, "not_found", message)
    else:
        assert not answer.ok, answer.shown
        assert (answer.payload["code"], answer.payload["message"]) == (INVALID_PARAMS, message)


def _no_document(answer: Answer, document_id: str) -> None:
    """A document of another space: exactly an id that never existed."""
    _tool_error(answer, "not_found", f"no document with id {document_id!r}")


def _read_only(answer: Answer, space: str) -> None:
    message = (
        f"this credential may only read the space {space!r}, not write to it; "
        "ask the owner for write access"
    )
    if "error" in answer.payload:
        _tool_error(answer, "forbidden", message)
    else:
        assert not answer.ok
        assert answer.payload["message"] == message, answer.shown


def _no_space(answer: Answer, space: str, uri: str | None = None) -> None:
    if uri is None and "error" in answer.payload:
        _tool_error(answer, "not_found", no_space_message(space))
        return
    assert not answer.ok, answer.shown
    assert answer.payload["code"] == INVALID_PARAMS
    assert answer.payload["message"] == no_space_message(space)
    if uri is not None:
        assert answer.payload["data"] == {"uri": uri, "code": "not_found"}


def _ids(items: list[dict[str, Any]]) -> list[str]:
    return [str(item["id"]) for item in items]


class Walk:
    """One route's calls against one world, with what the team knows about each space."""

    def __init__(self, world: World, route: RouteName, conn: Connection) -> None:
        self.world = world
        self.team = world.team
        self.route = route
        self.conn = conn
        # The documents this walk added, by space (create_document in a writable cell).
        self.documents: dict[str, str] = {}

    def note(self, cell: Cell, what: str) -> str:
        return f"{self.route} · {cell.name} ({cell.space}) · {what} · {uuid.uuid4().hex[:8]}"

    def in_space(self, space: str, items: list[dict[str, Any]]) -> None:
        """Every item is a memory known to be in ``space``, and says so."""
        for item in items:
            assert self.team.space_of(str(item["id"])) == space, item
            assert item["metadata"]["space"] == space, item

    def foreign(self, space: str) -> list[str]:
        """Ids of memories in other spaces: one not granted, one granted, ``default``."""
        others = [key for key in (NOT_GRANTED, READ_ONLY, OWN, DEFAULT_SPACE) if key != space]
        return [self.team.lockers[key] for key in others[:3]]

    def author(self) -> dict[str, str]:
        if self.route == "admin":
            return {"person_id": "owner", "name": "Owner", "client": "default"}
        return {
            "person_id": self.team.ann.id,
            "name": "Ann",
            "client": self.world.credential(self.route),
        }

    # ------------------------------------------------------------------ tools
    async def save(self, cell: Cell, what: str, **extra: Any) -> str:
        answer = await self.conn.tool(
            "save_context",
            {"content": self.note(cell, what), "topic": "matrix", **extra, **cell.args()},
        )
        item = _ok(answer)["item"]
        assert item["metadata"]["space"] == cell.space
        assert item["metadata"]["created_by"] == self.author()
        self.team.remember(cell.space, str(item["id"]))
        return str(item["id"])

    async def reads(self, cell: Cell) -> None:
        space, locker = cell.space, self.team.lockers[cell.space]
        found = _ok(await self.conn.tool("search_context", {"query": LOCKER_QUERY, **cell.args()}))
        assert found["applied_filters"]["space"] == space
        assert locker in _ids(found["matches"])
        self.in_space(space, found["matches"])

        fetched = _ok(await self.conn.tool("fetch_context", {"id": locker, **cell.args()}))
        assert fetched["item"]["id"] == locker
        self.in_space(space, [fetched["item"]])
        for other in self.foreign(space):
            _no_memory(await self.conn.tool("fetch_context", {"id": other, **cell.args()}), other)

        lockers = _ok(
            await self.conn.tool("list_context", {"filter_topic": "lockers", **cell.args()})
        )
        assert _ids(lockers["items"]) == [locker]
        listed = _ok(await self.conn.tool("list_context", {"limit": 50, **cell.args()}))
        self.in_space(space, listed["items"])

        linked = _ok(await self.conn.tool("related_context", {"id": locker, **cell.args()}))
        assert linked["root"] == locker
        for node in linked["nodes"]:
            if node["kind"] == "memory":
                assert self.team.space_of(str(node["id"])) in (space, None), node
        for other in self.foreign(space):
            _no_memory(await self.conn.tool("related_context", {"id": other, **cell.args()}), other)

        documents = _ok(await self.conn.tool("list_documents", cell.args()))
        assert documents["space"] == space
        assert {d["space"] for d in documents["documents"]} <= {space}
        for key, document_id in self.documents.items():
            got = await self.conn.tool("get_document", {"id": document_id, **cell.args()})
            if key == space:
                assert _ok(got)["document"]["id"] == document_id
            else:
                _no_document(got, document_id)

    async def writes(self, cell: Cell) -> None:
        made = _ok(
            await self.conn.tool(
                "create_document",
                {
                    "content": f"# Matrix\n\n{self.note(cell, 'document')}",
                    # A topic per route: another route's walk added documents here too.
                    "topic": f"matrix-documents-{self.route}",
                    **cell.args(),
                },
            )
        )
        assert made["document"]["space"] == cell.space
        assert made["document"]["added_by"] == self.author()
        self.documents[cell.space] = str(made["document"]["id"])
        listed = _ok(await self.conn.tool("list_documents", cell.args()))
        assert self.documents[cell.space] in [d["id"] for d in listed["documents"]]
        passages = _ok(
            await self.conn.tool(
                "list_context",
                {"filter_topic": f"matrix-documents-{self.route}", "limit": 50, **cell.args()},
            )
        )
        assert passages["items"]
        for passage in passages["items"]:
            assert passage["metadata"]["space"] == cell.space
            assert passage["metadata"]["document"]["id"] in [d["id"] for d in listed["documents"]]
            self.team.remember(cell.space, str(passage["id"]))

        mine = await self.save(cell, "to retire")
        retired = _ok(await self.conn.tool("deprecate_context", {"id": mine, **cell.args()}))
        assert retired["item"]["branch_state"] == "deprecated"
        assert "contested_ids" not in retired
        other = self.foreign(cell.space)[0]
        _no_memory(await self.conn.tool("deprecate_context", {"id": other, **cell.args()}), other)
        replaced = await self.conn.tool(
            "deprecate_context",
            {"id": await self.save(cell, "kept"), "superseding_id": other} | cell.args(),
        )
        _tool_error(replaced, "not_found", f"superseding memory {other!r} does not exist")

        drafts = [await self.save(cell, f"draft {n}", draft=True) for n in (1, 2)]
        merged = _ok(
            await self.conn.tool(
                "consolidate_context",
                {"source_ids": drafts, "topic": "matrix-merged", **cell.args()},
            )
        )
        assert merged["deprecated_ids"] == drafts
        assert "contested_ids" not in merged
        merged_id = str(merged["item"]["merged_id"])
        self.team.remember(cell.space, merged_id)
        kept = _ok(await self.conn.tool("fetch_context", {"id": merged_id, **cell.args()}))
        self.in_space(cell.space, [kept["item"]])
        assert kept["item"]["metadata"]["created_by"] == self.author()
        draft = await self.save(cell, "lonely draft", draft=True)
        _no_memory(
            await self.conn.tool(
                "consolidate_context",
                {"source_ids": [draft, other], "topic": "matrix-merged", **cell.args()},
            ),
            other,
        )
        promoted = _ok(await self.conn.tool("promote_context", {"id": draft, **cell.args()}))
        assert promoted["item"] == {"id": draft, "branch_state": "active"}
        assert promoted["previous_state"] == "wip"
        _no_memory(await self.conn.tool("promote_context", {"id": other, **cell.args()}), other)
        await self.default_moves_to(cell)

    async def default_moves_to(self, cell: Cell) -> None:
        """The credential makes ``cell``'s space its default: the next call naming no space
        acts there (a read-only one refuses a save), on every route at once; then back.
        The admin token keeps no record: refused, saying how the operator changes it."""
        moved = await self.conn.tool("set_default_space", {"space": cell.space})
        if self.route == "admin":
            _tool_error(moved, "failed_precondition", ADMIN_REFUSAL)
            return
        if self.route.startswith("environment"):
            _tool_error(moved, "failed_precondition", ENVIRONMENT_REFUSAL)
            return
        assert _ok(moved)["default_space"] == cell.space
        assert _ok(moved)["previous_default_space"] == OWN
        listed = _ok(await self.conn.tool("list_context", {"filter_topic": "lockers"}))
        assert _ids(listed["items"]) == [self.team.lockers[cell.space]]
        saved = await self.conn.tool("save_context", {"content": self.note(cell, "default")})
        if cell.level == "read":
            _read_only(saved, cell.space)
        else:
            assert _ok(saved)["item"]["metadata"]["space"] == cell.space
            self.team.remember(cell.space, str(_ok(saved)["item"]["id"]))
        back = _ok(await self.conn.tool("set_default_space", {"space": OWN}))
        assert (back["default_space"], back["previous_default_space"]) == (OWN, cell.space)
        assert _ok(await self.conn.tool("list_spaces", {}))["default_space"] == OWN

    async def refused_writes(self, cell: Cell) -> None:
        space, locker = cell.space, self.team.lockers[cell.space]
        _read_only(
            await self.conn.tool(
                "save_context", {"content": self.note(cell, "refused"), **cell.args()}
            ),
            space,
        )
        _read_only(await self.conn.tool("deprecate_context", {"id": locker, **cell.args()}), space)
        _read_only(
            await self.conn.tool("create_document", {"content": "# No", **cell.args()}), space
        )
        _read_only(
            await self.conn.tool(
                "consolidate_context",
                {"source_ids": [locker, self.team.lockers[OWN]], "topic": "x", **cell.args()},
            ),
            space,
        )
        _read_only(await self.conn.prompt("correct_memory", self.correction(cell, locker)), space)
        _read_only(await self.conn.tool("promote_context", {"id": locker, **cell.args()}), space)
        await self.default_moves_to(cell)  # a space it may only read may be its default

    # -------------------------------------------------------- resources, prompts
    async def resources(self, cell: Cell) -> None:
        space, locker = cell.space, self.team.lockers[cell.space]
        topics = _ok(await self.conn.resource("memory://topics" + cell.query()))
        assert topics["space"] == space
        names = [entry["topic"] for entry in topics["topics"]]
        assert "lockers" in names
        assert [name for name in names if name.startswith("only-")] == [f"only-{space}"]
        recent = _ok(await self.conn.resource("memory://recent" + cell.query()))
        assert recent["space"] == space
        self.in_space(space, recent["items"])
        one = _ok(await self.conn.resource(f"memory://{locker}" + cell.query()))
        assert one["id"] == locker
        graph = _ok(await self.conn.resource("memory://graph" + cell.query()))
        assert graph["space"] == space
        self.in_space(
            space, [{"id": n["id"], "metadata": {"space": space}} for n in graph["nodes"]]
        )
        lockers = "memory://graph?topic=lockers" + cell.query().replace("?", "&")
        assert _ids(_ok(await self.conn.resource(lockers))["nodes"]) == [locker]
        for other in self.foreign(space):
            _no_memory(await self.conn.resource(f"memory://{other}" + cell.query()), other)

    async def context(self, cell: Cell) -> None:
        answer = await self.conn.prompt("context", {"topic": "lockers", **cell.args()})
        assert answer.ok, answer.shown
        assert self.team.lockers[cell.space] in answer.text
        for key, other in self.team.lockers.items():
            if key != cell.space:
                assert other not in answer.text
        if self.route != "admin":  # the owner holds every space: they may be named
            assert NOT_GRANTED not in answer.text

    def correction(self, cell: Cell, memory_id: str) -> dict[str, str]:
        return {"incorrect_memory_id": memory_id, "corrected_content": "Fixed", **cell.args()}

    async def correct_prompt(self, cell: Cell) -> None:
        locker = self.team.lockers[cell.space]
        answer = await self.conn.prompt("correct_memory", self.correction(cell, locker))
        assert answer.ok, answer.shown
        assert locker in answer.text
        if cell.explicit:
            # Both calls it asks for name the space, or they would act in the default.
            assert f'"space": "{cell.space}"' in answer.text
            assert f'deprecate_context with id "{locker}", space "{cell.space}"' in answer.text

    # ---------------------------------------------------------- no access at all
    async def unreachable(self, space: str) -> list[tuple[str, Answer]]:
        """Every call naming ``space``, in order; each must be the missing-space answer."""
        vault_locker = self.team.lockers[NOT_GRANTED]
        args = {"space": space}
        calls: list[tuple[str, Answer]] = [
            ("save", await self.conn.tool("save_context", {"content": "probe", **args})),
            ("search", await self.conn.tool("search_context", {"query": LOCKER_QUERY, **args})),
            ("fetch", await self.conn.tool("fetch_context", {"id": vault_locker, **args})),
            ("list", await self.conn.tool("list_context", args)),
            ("deprecate", await self.conn.tool("deprecate_context", {"id": vault_locker, **args})),
            (
                "consolidate",
                await self.conn.tool(
                    "consolidate_context",
                    {"source_ids": [vault_locker, self.team.lockers[OWN]], "topic": "x", **args},
                ),
            ),
            ("related", await self.conn.tool("related_context", {"id": vault_locker, **args})),
            ("promote", await self.conn.tool("promote_context", {"id": vault_locker, **args})),
            ("set_default_space", await self.conn.tool("set_default_space", args)),
            ("create_document", await self.conn.tool("create_document", {"content": "p", **args})),
            ("list_documents", await self.conn.tool("list_documents", args)),
            (
                "get_document",
                await self.conn.tool("get_document", {"id": vault_locker, **args}),
            ),
        ]
        for uri in (
            f"memory://graph?space={space}",
            f"memory://topics?space={space}",
            f"memory://recent?space={space}",
            f"memory://{vault_locker}?space={space}",
        ):
            calls.append((uri, await self.conn.resource(uri)))
        calls.append(("context", await self.conn.prompt("context", args)))
        calls.append(
            (
                "correct_memory",
                await self.conn.prompt(
                    "correct_memory",
                    {"incorrect_memory_id": vault_locker, "corrected_content": "Fixed", **args},
                ),
            )
        )
        for name, answer in calls:
            _no_space(answer, space, name if name.startswith("memory://") else None)
        return calls


def _without_request_id(body: bytes) -> bytes:
    """The JSON-RPC id is the request's own counter, not part of the answer."""
    return re.sub(rb'"id":\s*\d+', b'"id":0', body)


def _normalized(answer: Answer, space: str) -> tuple[str, tuple[int, bytes] | None]:
    shown = answer.shown.replace(space, "<space>")
    if answer.wire is None:
        return shown, None
    status, body = answer.wire
    return shown, (status, _without_request_id(body).replace(space.encode(), b"<space>"))


async def spaces_named(walk: Walk) -> None:
    """list_spaces, memory://spaces and who_am_i name exactly the granted spaces."""
    conn, world = walk.conn, walk.world
    listed = _ok(await conn.tool("list_spaces", {}))
    resource = _ok(await conn.resource("memory://spaces"))
    me = _ok(await conn.tool("who_am_i", {}))
    if walk.route == "admin":
        levels = {key: "write" for key in ALL_SPACES}
        default, person = DEFAULT_SPACE, {"id": "owner", "role": "owner"}
    else:
        levels = {OWN: "write", READ_ONLY: "read", WRITABLE: "write"}
        default, person = OWN, {"id": world.team.ann.id, "role": "writer"}
    assert {entry["key"]: entry["level"] for entry in listed["spaces"]} == levels
    assert listed["default_space"] == default
    assert [entry["key"] for entry in listed["spaces"] if entry["default"]] == [default]
    assert resource == listed
    assert {key: me["person"][key] for key in ("id", "role")} == person
    assert me["client"] == world.credential(walk.route)
    assert {entry["key"]: entry["level"] for entry in me["spaces"]} == levels
    assert me["default_space"] == default


async def chatgpt_shapes(walk: Walk) -> None:
    """ChatGPT's search and fetch read the credential's default space, and only it."""
    conn, team = walk.conn, walk.team
    tools = [tool.name for tool in (await conn.client.list_tools()).tools]
    assert {"search", "fetch"} <= set(tools)
    found = _ok(await conn.tool("search", {"query": LOCKER_QUERY}))
    ids = _ids(found["results"])
    assert team.lockers[OWN] in ids
    assert all(team.space_of(memory_id) == OWN for memory_id in ids), ids
    fetched = _ok(await conn.tool("fetch", {"id": team.lockers[OWN]}))
    assert fetched["id"] == team.lockers[OWN]
    for key in (READ_ONLY, NOT_GRANTED, DEFAULT_SPACE):
        _no_memory(await conn.tool("fetch", {"id": team.lockers[key]}), team.lockers[key])


async def not_granted_reads_as_missing(walk: Walk) -> None:
    """Every answer about a space not granted equals the one about a missing space, byte
    for byte once the key is replaced (HTTP: the raw body; stdio: the SDK's message).
    The two are asked in turn, twice, so neither meets a warmer server."""
    not_granted = await walk.unreachable(NOT_GRANTED)
    missing = await walk.unreachable(MISSING)
    not_granted += await walk.unreachable(NOT_GRANTED)
    missing += await walk.unreachable(MISSING)
    for (name, refused), (_, absent) in zip(not_granted, missing, strict=True):
        assert _normalized(refused, NOT_GRANTED) == _normalized(absent, MISSING), name
        if walk.route not in STDIO_ROUTES:
            # The two keys have as many letters: the bodies are as long, too.
            sizes = {len(_without_request_id(a.wire[1])) for a in (refused, absent) if a.wire}
            assert len(sizes) == 1, name


@pytest.mark.parametrize("route", ROUTES)
async def test_every_tool_resource_and_prompt_keeps_to_one_space_on_every_route(
    team_world: World, route: RouteName, subtests: pytest.Subtests
) -> None:
    async with team_world.connect(route) as conn:
        walk = Walk(team_world, route, conn)
        with subtests.test(msg="list_spaces, memory://spaces and who_am_i: the granted spaces"):
            await spaces_named(walk)
        for cell in cells_of(route):
            if cell.level is None:
                continue
            with subtests.test(msg=f"{cell.name}: reads stay in {cell.space}"):
                await walk.reads(cell)
            with subtests.test(msg=f"{cell.name}: resources stay in {cell.space}"):
                await walk.resources(cell)
            with subtests.test(msg=f"{cell.name}: the context prompt reads {cell.space} only"):
                await walk.context(cell)
            if cell.level == "write":
                with subtests.test(msg=f"{cell.name}: writes land in {cell.space}"):
                    await walk.writes(cell)
                with subtests.test(msg=f"{cell.name}: correct_memory names {cell.space}"):
                    await walk.correct_prompt(cell)
            else:
                with subtests.test(msg=f"{cell.name}: every write says it may only read"):
                    await walk.refused_writes(cell)
        if route == "admin":
            with subtests.test(msg="missing: every call is the missing-space answer"):
                await walk.unreachable(MISSING)
        else:
            with subtests.test(msg="not granted and missing: the same answer, byte for byte"):
                await not_granted_reads_as_missing(walk)
            with subtests.test(msg="ChatGPT's search and fetch: the default space only"):
                await chatgpt_shapes(walk)


async def test_an_oauth_grant_at_a_client_endpoint_never_exceeds_what_the_endpoint_holds(
    team_world: World,
) -> None:
    """A grant for Ann's endpoint that names every space at write gets the endpoint's
    levels, space by space: ``work`` stays read, ``vault`` stays out of reach."""
    everything = {key: "write" for key in SPACES}
    endpoint = f"{team_world.url}/clients/{CLIENT_ID}/mcp"
    _, token = mint_grant(team_world.store, endpoint, team_world.team.ann.id, everything, OWN)
    async with (
        httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}, timeout=60) as http,
        Client(streamable_http_client(endpoint, http_client=http), mode="2026-07-28") as client,
    ):
        conn = Connection(client, None)
        listed = _ok(await conn.tool("list_spaces", {}))
        into_work = await conn.tool("save_context", {"content": "x", "space": READ_ONLY})
        into_vault = await conn.tool("save_context", {"content": "x", "space": NOT_GRANTED})

    levels = {entry["key"]: entry["level"] for entry in listed["spaces"]}
    assert levels == {OWN: "write", READ_ONLY: "read", WRITABLE: "write"}
    _read_only(into_work, READ_ONLY)
    _no_space(into_vault, NOT_GRANTED)
