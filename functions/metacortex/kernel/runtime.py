"""What the running app shares between the HTTP guard and the MCP handlers.

The service and the event recorder appear during the app's lifespan start-up
(building the service may load a model), so handlers reach them through this
holder rather than through module globals.

With a background start (the Cloud Functions entry) the lifespan lets requests
in before the service is built: ``started`` is set once it is built (or has
failed, with ``failure`` saying why); whatever needs the service waits for it
with ``ready_service()``, and the guard holds back routes that need it.

The profiles in effect come from ``clients``: the environment's at once, the
store's once the store is open, refreshed while the app runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import anyio

from metacortex.access.client_directory import ClientDirectory
from metacortex.access.profiles import Profile, Profiles
from metacortex.config import Settings
from metacortex.errors import Unavailable
from metacortex.kernel.bearer import BearerAuthority
from metacortex.kernel.events import EventRecorder
from metacortex.service import MemoryService

# Where the guard puts the profile it authenticated, in the ASGI scope.
PROFILE_SCOPE_KEY: Final = "metacortex.profile"


def request_profile(request: Any) -> Profile:
    """The profile the guard authenticated for this request (set in the ASGI scope)."""
    scope: Mapping[str, Any] | None = getattr(request, "scope", None)
    profile = scope.get(PROFILE_SCOPE_KEY) if scope is not None else None
    if not isinstance(profile, Profile):
        raise RuntimeError("request reached MCP without passing the guard")
    return profile


@dataclass(slots=True)
class Runtime:
    settings: Settings
    clients: ClientDirectory
    service: MemoryService | None = None
    events: EventRecorder | None = None
    # OAuth access tokens at the MCP endpoints (METACORTEX_OAUTH); None: static tokens only.
    oauth: BearerAuthority | None = None
    # Set by the lifespan once start-up is over, whether it succeeded or not.
    started: anyio.Event | None = None
    failure: str | None = None

    @property
    def profiles(self) -> Profiles:
        """The profiles as last checked (``await clients.current()`` for a request)."""
        return self.clients.profiles

    def require_service(self) -> MemoryService:
        if self.service is None:
            raise RuntimeError("the MetaCortex app is not started: run it inside its lifespan")
        return self.service

    async def wait_started(self) -> None:
        """Return once start-up is over (at once unless a background start is running)."""
        if self.started is not None:
            await self.started.wait()

    async def start_succeeded(self) -> bool:
        """Wait for start-up to be over; whether it built the service."""
        await self.wait_started()
        return self.failure is None

    async def ready_service(self) -> MemoryService:
        """The service, once built; Unavailable if building it failed."""
        await self.wait_started()
        if self.service is None:
            raise Unavailable(UNAVAILABLE_MESSAGE)
        return self.service


UNAVAILABLE_MESSAGE = (
    "the server is not configured correctly; the operator has been told why in the logs"
)
