"""MCP over stdin and stdout: the server a local agent starts as a child process.

The very low-level server the HTTP app runs (``build_mcp_server``: the same
tools, resources, prompts, events and store), on the official SDK's stdio
transport, serving one profile: the admin's, or a client profile. There is no
token: whoever can start the process can read the data directory anyway.

Only protocol goes to stdout. The SDK's transport points file descriptor 1 at
stderr while it runs (whatever prints, a library or a native extension,
lands in the log instead of on the wire); the service is built inside it,
and logs are JSON lines on stderr. A line that is no JSON-RPC message gets a
JSON-RPC error, as over HTTP (``stdio_refusals``).

Beside a running ``metacortex serve`` on the same data directory it is one
more SQLite connection: writes serialize on SQLite's lock (WAL, busy timeout),
and each search first reads the store's change counter, so both processes see
each other's records and erasures (``storage/sqlite_vectors.py``).

The session ends when the client closes stdin, or on SIGTERM / SIGINT (the MCP
stdio shutdown sequence); queued events are written and the store is closed
either way.

Serving a client profile, every request reads that profile as the store has it
now (``current_profile``: ``ClientDirectory`` checks the store at most once per
``METACORTEX_CLIENT_REFRESH_SECONDS``): a client the owner pauses or removes
while the session runs is refused from its next request on, as over HTTP.
"""

from __future__ import annotations

import signal
from typing import Any

import anyio
import mcp_types as types
from anyio import CancelScope
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from metacortex.access.client_directory import ClientDirectory
from metacortex.access.profiles import Profile, load_profiles
from metacortex.config import Settings
from metacortex.kernel.runtime import Runtime
from metacortex.mcp_surface.mcp_server import build_mcp_server
from metacortex.server.lifecycle import running
from metacortex.server.stdio_refusals import AnsweringReadStream


async def serve_stdio(settings: Settings, profile: Profile) -> None:
    """Serve ``profile`` over this process's stdin and stdout until the client leaves."""
    runtime = Runtime(settings=settings, clients=ClientDirectory(load_profiles(settings), settings))

    async def profile_of(ctx: ServerRequestContext[Any]) -> Profile:
        return await current_profile(runtime.clients, profile)

    server = build_mcp_server(runtime, profile_of)
    # The transport first: fd 1 points at stderr from here on, while the model loads too.
    async with (
        stdio_server() as (read_stream, write_stream),
        running(runtime),
        anyio.create_task_group() as tasks,
    ):
        tasks.start_soon(_stop_on_signal, tasks.cancel_scope)
        # Lines that are no message are answered here: the SDK's server drops them.
        messages = AnsweringReadStream(read_stream, write_stream)
        await server.run(messages, write_stream, server.create_initialization_options())
        tasks.cancel_scope.cancel()


async def current_profile(clients: ClientDirectory, profile: Profile) -> Profile:
    """The served profile as it stands for a request arriving now: the admin's as it is;
    a client's as the store has it (re-read within ``METACORTEX_CLIENT_REFRESH_SECONDS``),
    refused with an MCP error once the owner paused or removed it."""
    profiles = await clients.current()
    if profile.is_admin:
        return profiles.admin  # as the spaces now stand
    current = profiles.get(profile.id)
    if current is None:
        raise MCPError(
            types.INVALID_REQUEST,
            f"client {profile.id!r} was removed by the server's owner: this session is refused; "
            "configure another client (`metacortex init --client ID`)",
            {"code": "client_removed", "client_id": profile.id},
        )
    if current.paused:
        raise MCPError(
            types.INVALID_REQUEST,
            f"client {profile.id!r} is paused by the server's owner; it is refused until the "
            f"owner resumes it (`metacortex client resume {profile.id}`)",
            {"code": "client_paused", "client_id": profile.id},
        )
    if current.refused_because == "person_inactive":
        raise MCPError(
            types.INVALID_REQUEST,
            f"the person client {profile.id!r} belongs to was deactivated by the server's "
            "owner; it is refused until the owner reactivates them",
            {"code": "person_inactive", "client_id": profile.id},
        )
    return current


async def _stop_on_signal(scope: CancelScope) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for _ in signals:
            scope.cancel()
            return
