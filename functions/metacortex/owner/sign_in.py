"""The sign-in pages: sign in (the owner with the passphrase alone, as before people
existed; a person with their email and the passphrase they set through an invitation,
``owner/invitation_pages.py``), sign out, and the pages' stylesheet and icon.

A sign-in is a form posted before any session exists: it carries the double-submit CSRF
token (``OwnerBase.form_page``), spends one sign-in attempt (``OwnerBase.attempt_wait``)
before the passphrase is checked, and follows its ``next`` only to a page of this server.
"""

from __future__ import annotations

from typing import Final

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from metacortex.access.model import OWNER_ID
from metacortex.access.registry import read_directory
from metacortex.owner.base import (
    HERE,
    SIGN_IN_PATH,
    OwnerBase,
    public_base,
    security_headers,
    text,
)
from metacortex.owner.passphrase import verify_passphrase, verify_person_passphrase

_PRE_CSRF_FIELD: Final = "csrf"


async def sign_in(web: OwnerBase, request: Request) -> Response:
    if request.method == "GET":
        session = await web.session(request)
        if session is not None:
            return web.render(
                request,
                "signed_in.html",
                {"csrf": session.csrf, "console_url": web.url(request, "/console")},
            )
        return await web.sign_in_page(request, request.query_params.get("next", ""))
    form = await request.form()
    next_url = _safe_next(web, request, text(form.get("next")))
    if not web.form_is_fresh(request, text(form.get(_PRE_CSRF_FIELD))):
        return await web.sign_in_page(
            request,
            next_url,
            error="The form expired. Please sign in again.",
            status_code=403,
        )
    email = (text(form.get("email")) or "").strip()
    wait = await web.attempt_wait(request)
    if wait is not None:
        response = await web.sign_in_page(
            request,
            next_url,
            error=f"Too many sign-in attempts. Wait {wait} seconds and try again.",
            status_code=429,
            email=email,
        )
        response.headers["retry-after"] = str(wait)
        return response
    passphrase = text(form.get("passphrase")) or ""
    if not email:
        ok = await anyio.to_thread.run_sync(verify_passphrase, web.store, passphrase)
        if not ok:
            return await web.sign_in_page(
                request, next_url, error="That passphrase is not correct.", status_code=401
            )
        return await web.signed_in(request, OWNER_ID, next_url)
    directory = await anyio.to_thread.run_sync(read_directory, web.store)
    person = directory.by_email(email)
    ok = await anyio.to_thread.run_sync(
        verify_person_passphrase, web.store, person.id if person else None, passphrase
    )
    if not ok or person is None:
        return await web.sign_in_page(
            request,
            next_url,
            error="That email and passphrase do not match.",
            status_code=401,
            email=email,
        )
    if not person.active:
        return await web.sign_in_page(
            request,
            next_url,
            error="Your access to this server is turned off. Ask its owner to turn it back on.",
            status_code=403,
            email=email,
        )
    return await web.signed_in(request, person.id, next_url)


async def sign_out(web: OwnerBase, request: Request) -> Response:
    form = await request.form()
    session = await web.session(request)
    if session is None or not session.csrf_matches(text(form.get("csrf"))):
        return await web.sign_in_page(request, "", error="You are not signed in.", status_code=403)
    value = request.cookies.get(web.cookie_name(request))
    await anyio.to_thread.run_sync(web.sessions.end, value)
    response = RedirectResponse(
        web.url(request, SIGN_IN_PATH), status_code=303, headers=security_headers()
    )
    response.delete_cookie(web.cookie_name(request), path="/")
    return response


async def stylesheet(request: Request) -> Response:
    css = (HERE / "static" / "owner.css").read_text(encoding="utf-8")
    return Response(
        css,
        media_type="text/css",
        headers={"cache-control": "public, max-age=3600", "x-content-type-options": "nosniff"},
    )


async def icon(request: Request) -> Response:
    # Linked from every page, so a browser never asks for a missing /favicon.ico.
    return Response(
        (HERE / "static" / "icon.svg").read_bytes(),
        media_type="image/svg+xml",
        headers={"cache-control": "public, max-age=86400", "x-content-type-options": "nosniff"},
    )


def _safe_next(web: OwnerBase, request: Request, next_url: str | None) -> str:
    """Only a URL on this server is followed after sign-in (no open redirect)."""
    base = public_base(request, web.settings)
    if next_url and (next_url == base or next_url.startswith(base + "/")):
        return next_url
    return base + SIGN_IN_PATH
