"""The owner's routes: sign-in and sign-out, the invitation link's page, and the pages'
stylesheet and icon (also under ``/metaCortexMcp``).

``OwnerWeb`` is the owner's side of one app: ``OwnerBase`` (sessions, rendering, the
check other pages use) with the routes of the page modules ``sign_in`` and
``invitation_pages``, which take ``OwnerBase`` and never import this module.
"""

from __future__ import annotations

from functools import partial

from starlette.routing import BaseRoute, Route

from metacortex.kernel.routes import FUNCTION_PREFIX
from metacortex.owner import sign_in
from metacortex.owner.base import ICON_PATH, SIGN_IN_PATH, SIGN_OUT_PATH, STYLESHEET_PATH, OwnerBase
from metacortex.owner.invitation_pages import InvitationPages


class OwnerWeb(OwnerBase):
    """Owner sign-in for one app: ``OwnerBase`` and its pages' routes."""

    def routes(self) -> list[BaseRoute]:
        paths: list[BaseRoute] = InvitationPages(self).routes()
        for prefix in ("", FUNCTION_PREFIX):
            paths += [
                Route(
                    prefix + SIGN_IN_PATH, partial(sign_in.sign_in, self), methods=["GET", "POST"]
                ),
                Route(prefix + SIGN_OUT_PATH, partial(sign_in.sign_out, self), methods=["POST"]),
                Route(prefix + STYLESHEET_PATH, sign_in.stylesheet, methods=["GET"]),
                Route(prefix + ICON_PATH, sign_in.icon, methods=["GET"]),
            ]
        return paths
