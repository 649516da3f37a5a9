"""``metacortex smoke``: check a running endpoint end to end with a real MCP client.

It runs the checks the endpoint offers (``tools/list``) and says which ran and
which the endpoint does not offer, so it works on any endpoint as created: the
admin's, or a client's from ``metacortex client add`` (save, search, fetch).

- Write checks (every mode but ``search-only``, when ``save_context`` is
  offered): save a memory in topic ``metacortex-smoke``, find it with
  ``search_context``, ``fetch_context`` it, ``list_context`` the topic, then
  remove it: with ``erase_context`` where offered
  (``METACORTEX_ADMIN_ERASE_TOOL=true``); else, for an endpoint on this machine
  whose store is the data directory's (``--data-dir``, as for ``serve``), erased
  there as ``metacortex erase`` does; else deprecated where offered, with a
  warning that it stays in the topic and how to erase it.
- Read checks (``search-only``, or an endpoint that cannot save): search, and
  fetch what was found.

Modes (``MCP_SMOKE_MODE`` or ``--mode``): ``admin-read-write`` (the default) and
``browser-read-write`` run the write checks; ``search-only`` never writes. As a
browser connector would: an ``Origin`` header (``MCP_SMOKE_ORIGIN``) and, with
``MCP_SMOKE_URL_TOKEN=true``, the token in ``?auth_token=``.

Endpoint ``--url``, else ``MCP_BASE_URL`` when set, else the admin endpoint of the
server that last ran on the data directory (the address ``serve`` records there,
``cli/server_address.py``: a server on ``--port 9000`` is found), else the default
bind's. When nothing answers on this machine, the failure says where the data
directory's server last answered and the command that starts or reaches it. Token
``MCP_SMOKE_TOKEN``, else ``MCP_ADMIN_TOKEN``, else, for a local endpoint, the
admin token in the data directory (``cli/endpoint_token.py``): against a local
server no variable is needed. Each step prints one line; a refused request
shows the server's own reason (the body of its 401, 403 or 429), which the MCP
client replaces with a stand-in.
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlencode

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from metacortex.access.rules import Access
from metacortex.cli import server_address
from metacortex.cli.data_dir import add_data_dir_option, describe_store, settings_for
from metacortex.cli.endpoint_token import endpoint_token, is_local
from metacortex.cli.program import spelled
from metacortex.composition import build_store
from metacortex.config import Settings
from metacortex.operations.remote_evaluation import RemoteEvaluationError
from metacortex.usecases.erase import Erasure

SMOKE_TOPIC: Final = "metacortex-smoke"
ERASED_BY: Final = "metacortex smoke"
_WRITE_CHECKS: Final = ("save_context", "search_context", "fetch_context", "list_context")
_READ_CHECKS: Final = ("search_context", "fetch_context")
_REASON_CHARS: Final = 300  # of a refusal's body: enough for a message, never a page


class SmokeFailure(Exception):
    pass


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "smoke", help="check a running MCP endpoint with a real client"
    )
    parser.add_argument(
        "--url",
        help="endpoint URL (default MCP_BASE_URL, else the admin endpoint of the server "
        "that last ran on the data directory)",
    )
    parser.add_argument("--mode", choices=["admin-read-write", "browser-read-write", "search-only"])
    add_data_dir_option(parser)
    parser.set_defaults(run=run)


@dataclass
class Checks:
    """What ran, each said as it passes."""

    ran: list[str] = field(default_factory=list)

    def ok(self, check: str, message: str) -> None:
        self.ran.append(check)
        print(f"ok  {message}", file=sys.stderr)


@dataclass
class Refusal:
    status: int
    reason: str


@dataclass
class Refusals:
    """The server's own reason for a refused request. The MCP client answers a non-2xx
    reply without a JSON-RPC error by "Server returned an error response"; this reads
    the body first (an httpx response hook), as the server wrote it."""

    last: Refusal | None = None

    async def keep(self, response: httpx2.Response) -> None:
        if response.status_code < 400 or response.request.method != "POST":
            return
        await response.aread()  # cached: the client reads the same body after
        self.last = Refusal(response.status_code, _reason(response))


def _reason(response: httpx2.Response) -> str:
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return f"HTTP {response.status_code}"
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        message = error["message"][:_REASON_CHARS]
        code = error.get("code")
        named = f" {code}" if isinstance(code, str) else ""
        return f"HTTP {response.status_code}{named}: {message}"
    return f"HTTP {response.status_code}"


@dataclass(frozen=True, slots=True)
class Target:
    url: str
    token: str
    mode: str
    origin: str | None
    url_token: bool
    # The data directory's store, for a local endpoint: where the smoke memory can be
    # erased when the endpoint offers no erase_context. None: not a local endpoint.
    local: Settings | None


def _payload(result: Any, tool: str) -> dict[str, Any]:
    if result.is_error:
        text = result.content[0].text if result.content else "(no text)"
        raise SmokeFailure(f"{tool} returned an error: {text}")
    if result.structured_content is None:
        raise SmokeFailure(f"{tool} returned no structuredContent")
    if json.loads(result.content[0].text) != result.structured_content:
        raise SmokeFailure(f"{tool}: text and structuredContent differ")
    return dict(result.structured_content)


async def smoke(target: Target, refusals: Refusals) -> Checks:
    headers = {} if target.url_token else {"Authorization": f"Bearer {target.token}"}
    if target.origin:
        headers["Origin"] = target.origin
    url = target.url
    if target.url_token:
        url += f"{'&' if '?' in url else '?'}{urlencode({'auth_token': target.token})}"
    checks = Checks()
    async with (
        httpx2.AsyncClient(
            headers=headers, timeout=60, event_hooks={"response": [refusals.keep]}
        ) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        tools = {tool.name for tool in (await client.list_tools()).tools}
        checks.ok("tools/list", f"tools/list: {', '.join(sorted(tools))}")
        writes = target.mode != "search-only" and "save_context" in tools
        wanted = _WRITE_CHECKS if target.mode != "search-only" else _READ_CHECKS
        if writes:
            await _write_checks(client, tools, checks, target)
        else:
            await _read_checks(client, tools, checks)
    print(f"checks run: {', '.join(checks.ran)}", file=sys.stderr)
    missing = [tool for tool in wanted if tool not in tools]
    if missing:
        print(f"not offered here: {', '.join(missing)} (not checked)", file=sys.stderr)
    return checks


async def _read_checks(client: Client, tools: set[str], checks: Checks) -> None:
    if "search_context" not in tools:
        raise SmokeFailure(
            "this endpoint offers neither save_context nor search_context: nothing to check"
        )
    found = _payload(await client.call_tool("search_context", {"query": "smoke test"}), "search")
    checks.ok("search_context", f"search_context: {len(found['matches'])} matches")
    if found["matches"] and "fetch_context" in tools:
        first = found["matches"][0]["id"]
        _payload(await client.call_tool("fetch_context", {"id": first}), "fetch")
        checks.ok("fetch_context", "fetch_context")


async def _write_checks(client: Client, tools: set[str], checks: Checks, target: Target) -> None:
    nonce = secrets.token_hex(6)
    content = f"MetaCortex smoke test memory {nonce}"
    saved = _payload(
        await client.call_tool("save_context", {"content": content, "topic": SMOKE_TOPIC}),
        "save",
    )
    memory_id = saved["item"]["id"]
    checks.ok("save_context", f"save_context: {memory_id} ({saved['write_status']})")
    if "search_context" in tools:
        found = _payload(
            await client.call_tool(
                "search_context", {"query": f"smoke {nonce}", "filter_topic": SMOKE_TOPIC}
            ),
            "search",
        )
        if memory_id not in [m["id"] for m in found["matches"]]:
            raise SmokeFailure("search_context did not find the memory just saved")
        checks.ok("search_context", "search_context found it")
    if "fetch_context" in tools:
        fetched = _payload(await client.call_tool("fetch_context", {"id": memory_id}), "fetch")
        if fetched["item"]["content"] != content:
            raise SmokeFailure("fetch_context returned other content")
        checks.ok("fetch_context", "fetch_context")
    if "list_context" in tools:
        listed = _payload(
            await client.call_tool("list_context", {"filter_topic": SMOKE_TOPIC}), "list"
        )
        checks.ok("list_context", f"list_context: {len(listed['items'])} in {SMOKE_TOPIC}")
    await _clean_up(client, tools, checks, target, memory_id, content)


async def _clean_up(
    client: Client,
    tools: set[str],
    checks: Checks,
    target: Target,
    memory_id: str,
    content: str,
) -> None:
    """Leave nothing behind where it can: erase over MCP, else in the local store."""
    if "erase_context" in tools:
        erased = _payload(await client.call_tool("erase_context", {"ids": [memory_id]}), "erase")
        if erased["erased_ids"] != [memory_id]:
            raise SmokeFailure(f"erase_context did not erase {memory_id}: {erased}")
        checks.ok("erase_context", "erase_context (smoke memory erased)")
    elif target.local is not None and await anyio.to_thread.run_sync(
        _erase_here, target.local, memory_id, content
    ):
        store = describe_store(target.local)
        checks.ok("erase (local store)", f"erased the smoke memory in {store}")
    else:
        if "deprecate_context" in tools:
            _payload(await client.call_tool("deprecate_context", {"id": memory_id}), "deprecate")
            checks.ok("deprecate_context", "deprecate_context (smoke memory retired)")
        _warn_left(memory_id, target)
        return
    if "fetch_context" in tools:
        after = await client.call_tool("fetch_context", {"id": memory_id})
        if not after.is_error:
            raise SmokeFailure("fetch_context still returns the erased smoke memory")
        checks.ok("gone", "fetch_context: the smoke memory is gone")


def _erase_here(settings: Settings, memory_id: str, content: str) -> bool:
    """Erase the smoke memory from the data directory's store, when that store is the
    server's (it holds this very memory); False, touching nothing, when it is not."""
    if settings.store_kind != "sqlite" or not settings.sqlite_path.is_file():
        return False
    store = build_store(settings)
    try:
        memory = store.get(memory_id)
        if memory is None or memory.topic != SMOKE_TOPIC or memory.content != content:
            return False
        Erasure(store).erase(Access.admin(), erased_by=ERASED_BY, ids=[memory_id], expected_count=1)
    finally:
        store.close()
    return True


def _warn_left(memory_id: str, target: Target) -> None:
    print(
        f"warn could not clean up: the smoke memory {memory_id} stays in topic "
        f"{SMOKE_TOPIC!r}: this endpoint offers no erase_context, and its store is not the "
        f"data directory's here. Erase it with `{spelled(f'erase --topic {SMOKE_TOPIC}')}` "
        "(with the server's --data-dir) where the store is, or from the console; to let "
        "smoke erase it, run smoke with the server's --data-dir on its machine, or set "
        "METACORTEX_ADMIN_ERASE_TOOL=true on the server and smoke the admin endpoint.",
        file=sys.stderr,
    )


def failure_reason(error: BaseException, refusal: Refusal | None = None) -> str:
    """The innermost causes, one line: task groups wrap the client's errors."""
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(
            dict.fromkeys(failure_reason(inner, refusal) for inner in error.exceptions)
        )
    if isinstance(error, SmokeFailure | RemoteEvaluationError):
        return str(error)
    if isinstance(error, MCPError):
        if refusal is None:
            hint = " (is the token right?)" if "401" in str(error.data) else ""
            return f"the server refused the request: {error}{hint}"
        hint = " (is the token right?)" if refusal.status == 401 else ""
        return f"the server refused the request ({refusal.reason}){hint}"
    return f"{type(error).__name__}: {error}"


def endpoint(settings: Settings, given: str | None) -> str:
    """The endpoint to check: ``given`` (``--url``), else ``MCP_BASE_URL`` when it is set,
    else the admin endpoint where the data directory's server last answered, else the
    default bind's (``MCP_BASE_URL``'s default)."""
    if given:
        return given
    if "mcp_base_url" in settings.model_fields_set:  # set in the environment or .env
        return settings.mcp_base_url
    last = server_address.recorded(settings)
    return f"{last}/mcp" if last else settings.mcp_base_url


def _connection_failed(error: BaseException) -> bool:
    if isinstance(error, BaseExceptionGroup):
        return any(_connection_failed(inner) for inner in error.exceptions)
    return isinstance(error, httpx2.ConnectError)


def unreachable(settings: Settings, url: str) -> str:
    """What to do when nothing answers at ``url`` on this machine: where the data
    directory's server last answered, and the command that starts it or checks it there."""
    data_dir = settings.metacortex_data_dir
    serve = spelled("serve", data_dir)
    last = server_address.recorded(settings)
    if last is None:
        return (
            f"no server has run on {data_dir} (serve records its address there): start one "
            f"with `{serve}`, or give the endpoint with --url"
        )
    if url.rstrip("/") == f"{last}/mcp":
        return (
            f"the server on {data_dir} last answered at {last}; nothing answers there now: "
            f"start it again with `{serve}` (smoke follows it to whatever port it gets)"
        )
    return (
        f"the server on {data_dir} last answered at {last}: check it there with "
        f"`{spelled(f'smoke --url {last}/mcp', data_dir)}`"
    )


def run(args: argparse.Namespace) -> int:
    settings = settings_for(args)
    url = endpoint(settings, args.url)
    mode = args.mode or settings.mcp_smoke_mode
    target = Target(
        url=url,
        token=endpoint_token(settings, url),
        mode=mode,
        origin=settings.mcp_smoke_origin,
        url_token=settings.mcp_smoke_url_token,
        local=settings if is_local(url) else None,
    )
    refusals = Refusals()
    try:
        checks = anyio.run(smoke, target, refusals)
    except (SmokeFailure, MCPError, httpx2.HTTPError, ExceptionGroup) as error:
        reason = failure_reason(error, refusals.last)
        if refusals.last is not None and refusals.last.status == 401 and "/clients/" in url:
            reason += (
                "; a client just created is accepted within the server's "
                "METACORTEX_CLIENT_REFRESH_SECONDS (10 s unless set): try again then"
            )
        if _connection_failed(error) and is_local(url):
            reason += f"; {unreachable(settings, url)}"
        print(f"FAIL {mode} against {url}: {reason}", file=sys.stderr)
        return 1
    print(f"smoke test passed ({mode}) against {url}: {len(checks.ran)} checks")
    return 0
