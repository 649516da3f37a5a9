"""What the running app shares between the HTTP guard and the MCP handlers.

The service and the event recorder appear during the app's lifespan start-up
(building the service may load a model), so handlers reach them through this
holder rather than through module globals.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from metacortex.config import Settings
from metacortex.server.events import EventRecorder
from metacortex.server.profiles import Profiles
from metacortex.service import MemoryService

if TYPE_CHECKING:
    from metacortex.server.bearer import BearerAuthority


@dataclass(slots=True)
class Runtime:
    settings: Settings
    profiles: Profiles
    service: MemoryService | None = None
    events: EventRecorder | None = None
    # OAuth access tokens at the MCP endpoints (METACORTEX_OAUTH); None: static tokens only.
    oauth: BearerAuthority | None = None

    def require_service(self) -> MemoryService:
        if self.service is None:
            raise RuntimeError("the MetaCortex app is not started: run it inside its lifespan")
        return self.service
