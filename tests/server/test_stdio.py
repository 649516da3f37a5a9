"""``metacortex stdio``: real processes with the local model, driven by the official
SDK's stdio client (``mcp.Client(StdioServerParameters(...))``, the same
``stdio_client`` Claude Desktop-style hosts use in Python), and raw pipes where
the bytes on stdout themselves are the point."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, Final

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from metacortex.cli.main import main
from metacortex.clients import ClientManager
from metacortex.config import Settings
from metacortex.kernel.events import MEMORY_EVENTS
from metacortex.storage.sqlite import SQLiteStore
from tests.processes import WatchedProcess
from tests.server.surface_snapshot import tool_names

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
ENV_PREFIXES: Final = ("MCP_", "METACORTEX_", "GEMINI_", "SEARCH_", "DEFAULT_FILTER", "RETRIEVAL_")
READER_TOKEN: Final = "reader-" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6"
READER: Final = {
    "id": "reader",
    "token": READER_TOKEN,
    "allowedTools": ["search_context", "fetch_context"],
}


@pytest.fixture(autouse=True)
def local_model() -> None:
    pytest.importorskip(
        "metacortex.providers.local", reason="LOCAL EMBEDDER NOT AVAILABLE: stdio cannot start"
    )


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def stdio(data_dir: Path, *args: str, **env: str) -> StdioServerParameters:
    """The server as an application would start it: its own command, a minimal environment
    (the SDK passes only HOME, PATH and the like, plus ``env``), a neutral directory."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "metacortex.cli.main", "stdio", "--data-dir", str(data_dir), *args],
        env={"MCP_CLIENT_PROFILES_JSON": json.dumps([READER]), **env},
        cwd=data_dir.parent,
    )


def ok(result: types.CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return dict(result.structured_content)


def stored_events(data_dir: Path) -> list[dict[str, Any]]:
    store = SQLiteStore(data_dir / "metacortex.sqlite3")
    try:
        return store.read_events(MEMORY_EVENTS)
    finally:
        store.close()


async def test_the_sdk_stdio_client_reaches_every_tool_resource_and_prompt(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    async with Client(stdio(data_dir), mode="legacy") as client:
        assert client.server_info is not None
        assert client.server_info.name == "metacortex"
        assert client.server_capabilities.resources is not None
        tools = [tool.name for tool in (await client.list_tools()).tools]
        saved = ok(
            await client.call_tool(
                "save_context",
                {"content": "The staging database is db-staging-2.", "topic": "infra"},
            )
        )
        found = ok(await client.call_tool("search_context", {"query": "staging database"}))
        recent = await client.read_resource("memory://recent")
        prompt = await client.get_prompt("context", {"topic": "infra"})

    assert tools == tool_names("default")
    memory_id = saved["item"]["id"]
    assert found["matches"][0]["id"] == memory_id
    content = recent.contents[0]
    assert isinstance(content, types.TextResourceContents)
    assert json.loads(content.text)["items"][0]["id"] == memory_id
    message = prompt.messages[0].content
    assert isinstance(message, types.TextContent)
    assert "db-staging-2" in message.text
    # Recorded as HTTP calls are, written before the process exited (stdin closed).
    events = stored_events(data_dir)
    assert [(e["event_type"], e["tool_name"], e["client_id"]) for e in events] == [
        ("tool_call", "save_context", "default"),
        ("tool_call", "search_context", "default"),
        ("resource_read", "recent", "default"),
        ("prompt_get", "context", "default"),
    ]


async def test_with_client_it_acts_as_that_profile_only(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    async with Client(stdio(data_dir, "--client", "reader"), mode="2026-07-28") as reader:
        tools = [tool.name for tool in (await reader.list_tools()).tools]
        refused = await reader.call_tool("save_context", {"content": "not allowed"})
        found = ok(await reader.call_tool("search_context", {"query": "anything"}))
    assert tools == ["search_context", "fetch_context"]
    assert refused.is_error
    assert found["matches"] == []
    assert [(e["tool_name"], e["status"], e["client_id"]) for e in stored_events(data_dir)] == [
        ("save_context", "error", "reader"),
        ("search_context", "ok", "reader"),
    ]


def test_an_unknown_client_is_refused_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in list(os.environ):
        if name.startswith(ENV_PREFIXES):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MCP_CLIENT_PROFILES_JSON", json.dumps([READER]))

    code = main(["stdio", "--data-dir", str(tmp_path / "data"), "--client", "nobody"])

    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    assert "no client profile 'nobody' (known: reader)" in captured.err
    assert not (tmp_path / "data").exists()


def owner(data_dir: Path) -> tuple[ClientManager, SQLiteStore]:
    """The owner's API on the data directory's store, in this test process."""
    store = SQLiteStore(data_dir / "metacortex.sqlite3")
    settings = Settings(_env_file=None, metacortex_data_dir=data_dir)  # type: ignore[call-arg]
    return ClientManager(store, settings), store


async def test_a_stored_client_serves_and_is_refused_once_paused_or_removed(
    tmp_path: Path,
) -> None:
    """``--client`` finds a client kept in the store (not only the environment's), and a
    client the owner pauses or removes while the session runs is refused from its next
    request on, with an MCP error saying so; resuming lets it in again."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    clients, store = owner(data_dir)
    try:
        clients.create("laptop", tools=["search_context"])
        server = stdio(data_dir, "--client", "laptop", METACORTEX_CLIENT_REFRESH_SECONDS="0")
        async with Client(server, mode="legacy") as laptop:
            tools = [tool.name for tool in (await laptop.list_tools()).tools]
            first = ok(await laptop.call_tool("search_context", {"query": "anything"}))

            clients.pause("laptop")
            with pytest.raises(MCPError) as paused:
                await laptop.call_tool("search_context", {"query": "anything"})
            with pytest.raises(MCPError):
                await laptop.list_tools()

            clients.resume("laptop")
            resumed = ok(await laptop.call_tool("search_context", {"query": "anything"}))

            clients.remove("laptop")
            with pytest.raises(MCPError) as removed:
                await laptop.call_tool("search_context", {"query": "anything"})
    finally:
        store.close()

    assert tools == ["search_context"]
    assert first["matches"] == resumed["matches"] == []
    assert "client 'laptop' is paused by the server's owner" in paused.value.message
    assert paused.value.data == {"code": "client_paused", "client_id": "laptop"}
    assert "client 'laptop' was removed by the server's owner" in removed.value.message
    assert removed.value.data == {"code": "client_removed", "client_id": "laptop"}


# -------------------------------------------------------------------- raw pipes
class RawSession:
    """The process on raw pipes: one JSON-RPC line in, one line out, stderr kept aside."""

    def __init__(self, data_dir: Path) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIXES)}
        env["METACORTEX_LOG_LEVEL"] = "DEBUG"  # as chatty as it gets: all of it on stderr
        self.process = subprocess.Popen(  # noqa: S603 (our own interpreter and arguments)
            [sys.executable, "-m", "metacortex.cli.main", "stdio", "--data-dir", str(data_dir)],
            cwd=data_dir.parent,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []

    def ask(self, message: dict[str, Any]) -> dict[str, Any]:
        stdin, stdout = self._pipes()
        stdin.write(json.dumps(message) + "\n")
        stdin.flush()
        line = stdout.readline()
        self.lines.append(line)
        answer: dict[str, Any] = json.loads(line)
        return answer

    def tell(self, message: dict[str, Any]) -> None:
        stdin, _ = self._pipes()
        stdin.write(json.dumps(message) + "\n")
        stdin.flush()

    def write_line(self, line: str) -> dict[str, Any]:
        """Write ``line`` as it is (whatever a client with a bug writes) and read the answer."""
        stdin, stdout = self._pipes()
        stdin.write(line + "\n")
        stdin.flush()
        answer = stdout.readline()
        self.lines.append(answer)
        parsed: dict[str, Any] = json.loads(answer)
        return parsed

    def _pipes(self) -> tuple[IO[str], IO[str]]:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        return self.process.stdin, self.process.stdout

    def finish(self, how: str) -> tuple[int, str, str]:
        """End it (``eof``: close stdin; else send SIGTERM); its exit code and the rest
        of stdout and stderr."""
        if how != "eof":
            self.process.send_signal(signal.SIGTERM)  # with stdin still open
        rest, err = self.process.communicate(timeout=60)  # closes stdin, reads to the end
        return self.process.returncode, rest, err


@pytest.fixture
def raw(tmp_path: Path) -> Iterator[RawSession]:
    session = RawSession(tmp_path / "data")
    yield session
    if session.process.poll() is None:
        session.process.kill()
        session.process.communicate()


def initialize(session: RawSession) -> dict[str, Any]:
    answer = session.ask(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        }
    )
    session.tell({"jsonrpc": "2.0", "method": "notifications/initialized"})
    return answer


@pytest.mark.parametrize("ending", ["eof", "sigterm"])
def test_stdout_carries_only_protocol_and_both_endings_write_the_events(
    raw: RawSession, tmp_path: Path, ending: str
) -> None:
    """Every byte on stdout is a JSON-RPC message, even with debug logging and the model
    loading after the transport started; stdin closing and SIGTERM (the MCP stdio
    shutdown sequence) both end it cleanly with its events written."""
    assert initialize(raw)["result"]["serverInfo"]["name"] == "metacortex"
    saved = raw.ask(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "save_context", "arguments": {"content": "Raw pipes work."}},
        }
    )
    garbage = raw.ask({"jsonrpc": "2.0", "id": 3, "method": "no/such/method"})

    code, rest, err = raw.finish(ending)

    assert code == 0
    assert saved["result"]["structuredContent"]["write_status"] == "created"
    assert garbage["error"]["code"] == types.METHOD_NOT_FOUND
    everything = "".join(raw.lines) + rest
    for line in everything.splitlines():
        assert json.loads(line)["jsonrpc"] == "2.0"
    logged = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    assert any(entry["message"] == "tool save_context ok" for entry in logged)
    events = stored_events(tmp_path / "data")
    assert [(e["tool_name"], e["status"]) for e in events] == [("save_context", "ok")]


JUNK: Final = "secret-junk-Zq9 is not JSON"


def test_a_client_writing_junk_a_batch_or_a_lone_surrogate_gets_an_answer_to_every_line(
    raw: RawSession, tmp_path: Path
) -> None:
    """A client with a bug (or a hand-typed line) is told what was wrong with each line,
    as over HTTP: -32700 for a line that is not JSON as the protocol reads it (a lone
    surrogate escape included: not Unicode text), -32600 for a batch or an object that is
    no JSON-RPC message, with the request's id whenever one can be read, so the client's
    request fails at once instead of waiting for its timeout. The session goes on, and
    each refusal is logged without the line's content."""
    before_initialize = raw.write_line(JUNK)
    assert initialize(raw)["result"]["serverInfo"]["name"] == "metacortex"
    batch = raw.write_line(json.dumps([{"jsonrpc": "2.0", "id": 2, "method": "ping"}]))
    surrogate_call = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "save_context", "arguments": {"content": "half a pair: \ud800"}},
    }
    surrogate = raw.write_line(json.dumps(surrogate_call))  # "\\ud800": ASCII on the wire
    not_a_message = raw.write_line(json.dumps({"jsonrpc": "2.0", "id": 4, "method": 42}))
    # A blank line is no message: nothing to answer, the next line's answer comes next.
    still_serving = raw.write_line("\n" + json.dumps({"jsonrpc": "2.0", "id": 5, "method": "ping"}))

    code, rest, err = raw.finish("eof")

    assert before_initialize["id"] is None
    assert before_initialize["error"]["code"] == types.PARSE_ERROR
    assert before_initialize["error"]["message"].startswith("Parse error: ")
    assert batch["id"] is None
    assert batch["error"]["code"] == types.INVALID_REQUEST
    assert "batches are not supported" in batch["error"]["message"]
    assert surrogate["id"] == 3
    assert surrogate["error"]["code"] == types.PARSE_ERROR
    assert not_a_message["id"] == 4
    assert not_a_message["error"]["code"] == types.INVALID_REQUEST
    assert still_serving == {"jsonrpc": "2.0", "id": 5, "result": {}}
    assert code == 0
    assert rest == ""
    logged = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    refusals = [entry for entry in logged if "jsonrpc_code" in entry]
    assert [(entry["severity"], entry["jsonrpc_code"], entry["reason"]) for entry in refusals] == [
        ("WARNING", types.PARSE_ERROR, "parse_error"),
        ("WARNING", types.INVALID_REQUEST, "batch_not_supported"),
        ("WARNING", types.PARSE_ERROR, "parse_error"),
        ("WARNING", types.INVALID_REQUEST, "invalid_request"),
    ]
    assert "secret-junk" not in err
    assert "half a pair" not in err
    assert stored_events(tmp_path / "data") == []  # the half pair was saved nowhere


# ------------------------------------------------------- two processes, one store
def start_serve(data_dir: Path, token: str) -> tuple[WatchedProcess, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIXES)}
    env["MCP_ADMIN_TOKEN"] = token
    command = [sys.executable, "-m", "metacortex.cli.main", "serve", "--port=0"]
    served = WatchedProcess(
        [*command, f"--data-dir={data_dir}"],
        "is ready at ",
        env=env,
        cwd=data_dir.parent,
    )
    served.wait_ready(120, "metacortex serve")
    line = next(line for line in served.log if "is ready at " in line)
    return served, line.split("is ready at ", 1)[1].split()[0]


async def test_stdio_beside_serve_on_one_data_directory_loses_no_write(tmp_path: Path) -> None:
    """stdio and serve write to the same SQLite store at once: every write lands, each
    sees the other's records (search reads the change counter) and an erasure by one
    disappears from the other's searches."""
    data_dir = tmp_path / "data"
    token = "admin-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6"
    served, url = start_serve(data_dir, token)
    try:
        async with (
            httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}, timeout=60) as http,
            Client(streamable_http_client(f"{url}/mcp", http_client=http)) as over_http,
            Client(
                stdio(data_dir, METACORTEX_ADMIN_ERASE_TOOL="true"), mode="2026-07-28"
            ) as over_stdio,
        ):
            written: dict[str, list[str]] = {"http": [], "stdio": []}

            async def write(name: str, client: Client) -> None:
                for i in range(15):
                    content = f"Note {i} from {name}: the {name} process wrote this."
                    result = ok(await client.call_tool("save_context", {"content": content}))
                    written[name].append(result["item"]["id"])

            async with anyio.create_task_group() as writers:
                writers.start_soon(write, "http", over_http)
                writers.start_soon(write, "stdio", over_stdio)

            everything = set(written["http"]) | set(written["stdio"])
            assert len(everything) == 30
            for client in (over_http, over_stdio):
                listed = ok(await client.call_tool("list_context", {"limit": 100}))
                assert {item["id"] for item in listed["items"]} == everything
            from_http = ok(
                await over_stdio.call_tool("search_context", {"query": "the http process wrote"})
            )
            from_stdio = ok(
                await over_http.call_tool("search_context", {"query": "the stdio process wrote"})
            )
            assert from_http["matches"][0]["id"] in written["http"]
            assert from_stdio["matches"][0]["id"] in written["stdio"]

            target = written["http"][0]
            query = {"query": "Note 0 from http", "limit": 20}
            before = ok(await over_http.call_tool("search_context", query))
            assert target in [m["id"] for m in before["matches"]]
            ok(await over_stdio.call_tool("erase_context", {"ids": [target]}))
            after = ok(await over_http.call_tool("search_context", query))
            assert target not in [m["id"] for m in after["matches"]]
    finally:
        served.stop()
