"""The seam between the HTTP guard and an OAuth resource server (``metacortex.auth``).

The guard authenticates static tokens itself. When OAuth is on, a token that
is not a static one is handed to the ``BearerAuthority``, which also shapes the
401 challenge and refuses a tool call the token's scopes do not cover (403).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from starlette.types import Scope

from metacortex.access.profiles import Profile
from metacortex.kernel.rejections import Rejection
from metacortex.kernel.routes import Route


@dataclass(frozen=True, slots=True)
class BearerIdentity:
    profile: Profile
    scopes: frozenset[str]


class BearerAuthority(Protocol):
    async def authenticate(self, scope: Scope, route: Route, token: str) -> BearerIdentity | None:
        """The identity of an OAuth access token valid at this route, or None."""
        ...

    def unauthorized(self, scope: Scope, route: Route, token_presented: bool) -> Rejection:
        """The 401 for this route (``WWW-Authenticate`` with resource metadata and scope)."""
        ...

    def insufficient_scope(
        self, scope: Scope, route: Route, identity: BearerIdentity, body: bytes
    ) -> Rejection | None:
        """A 403 when the JSON-RPC body calls a tool the token's scopes do not cover."""
        ...
