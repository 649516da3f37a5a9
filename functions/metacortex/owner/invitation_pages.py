"""The invitation link's page: a person sets their own passphrase, and is signed in.

``GET /owner/invite/<token>`` shows who the link is for and the passphrase form, or
says plainly why the link cannot be used (unknown, expired, already used, replaced
by a newer one, the person's access turned off). ``POST`` checks the form (its
CSRF token, the two entries alike, the owner's passphrase rule) before spending
the link, so a typing mistake never wastes it; then spends it once
(``owner.invitations.use``), stores the passphrase (argon2id), ends the person's
other sessions and signs them in, on to the console. Each POST counts as a sign-in
attempt (the same budgets, ``OwnerBase.attempt_wait``): hashing costs the server.

The token is a path segment; the server's request log and events record that
segment as ``REDACTED`` (``kernel.rejections.bounded_request``).
"""

from __future__ import annotations

from typing import Any, Final

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from metacortex.access.model import Person
from metacortex.access.registry import read_directory
from metacortex.errors import Forbidden, MetaCortexError, NotFound
from metacortex.kernel.routes import FUNCTION_PREFIX
from metacortex.owner import invitations
from metacortex.owner.base import OwnerBase, text
from metacortex.owner.invitations import INVITE_PATH, InvitationGone
from metacortex.owner.passphrase import RULE, passphrase_weakness, set_person_passphrase

CONSOLE_PATH: Final = "/console"
_TEMPLATE: Final = "invitation.html"


class InvitationPages:
    def __init__(self, web: OwnerBase) -> None:
        self._web = web

    def routes(self) -> list[BaseRoute]:
        return [
            Route(prefix + INVITE_PATH + "/{token}", self.page, methods=["GET", "POST"])
            for prefix in ("", FUNCTION_PREFIX)
        ]

    async def page(self, request: Request) -> Response:
        token = request.path_params["token"]
        try:
            person = await self._person(token)
        except MetaCortexError as problem:
            return self._problem(request, problem)
        if request.method == "GET":
            return self._form(request, token, person)
        return await self._set_passphrase(request, token, person)

    async def _person(self, token: str) -> Person:
        """The person the invitation is for, while the link and the person allow its use."""
        store = self._web.store
        invitation = await anyio.to_thread.run_sync(invitations.look_up, store, token)
        directory = await anyio.to_thread.run_sync(read_directory, store)
        person = directory.person(invitation.person)
        if person is None:
            raise NotFound(invitations.UNKNOWN)
        if not person.active:
            raise Forbidden(
                "Your access to this server is turned off, so this link cannot be used. "
                "Ask its owner to turn it back on."
            )
        return person

    async def _set_passphrase(self, request: Request, token: str, person: Person) -> Response:
        web = self._web
        form = await request.form()
        if not web.form_is_fresh(request, text(form.get("csrf"))):
            return self._form(
                request, token, person, "The form expired. Please type it again.", 403
            )
        wait = await web.attempt_wait(request)
        if wait is not None:
            refused = f"Too many attempts. Wait {wait} seconds and try again."
            response = self._form(request, token, person, refused, 429)
            response.headers["retry-after"] = str(wait)
            return response
        passphrase = text(form.get("passphrase")) or ""
        weakness = passphrase_weakness(passphrase)
        if weakness is not None:
            return self._form(request, token, person, f"That passphrase {weakness}.", 400)
        if passphrase != (text(form.get("repeat")) or ""):
            return self._form(request, token, person, "The two passphrases differ.", 400)
        store = web.store
        try:
            await anyio.to_thread.run_sync(invitations.use, store, token)
        except MetaCortexError as problem:
            return self._problem(request, problem)
        await anyio.to_thread.run_sync(set_person_passphrase, store, person.id, passphrase)
        await anyio.to_thread.run_sync(web.sessions.end_all_of, person.id)
        return await web.signed_in(request, person.id, web.url(request, CONSOLE_PATH))

    def _form(
        self,
        request: Request,
        token: str,
        person: Person,
        error: str | None = None,
        status_code: int = 200,
    ) -> Response:
        context: dict[str, Any] = {
            "action": self._web.url(request, f"{INVITE_PATH}/{token}"),
            "person": person,
            "rule": RULE,
            "error": error,
            "problem": None,
        }
        return self._web.form_page(request, _TEMPLATE, context, status_code=status_code)

    def _problem(self, request: Request, problem: MetaCortexError) -> Response:
        status = (
            403
            if isinstance(problem, Forbidden)
            else 410
            if isinstance(problem, InvitationGone)
            else 404
        )
        return self._web.render(
            request,
            _TEMPLATE,
            {"problem": problem.message, "sign_in_url": self._web.url(request, "/owner/sign-in")},
            status_code=status,
        )
