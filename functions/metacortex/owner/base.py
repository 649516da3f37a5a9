"""What the owner's pages share: page rendering with strict security headers, the
sign-in session and its cookies, the pre-sign-in CSRF token, the sign-in attempt budget,
and the public base URL.

Every page is server-rendered from ``owner/templates`` (Starlette's Jinja2
templates, autoescaped), with one same-origin stylesheet and no script. Headers
on every page: a CSP of ``default-src 'none'`` with ``frame-ancestors 'none'``,
``X-Frame-Options: DENY``, ``Referrer-Policy: no-referrer``, ``no-store``.

CSRF: before sign-in, a double-submit token (an HttpOnly ``SameSite=Strict``
cookie equal to a hidden field); after sign-in, the session's own token.
Sign-in is rate-limited per client address and overall, and the passphrase
check runs the KDF whether or not a passphrase is set. A browser that signed in
before presents its device cookie and has a budget of its own
(``owner/devices.py``), so nobody else can lock the owner out.

The owner's page modules (``sign_in``, ``invitation_pages``) take ``OwnerBase``;
``owner.web.OwnerWeb`` adds their routes, so nothing imports in a loop (as in
``console/``: ``base``, its pages, ``web``).
"""

from __future__ import annotations

import hmac
import re
import secrets
from collections.abc import Callable, Mapping
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from metacortex.access.model import Directory
from metacortex.access.registry import read_directory
from metacortex.config import Settings
from metacortex.guard.addresses import client_address
from metacortex.guard.ratelimit import RateLimiter
from metacortex.kernel.routes import FUNCTION_PREFIX
from metacortex.owner import callers
from metacortex.owner.callers import Caller, DirectorySource
from metacortex.owner.devices import LIFETIME as DEVICE_LIFETIME
from metacortex.owner.devices import OwnerDevices
from metacortex.owner.passphrase import is_set
from metacortex.owner.sessions import OwnerSessions, Session
from metacortex.storage.base import MemoryStore

if TYPE_CHECKING:
    from starlette.templating import Jinja2Templates

HERE: Final = Path(__file__).parent
SIGN_IN_PATH: Final = "/owner/sign-in"
SIGN_OUT_PATH: Final = "/owner/sign-out"
STYLESHEET_PATH: Final = "/owner/static/owner.css"
ICON_PATH: Final = "/owner/static/icon.svg"
_CSP_SOURCE: Final = re.compile(
    r"[a-z][a-z0-9+.\-]*:(?://(?:[a-z0-9.\-]+|\[[0-9a-f:.]+\])(?::[0-9]{1,5})?)?"
)


class PageTemplates:
    """Jinja2 templates (autoescaped, strict) built when the first page is rendered,
    so that starting the app, as a cold start does, never loads jinja2."""

    def __init__(self, directories: list[Path]) -> None:
        self._directories = directories
        self._built: Jinja2Templates | None = None

    def TemplateResponse(
        self,
        request: Request,
        name: str,
        context: dict[str, Any],
        *,
        status_code: int = 200,
        headers: Mapping[str, str] | None = None,
    ) -> Response:
        return self._templates().TemplateResponse(
            request, name, context, status_code=status_code, headers=headers
        )

    def _templates(self) -> Jinja2Templates:
        if self._built is None:
            import jinja2
            from starlette.templating import Jinja2Templates

            environment = jinja2.Environment(
                loader=jinja2.FileSystemLoader(self._directories),
                autoescape=True,
                undefined=jinja2.StrictUndefined,
            )
            self._built = Jinja2Templates(env=environment)
        return self._built


def templates(extra_directory: Path | None = None) -> PageTemplates:
    """Templates of the owner package (and of another package using its layout)."""
    directories = [HERE / "templates"]
    if extra_directory is not None:
        directories.insert(0, extra_directory)
    return PageTemplates(directories)


def public_base(request: Request, settings: Settings) -> str:
    """The public base URL (``scheme://host[/prefix]``, no trailing slash)."""
    if settings.metacortex_public_url:
        return settings.metacortex_public_url.rstrip("/")
    prefix = FUNCTION_PREFIX if request.url.path.startswith(FUNCTION_PREFIX + "/") else ""
    host = request.headers.get("host", "localhost")
    return f"{request.url.scheme}://{host}{prefix}"


def is_https(request: Request, settings: Settings) -> bool:
    return public_base(request, settings).startswith("https://")


def security_headers(
    form_targets: tuple[str, ...] = (), *, scripts: bool = False
) -> dict[str, str]:
    """Headers for every owner page. ``form_targets`` are extra CSP sources a form on the
    page may end up at (the consent form redirects to the client); anything that is not
    a plain ``scheme://host[:port]`` or ``scheme:`` source is left out, so no value can
    add a directive to the policy. ``scripts``: the page may load script files from its
    own origin (``script-src 'self'``: the console's copy buttons), never inline script."""
    sources = [target for target in form_targets if _CSP_SOURCE.fullmatch(target)]
    form_action = " ".join(("'self'", *sources))
    script = "script-src 'self'; " if scripts else ""
    return {
        "content-security-policy": (
            f"default-src 'none'; {script}style-src 'self'; img-src 'self'; "
            f"form-action {form_action}; frame-ancestors 'none'; base-uri 'none'"
        ),
        "x-frame-options": "DENY",
        "x-content-type-options": "nosniff",
        "referrer-policy": "no-referrer",
        "cache-control": "no-store",
    }


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


class OwnerBase:
    """Owner sign-in for one app: sessions, rendering, and the check other pages use.

    ``metacortex.owner.web.OwnerWeb`` adds the routes."""

    def __init__(
        self,
        settings: Settings,
        store_of: Callable[[], MemoryStore],
        *,
        page_templates: PageTemplates | None = None,
        limiter: RateLimiter | None = None,
        directory_of: DirectorySource | None = None,
    ) -> None:
        """``store_of`` returns the store (it may exist only once the app has started);
        ``directory_of`` the spaces and people the process holds (by default read from
        the store each time)."""
        self.settings = settings
        self._store_of = store_of
        self._lifetime = timedelta(hours=settings.metacortex_owner_session_hours)
        self.templates = page_templates or templates()
        self._limiter = limiter or RateLimiter()
        self._directory_of = directory_of or self._read_directory

    async def _read_directory(self) -> Directory:
        return await anyio.to_thread.run_sync(read_directory, self.store)

    @property
    def store(self) -> MemoryStore:
        return self._store_of()

    @property
    def sessions(self) -> OwnerSessions:
        return OwnerSessions(self.store, self._lifetime)

    @property
    def devices(self) -> OwnerDevices:
        return OwnerDevices(self.store)

    # -------------------------------------------------------------- helpers
    def cookie_name(self, request: Request) -> str:
        # __Host- cookies must be Secure, Path=/ and have no Domain: the browser
        # then refuses any attempt by a sibling host to set or shadow them.
        return "__Host-mc_owner" if is_https(request, self.settings) else "mc_owner"

    def pre_csrf_cookie(self, request: Request) -> str:
        return "__Host-mc_csrf" if is_https(request, self.settings) else "mc_csrf"

    def _device_cookie(self, request: Request) -> str:
        return "__Host-mc_device" if is_https(request, self.settings) else "mc_device"

    async def session(self, request: Request) -> Session | None:
        """The signed-in session for this request (the owner's or an active person's),
        or None."""
        found = await self.caller(request)
        return found.session if found is not None else None

    async def caller(self, request: Request) -> Caller | None:
        """Who is signed in on this request (session, person, spaces and people), or
        None: no session, an expired one, or a person who may no longer sign in."""
        value = request.cookies.get(self.cookie_name(request))
        session = await anyio.to_thread.run_sync(self.sessions.get, value)
        if session is None:
            return None
        return await callers.resolve(session, self._directory_of, self.store)

    def url(self, request: Request, path: str) -> str:
        return public_base(request, self.settings) + path

    def render(
        self,
        request: Request,
        template: str,
        context: Mapping[str, Any],
        *,
        status_code: int = 200,
        form_targets: tuple[str, ...] = (),
    ) -> Response:
        full = {
            "stylesheet": self.url(request, STYLESHEET_PATH),
            "icon": self.url(request, ICON_PATH),
            "sign_out_url": self.url(request, SIGN_OUT_PATH),
            **context,
        }
        return self.templates.TemplateResponse(
            request,
            template,
            full,
            status_code=status_code,
            headers=security_headers(form_targets),
        )

    def set_cookie(
        self,
        request: Request,
        response: Response,
        name: str,
        value: str,
        *,
        max_age: int | None = None,
    ) -> None:
        """An HttpOnly, SameSite=Strict cookie (Secure over https); a session's lifetime
        unless ``max_age`` says otherwise."""
        response.set_cookie(
            name,
            value,
            max_age=max_age if max_age is not None else int(self._lifetime.total_seconds()),
            path="/",
            secure=is_https(request, self.settings),
            httponly=True,
            samesite="strict",
        )

    async def sign_in_page(
        self,
        request: Request,
        next_url: str,
        *,
        error: str | None = None,
        status_code: int = 200,
        email: str = "",
    ) -> Response:
        """The sign-in form (also shown in place of a page that needs a signed-in
        caller); ``email`` as typed before."""
        response = self.form_page(
            request,
            "sign_in.html",
            {
                "action": self.url(request, SIGN_IN_PATH),
                "next_url": next_url,
                "error": error,
                "email": email,
                "passphrase_set": await anyio.to_thread.run_sync(is_set, self.store),
            },
            status_code=status_code,
        )
        return response

    def form_page(
        self,
        request: Request,
        template: str,
        context: Mapping[str, Any],
        *,
        status_code: int = 200,
    ) -> Response:
        """A page whose form is posted before sign-in: it carries a double-submit CSRF
        token (``csrf``, equal to an HttpOnly cookie) that ``form_is_fresh`` checks."""
        token = request.cookies.get(self.pre_csrf_cookie(request)) or secrets.token_urlsafe(32)
        response = self.render(
            request, template, {**context, "csrf": token}, status_code=status_code
        )
        self.set_cookie(request, response, self.pre_csrf_cookie(request), token)
        return response

    def form_is_fresh(self, request: Request, presented: str | None) -> bool:
        """Whether a form posted before sign-in carries the token its page set."""
        cookie = request.cookies.get(self.pre_csrf_cookie(request))
        return bool(cookie and presented and hmac.compare_digest(cookie, presented))

    async def attempt_wait(self, request: Request) -> int | None:
        """Spend one sign-in attempt (a passphrase check): None when allowed, else the
        seconds to wait. A known browser (device cookie) has a budget of its own; any
        other attempt counts against its address and all addresses together."""
        presented = request.cookies.get(self._device_cookie(request))
        device = await anyio.to_thread.run_sync(self.devices.recognise, presented)
        per_minute = self.settings.metacortex_sign_in_per_minute
        if device is not None:  # a browser that signed in before: its own budget
            return self._limiter.acquire(f"device:{device}", per_minute)
        return self._limiter.acquire(
            client_address(request).bucket, per_minute
        ) or self._limiter.acquire("overall", self.settings.metacortex_sign_in_per_minute_overall)

    async def signed_in(self, request: Request, person: str, next_url: str) -> Response:
        """A new session of ``person`` (and the browser remembered as a device), then on
        to ``next_url``."""
        value, _ = await anyio.to_thread.run_sync(self.sessions.create, person)
        presented = request.cookies.get(self._device_cookie(request))
        known = await anyio.to_thread.run_sync(self.devices.recognise, presented)
        device_value = await anyio.to_thread.run_sync(
            self.devices.enrol, presented if known is not None else None
        )
        response = RedirectResponse(next_url, status_code=303, headers=security_headers())
        self.set_cookie(request, response, self.cookie_name(request), value)
        self.set_cookie(
            request,
            response,
            self._device_cookie(request),
            device_value,
            max_age=int(DEVICE_LIFETIME.total_seconds()),
        )
        response.delete_cookie(self.pre_csrf_cookie(request), path="/")
        return response


def text(value: object) -> str | None:
    """A form field's text (None: absent, or a file)."""
    return value if isinstance(value, str) else None
