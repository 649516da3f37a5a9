"""The console's routes, its sign-in check, CSRF check and page rendering.

The owner's sign-in is ``metacortex.owner``'s: with OAuth on, the authorization
server's ``OwnerWeb`` (one rate limiter, one set of ``/owner`` routes); without
it, the console mounts its own.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeVar

import anyio.to_thread
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from metacortex.config import Settings
from metacortex.errors import MetaCortexError
from metacortex.owner import OwnerWeb, Session, security_headers, templates
from metacortex.owner.web import ICON_PATH, STYLESHEET_PATH
from metacortex.server.domain_errors import HTTP_STATUS
from metacortex.server.routes import FUNCTION_PREFIX
from metacortex.server.runtime import Runtime
from metacortex.service import Access, MemoryService

if TYPE_CHECKING:
    from metacortex.auth import AuthorizationServer

HERE: Final = Path(__file__).parent
HOME: Final = "/console"
STYLESHEET: Final = "/console/static/console.css"
ADMIN: Final = Access.admin()
T = TypeVar("T")
Handler = Callable[["Console", Request, Session], Awaitable[Response]]


class Console:
    """The memory console of one app."""

    def __init__(
        self,
        settings: Settings,
        runtime: Runtime,
        authorization: AuthorizationServer | None = None,
    ) -> None:
        self.settings = settings
        self.runtime = runtime
        self.authorization = authorization
        self._own_owner = authorization is None
        self.owner = (
            authorization.owner
            if authorization is not None
            else OwnerWeb(settings, lambda: runtime.require_service().store)
        )
        self.templates = templates(HERE / "templates")

    # ------------------------------------------------------------ plumbing
    @property
    def service(self) -> MemoryService:
        return self.runtime.require_service()

    async def call(self, fn: Callable[..., T], /, **kwargs: Any) -> T:
        """A synchronous service or store call, in a worker thread."""
        return await anyio.to_thread.run_sync(lambda: fn(**kwargs))

    def url(self, request: Request, path: str) -> str:
        return self.owner.url(request, path)

    def render(
        self,
        request: Request,
        session: Session,
        template: str,
        context: Mapping[str, Any],
        *,
        status_code: int = 200,
    ) -> Response:
        def link(path: str) -> str:
            return self.url(request, path)

        full = {
            "stylesheet": link(STYLESHEET_PATH),
            "console_stylesheet": link(STYLESHEET),
            "icon": link(ICON_PATH),
            "sign_out_url": link("/owner/sign-out"),
            "csrf": session.csrf,
            "link": link,
            "current": request.url.path,
            "notice": None,
            "error": None,
            **context,
        }
        return self.templates.TemplateResponse(
            request, template, full, status_code=status_code, headers=security_headers()
        )

    def refused(
        self, request: Request, session: Session, error: MetaCortexError, title: str
    ) -> Response:
        """A domain error as a page: its message, the HTTP status of its code."""
        return self.render(
            request,
            session,
            "refused.html",
            {"title": title, "error": error.message, "code": error.code},
            status_code=HTTP_STATUS.get(error.code, 400),
        )

    def redirect(self, request: Request, path: str) -> Response:
        return RedirectResponse(
            self.url(request, path), status_code=303, headers=security_headers()
        )

    def record_action(
        self,
        action: str,
        started: float,
        request_summary: Mapping[str, Any],
        *,
        response: Mapping[str, Any] | None = None,
        error: MetaCortexError | None = None,
    ) -> None:
        """An ``owner_action`` event (initiator ``owner``) for a change the owner made."""
        events = self.runtime.events
        if events is None:
            return
        events.owner_action(
            action=action,
            status="error" if error is not None else "ok",
            latency_ms=(time.perf_counter() - started) * 1000,
            request_summary=request_summary,
            response_summary=response,
            error={"code": error.code, "message": error.message} if error is not None else None,
        )

    # -------------------------------------------------------------- routes
    def _page(self, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        """Only for the signed-in owner; a POST must carry the session's CSRF token."""

        async def endpoint(request: Request) -> Response:
            session = await self.owner.session(request)
            if session is None:
                if request.method != "GET":
                    return await self.owner.sign_in_page(
                        request,
                        self.url(request, HOME),
                        error="Your session ended. Sign in again, then repeat the change.",
                        status_code=403,
                    )
                here = self.url(request, request.url.path)
                if request.url.query:
                    here += "?" + request.url.query
                return await self.owner.sign_in_page(request, here)
            if request.method == "POST":
                form = await request.form()
                if not session.csrf_matches(_text(form.get("csrf"))):
                    return self.render(
                        request,
                        session,
                        "refused.html",
                        {
                            "title": "The form expired",
                            "error": "This form is no longer valid (its security token did "
                            "not match). Reload the page and try again; nothing was changed.",
                            "code": "csrf",
                        },
                        status_code=403,
                    )
            return await handler(self, request, session)

        return endpoint

    def routes(self) -> list[BaseRoute]:
        from metacortex.console import activity, clients, curate, pages

        table: list[tuple[str, Handler, list[str]]] = [
            ("", pages.browse, ["GET"]),
            ("/memories/{memory_id}", pages.record, ["GET"]),
            ("/search", pages.search, ["GET"]),
            ("/memories/{memory_id}/deprecate", curate.deprecate, ["POST"]),
            ("/memories/{memory_id}/correct", curate.correct, ["POST"]),
            ("/memories/{memory_id}/promote", curate.promote, ["POST"]),
            ("/consolidate", curate.consolidate_page, ["GET"]),
            ("/consolidate/preview", curate.consolidate_preview, ["POST"]),
            ("/consolidate/confirm", curate.consolidate_confirm, ["POST"]),
            ("/clients", clients.clients_page, ["GET"]),
            ("/clients/grants/{grant_id}/revoke", clients.revoke_grant, ["POST"]),
            ("/activity", activity.activity_page, ["GET"]),
            ("/export", activity.export, ["GET"]),
        ]
        routes: list[BaseRoute] = []
        for prefix in ("", FUNCTION_PREFIX):
            routes += [
                Route(prefix + HOME + path, self._page(handler), methods=methods)
                for path, handler, methods in table
            ]
            routes += [
                Route(prefix + STYLESHEET, _static("console.css", "text/css"), methods=["GET"]),
            ]
        if self._own_owner:
            routes += self.owner.routes()
        return routes


def _static(name: str, media_type: str) -> Callable[[Request], Awaitable[Response]]:
    body = (HERE / "static" / name).read_bytes()

    async def serve(request: Request) -> Response:
        return Response(
            body,
            media_type=media_type,
            headers={"cache-control": "public, max-age=3600", "x-content-type-options": "nosniff"},
        )

    return serve


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def form_text(form: FormData, name: str) -> str | None:
    """A form field as stripped text; None when absent or empty."""
    value = _text(form.get(name))
    if value is None:
        return None
    value = value.strip()
    return value or None
