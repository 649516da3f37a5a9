"""What the console's pages share: the caller's access, rendering (with ``present``'s
helpers), refusals, redirects, owner events and form fields.

The caller's access is built once per request, where the console checks the session
(``console.web``), by ``caller_access``, and every page reads it with
``access_for(request)``: the owner acts in every space (``Access.admin``); a person
signed in with their email acts in their spaces at their level (their membership
capped by their role, ``access.model.effective_levels``), with every state readable,
never erasing. The space a page shows is the caller's default space: ``?space=KEY``
when the caller has it, else ``default`` when they have that, else the first of
theirs by key. Every store call a page makes names it (``space=``), and every link and
form it makes carries its ``?space=`` on (``ConsoleBase.url``).

Page modules (``browse``, ``record``, ``search``, ``curate``, ``consolidate``, ``erase``,
``clients``, ``activity``) import this module;
``web`` imports them to build the routes, so nothing imports in a loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, TypeVar
from urllib.parse import parse_qsl, urlencode

import anyio.to_thread
from markupsafe import Markup
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from metacortex.access.model import Level
from metacortex.config import Settings
from metacortex.console.present import ago, clock, exact, first_line, wire
from metacortex.console.switcher import all_spaces, carried_space, space_labels, switcher
from metacortex.console.words import code_words, in_console, merge_method
from metacortex.domain.records import ALL_STATES, BranchState, utc_now
from metacortex.errors import Forbidden, MetaCortexError
from metacortex.kernel.domain_errors import HTTP_STATUS
from metacortex.kernel.runtime import Runtime
from metacortex.owner import OwnerWeb, Session, security_headers, templates
from metacortex.owner.base import ICON_PATH, STYLESHEET_PATH
from metacortex.owner.callers import Caller, home_space
from metacortex.service import Access, MemoryService
from metacortex.usecases.undo import UNDO_WINDOW

if TYPE_CHECKING:
    from metacortex.auth import AuthorizationServer

HERE: Final = Path(__file__).parent
HOME: Final = "/console"
STYLESHEET: Final = "/console/static/console.css"
SCRIPT: Final = "/console/static/console.js"
# The credential the console's changes are recorded with (``created_by.client``).
CONSOLE_PRINCIPAL: Final = "console"
# Where the page check keeps the caller's access for the request (``request.state``).
_ACCESS_STATE: Final = "console_access"
T = TypeVar("T")
# A change refused where the caller may only read.
READ_ONLY: Final = (
    "You may read this space but not change it. Ask the owner for write access, or "
    "choose a space you may write to."
)


def caller_access(caller: Caller, chosen: str | None = None) -> Access:
    """The access of a signed-in console caller (see the module's note); ``chosen``: the
    space asked for (``?space=``), used as the default when the caller has it."""
    directory = caller.directory
    if caller.is_owner:
        access = Access.admin(directory=directory, principal=CONSOLE_PRINCIPAL)
    else:
        access = Access(
            frozenset(ALL_STATES),
            BranchState.ACTIVE,
            may_write_lifecycle=True,
            principal=CONSOLE_PRINCIPAL,
            may_erase=False,
            levels=MappingProxyType(caller.levels),
            person=caller.person.id,
            names=MappingProxyType(directory.names()),
            directory=directory,
        )
    levels = access.levels
    default = chosen if chosen is not None and chosen in levels else home_space(levels)
    return replace(access, default_space=default)


def keep_access(request: Request, access: Access) -> None:
    """Set by the console's page check, once per request (``console.web``)."""
    setattr(request.state, _ACCESS_STATE, access)


def access_for(request: Request) -> Access:
    """The signed-in caller's access on this console request: the one every page uses."""
    access = getattr(request.state, _ACCESS_STATE, None)
    if not isinstance(access, Access):
        raise RuntimeError("a console page was reached without the session check")
    return access


class ConsoleBase:
    """What every console page uses: the service, rendering, redirects, owner events.

    ``metacortex.console.web.Console`` adds the routes; page modules take this type,
    so they never import the module that imports them."""

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
            else OwnerWeb(
                settings,
                lambda: runtime.require_service().store,
                directory_of=runtime.clients.current_directory,
            )
        )
        self.templates = templates(HERE / "templates")

    # ------------------------------------------------------------ plumbing
    @property
    def service(self) -> MemoryService:
        return self.runtime.require_service()

    async def call(self, fn: Callable[..., T], /, **kwargs: Any) -> T:
        """A synchronous service or store call, in a worker thread."""
        return await anyio.to_thread.run_sync(lambda: fn(**kwargs))

    def url(self, request: Request, path: str, **query: str | None) -> str:
        """The address of a console page (``path`` may hold a query and a fragment) with ``query``
        added (empty values left out), carrying this page's ``?space=`` on unless it
        names another (``console.switcher``)."""
        path, hash_, fragment = path.partition("#")
        where, _, given = path.partition("?")
        params = parse_qsl(given, keep_blank_values=True)
        params += [(name, value) for name, value in query.items() if value]
        space = carried_space(request)
        if space is not None and all(name != "space" for name, _ in params):
            params.insert(0, ("space", space))
        found = "?" + urlencode(params) if params else ""
        return self.owner.url(request, where) + found + hash_ + fragment

    def render(
        self,
        request: Request,
        session: Session,
        template: str,
        context: Mapping[str, Any],
        *,
        status_code: int = 200,
    ) -> Response:
        def link(path: str, **query: str | None) -> str:
            return self.url(request, path, **query)

        now = utc_now()
        access = access_for(request)
        full = {
            "first_line": first_line,
            "ago": lambda value: ago(value, now),
            "exact": exact,
            "clock": clock,
            "merge_words": merge_method,
            "undo_minutes": int(UNDO_WINDOW.total_seconds() // 60),
            "wire": wire,
            "stylesheet": link(STYLESHEET_PATH),
            "console_stylesheet": link(STYLESHEET),
            "console_script": link(SCRIPT),
            "icon": link(ICON_PATH),
            "sign_out_url": link("/owner/sign-out"),
            "csrf": session.csrf,
            # What the page offers: the owner's pages and erasure, changes where the
            # caller may write (the service refuses anything else anyway).
            "is_owner": access.is_owner,
            "may_write": self.may_write(request),
            "link": link,
            # GET forms drop their action's query: they carry the page's space in this.
            "space_input": space_input(carried_space(request)),
            "current": request.url.path,
            "all_spaces_shown": all_spaces(request),
            "space_switch": switcher(
                request,
                levels=access.levels,
                directory=access.directory,
                current=access.default_space,
                is_owner=access.is_owner,
                shown_all=all_spaces(request),
                path=request.url.path,
            ),
            "notice": None,
            "error": None,
            "undo": None,
            "code_words": code_words,
            # The space the page shows, named in the header when there is no switcher.
            "space_name": space_labels(access.directory, [access.default_space]).get(
                access.default_space, access.default_space
            ),
            **context,
        }
        if isinstance(full["error"], str):
            full["error"] = in_console(full["error"])
        return self.templates.TemplateResponse(
            request, template, full, status_code=status_code, headers=page_headers()
        )

    @staticmethod
    def may_write(request: Request) -> bool:
        """Whether the caller may change memories in the page's space."""
        access = access_for(request)
        return access.levels.get(access.default_space) == Level.WRITE

    def read_only(self, request: Request, session: Session) -> Response:
        """The page a reader gets for a change of the page's space (403)."""
        return self.refused(request, session, Forbidden(READ_ONLY), "You may only read")

    def refused(
        self, request: Request, session: Session, error: MetaCortexError, title: str
    ) -> Response:
        """A domain error as a page: its message, the HTTP status of its code (and when
        to retry, for a busy server: ``Retry-After``)."""
        page = self.render(
            request,
            session,
            "refused.html",
            {"title": title, "error": error.message, "code": error.code},
            status_code=self.status_of(error),
        )
        retry_after = getattr(error, "retry_after_seconds", None)
        if retry_after is not None:
            page.headers["retry-after"] = str(retry_after)
        return page

    @staticmethod
    def status_of(error: MetaCortexError) -> int:
        """The HTTP status of a refused action, by the domain error's code."""
        return HTTP_STATUS.get(error.code, 400)

    def redirect(self, request: Request, path: str) -> Response:
        return RedirectResponse(
            self.url(request, path), status_code=303, headers=security_headers()
        )

    def record_action(
        self,
        request: Request,
        action: str,
        started: float,
        request_summary: Mapping[str, Any],
        *,
        response: Mapping[str, Any] | None = None,
        error: MetaCortexError | None = None,
        in_space: bool = True,
        space: str | None = None,
    ) -> None:
        """An ``owner_action`` event for a change made in the console: by the owner
        (initiator ``owner``) or a signed-in person, in the page's space (``in_space``
        False: a change of no space, such as a client's; ``space``: the space it
        changed, when not the page's, such as a space added or removed)."""
        events = self.runtime.events
        if events is None:
            return
        access = access_for(request)
        events.owner_action(
            action=action,
            status="error" if error is not None else "ok",
            latency_ms=(time.perf_counter() - started) * 1000,
            request_summary=request_summary,
            response_summary=response,
            error={"code": error.code, "message": error.message} if error is not None else None,
            space=space if space is not None else access.default_space if in_space else None,
            person=access.person,
        )


def page_headers() -> dict[str, str]:
    """The owner pages' strict headers; console pages may load the console's own script
    file (``script-src 'self'``, never inline script)."""
    return security_headers(scripts=True)


def space_input(space: str | None) -> Markup:
    """The hidden field a GET form carries the page's ``?space=`` in (none without one)."""
    if space is None:
        return Markup("")
    return Markup('<input type="hidden" name="space" value="{}">').format(space)


def text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def form_text(form: FormData, name: str) -> str | None:
    """A form field as stripped text; None when absent or empty."""
    value = text(form.get(name))
    if value is None:
        return None
    value = value.strip()
    return value or None
