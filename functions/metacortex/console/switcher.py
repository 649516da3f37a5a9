"""Which space a console page shows, remembered for the session, and the switcher that
changes it.

A page shows the space its ``?space=KEY`` names; without one, the space chosen last in
this session; else the caller's home space (``owner.callers.home_space``). Every
``?space=`` a page is opened with is remembered (the switcher's form sends one; so do the
links of memories listed from all spaces), in a cookie bound to the session: its value
is the key and an HMAC of it keyed with the session's CSRF secret, so another session in
the same browser (someone else signing in) does not inherit it, and a space the caller
no longer has is ignored. ``HttpOnly``, ``SameSite=Strict``, ``Secure`` with the
``__Host-`` prefix over https, as the session's own cookie.

The owner may also choose **all spaces** (``?space=*``): the memories and search pages
then read every space one by one and merge them (``console.listing``,
``console.search``), and the activity page counts every space; the other pages, which
act in one space, show the home space (the switcher then says which).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections import Counter
from dataclasses import dataclass
from typing import Any, Final

from starlette.requests import Request
from starlette.responses import Response

from metacortex.owner import Session
from metacortex.owner.web import OwnerWeb, is_https
from metacortex.spaces.model import Directory, Level

# ``?space=*``: the owner's view of every space (not a space key: keys are slugs).
ALL_SPACES: Final = "*"
# Where the page check keeps whether this request shows all spaces (``request.state``).
_ALL_STATE: Final = "console_all_spaces"
# Pages that show all spaces, or whichever space is chosen, as they are: switching
# there stays on the page. Elsewhere (a memory, a confirmation) switching opens the
# memories of the chosen space.
LISTING_PAGES: Final = ("/console", "/console/search", "/console/consolidate", "/console/activity")
# Listing pages that can show every space at once (the owner's "All spaces"): only there
# does the switcher offer it.
ALL_SPACES_PAGES: Final = ("/console", "/console/search", "/console/activity")
# Query fields kept when switching on a listing page (the search's words).
KEPT_FIELDS: Final = ("q",)


def cookie_name(request: Request, owner: OwnerWeb) -> str:
    return "__Host-mc_space" if is_https(request, owner.settings) else "mc_space"


def _mac(session: Session, choice: str) -> str:
    digest = hmac.new(session.csrf.encode(), b"space:" + choice.encode(), hashlib.sha256)
    return base64.urlsafe_b64encode(digest.digest()[:16]).decode().rstrip("=")


def remembered(request: Request, owner: OwnerWeb, session: Session) -> str | None:
    """The space chosen last in this session (a key, or ``*``), if its cookie is this
    session's."""
    value = request.cookies.get(cookie_name(request, owner), "")
    choice, _, mac = value.rpartition("~")
    if not choice or not hmac.compare_digest(mac.encode(), _mac(session, choice).encode()):
        return None
    return choice


def remember(
    request: Request, response: Response, owner: OwnerWeb, session: Session, choice: str
) -> None:
    owner.set_cookie(
        request, response, cookie_name(request, owner), f"{choice}~{_mac(session, choice)}"
    )


def keep_all_spaces(request: Request, shown: bool) -> None:
    """Set by the console's page check, once per request (``console.web``)."""
    setattr(request.state, _ALL_STATE, shown)


def all_spaces(request: Request) -> bool:
    """Whether this request shows every space (the owner chose "All spaces")."""
    return bool(getattr(request.state, _ALL_STATE, False))


@dataclass(frozen=True, slots=True)
class Choice:
    value: str  # a space key, or ``*``
    label: str


def space_labels(directory: Directory, keys: list[str]) -> dict[str, str]:
    """Each space's name, with its key when another space has the same name."""
    names = {key: directory.spaces[key].name if key in directory.spaces else key for key in keys}
    repeated = Counter(name.casefold() for name in names.values())
    return {
        key: name if repeated[name.casefold()] == 1 else f"{name} ({key})"
        for key, name in names.items()
    }


def switcher(
    request: Request,
    *,
    levels: dict[str, Level] | Any,
    directory: Directory,
    current: str,
    is_owner: bool,
    shown_all: bool,
    path: str,
) -> dict[str, Any] | None:
    """What the header's switcher shows: the choices and the one in effect, and where its
    form goes; None when the caller has only one space (nothing to switch)."""
    keys = sorted(levels, key=lambda key: (key != "default", key))
    if len(keys) < 2:
        return None
    labels = space_labels(directory, keys)
    choices = [Choice(key, labels[key]) for key in keys]
    listing = next((page for page in LISTING_PAGES if path.endswith(page)), None)
    offers_all = is_owner and listing in ALL_SPACES_PAGES
    if offers_all:
        choices.insert(0, Choice(ALL_SPACES, "All spaces"))
    params = request.query_params
    kept = {name: params[name] for name in KEPT_FIELDS if listing and params.get(name)}
    return {
        "choices": choices,
        "current": ALL_SPACES if shown_all and offers_all else current,
        "action": listing or "/console",
        "kept": kept,
    }
