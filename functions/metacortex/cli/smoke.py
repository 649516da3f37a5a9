"""``metacortex smoke``: check a running endpoint end to end with a real MCP client.

Modes (``MCP_SMOKE_MODE`` or ``--mode``):
- ``admin-read-write``: tools/list has all six tools; save, search, fetch, list,
  then remove the smoke memory: erased when the endpoint offers ``erase_context``
  (``METACORTEX_ADMIN_ERASE_TOOL=true``), so it leaves nothing behind; otherwise
  deprecated, with a warning that it stays in topic ``metacortex-smoke``.
- ``browser-read-write``: as a browser connector would: an ``Origin`` header
  (``MCP_SMOKE_ORIGIN``) and, with ``MCP_SMOKE_URL_TOKEN=true``, the token in
  ``?auth_token=``; save, search, fetch; a client endpoint cannot erase, so it
  warns which memory it left.
- ``search-only``: search and fetch work; save_context is not offered.

Endpoint ``MCP_BASE_URL`` (default the local admin endpoint); token
``MCP_SMOKE_TOKEN``, else ``MCP_ADMIN_TOKEN``, else, for a local endpoint, the
admin token in the data directory (``cli/endpoint_token.py``): against a local
server no variable is needed. Each step prints one line.
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from metacortex.cli.data_dir import add_data_dir_option, settings_for
from metacortex.cli.endpoint_token import endpoint_token
from metacortex.operations.remote_evaluation import RemoteEvaluationError

SMOKE_TOPIC = "metacortex-smoke"


class SmokeFailure(Exception):
    pass


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "smoke", help="check a running MCP endpoint with a real client"
    )
    parser.add_argument("--url", help="endpoint URL (default MCP_BASE_URL)")
    parser.add_argument("--mode", choices=["admin-read-write", "browser-read-write", "search-only"])
    add_data_dir_option(parser)
    parser.set_defaults(run=run)


def _payload(result: Any, tool: str) -> dict[str, Any]:
    if result.is_error:
        text = result.content[0].text if result.content else "(no text)"
        raise SmokeFailure(f"{tool} returned an error: {text}")
    if result.structured_content is None:
        raise SmokeFailure(f"{tool} returned no structuredContent")
    if json.loads(result.content[0].text) != result.structured_content:
        raise SmokeFailure(f"{tool}: text and structuredContent differ")
    return dict(result.structured_content)


async def smoke(url: str, token: str, mode: str, origin: str | None, url_token: bool) -> None:
    headers = {} if url_token else {"Authorization": f"Bearer {token}"}
    if origin:
        headers["Origin"] = origin
    target = (
        f"{url}{'&' if '?' in url else '?'}{urlencode({'auth_token': token})}" if url_token else url
    )

    def step(message: str) -> None:
        print(f"ok  {message}", file=sys.stderr)

    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        Client(streamable_http_client(target, http_client=http)) as client,
    ):
        tools = {tool.name for tool in (await client.list_tools()).tools}
        step(f"tools/list: {', '.join(sorted(tools))}")
        if mode == "search-only":
            if "save_context" in tools:
                raise SmokeFailure("search-only endpoint offers save_context")
            found = _payload(
                await client.call_tool("search_context", {"query": "smoke test"}), "search"
            )
            step(f"search_context: {len(found['matches'])} matches")
            if found["matches"]:
                first = found["matches"][0]["id"]
                _payload(await client.call_tool("fetch_context", {"id": first}), "fetch")
                step("fetch_context")
            return
        nonce = secrets.token_hex(6)
        content = f"MetaCortex smoke test memory {nonce}"
        saved = _payload(
            await client.call_tool("save_context", {"content": content, "topic": SMOKE_TOPIC}),
            "save",
        )
        memory_id = saved["item"]["id"]
        step(f"save_context: {memory_id} ({saved['write_status']})")
        found = _payload(
            await client.call_tool(
                "search_context", {"query": f"smoke {nonce}", "filter_topic": SMOKE_TOPIC}
            ),
            "search",
        )
        if memory_id not in [m["id"] for m in found["matches"]]:
            raise SmokeFailure("search_context did not find the memory just saved")
        step("search_context found it")
        fetched = _payload(await client.call_tool("fetch_context", {"id": memory_id}), "fetch")
        if fetched["item"]["content"] != content:
            raise SmokeFailure("fetch_context returned other content")
        step("fetch_context")
        if mode == "admin-read-write":
            listed = _payload(
                await client.call_tool("list_context", {"filter_topic": SMOKE_TOPIC}), "list"
            )
            step(f"list_context: {len(listed['items'])} in {SMOKE_TOPIC}")
        if "erase_context" in tools:
            await _erase(client, memory_id, step)
            return
        if mode == "admin-read-write":
            _payload(await client.call_tool("deprecate_context", {"id": memory_id}), "deprecate")
            step("deprecate_context (smoke memory retired)")
        print(
            f"warn could not clean up: the smoke memory {memory_id} stays in topic "
            f"{SMOKE_TOPIC!r}, since this endpoint offers no erase_context. Erase it with "
            f"`metacortex erase --topic {SMOKE_TOPIC}` where the store is, or from the "
            "console; to let smoke erase it, set METACORTEX_ADMIN_ERASE_TOOL=true on the "
            "server and smoke the admin endpoint.",
            file=sys.stderr,
        )


async def _erase(client: Client, memory_id: str, step: Callable[[str], None]) -> None:
    """Erase the smoke memory and check that it is gone."""
    erased = _payload(await client.call_tool("erase_context", {"ids": [memory_id]}), "erase")
    if erased["erased_ids"] != [memory_id]:
        raise SmokeFailure(f"erase_context did not erase {memory_id}: {erased}")
    step("erase_context (smoke memory erased)")
    after = await client.call_tool("fetch_context", {"id": memory_id})
    if not after.is_error:
        raise SmokeFailure("fetch_context still returns the erased smoke memory")
    step("fetch_context: the smoke memory is gone")


def failure_reason(error: BaseException) -> str:
    """The innermost causes, one line: task groups wrap the client's errors."""
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(dict.fromkeys(failure_reason(inner) for inner in error.exceptions))
    if isinstance(error, SmokeFailure | RemoteEvaluationError):
        return str(error)
    if isinstance(error, MCPError):
        hint = " (is the token right?)" if "401" in str(error.data) else ""
        return f"the server refused the request: {error}{hint}"
    return f"{type(error).__name__}: {error}"


def run(args: argparse.Namespace) -> int:
    settings = settings_for(args)
    url = args.url or settings.mcp_base_url
    token = endpoint_token(settings, url)
    mode = args.mode or settings.mcp_smoke_mode
    try:
        anyio.run(
            smoke,
            url,
            token,
            mode,
            settings.mcp_smoke_origin,
            settings.mcp_smoke_url_token,
        )
    except (SmokeFailure, MCPError, httpx2.HTTPError, ExceptionGroup) as error:
        print(f"FAIL {mode} against {url}: {failure_reason(error)}", file=sys.stderr)
        return 1
    print(f"smoke test passed ({mode}) against {url}")
    return 0
