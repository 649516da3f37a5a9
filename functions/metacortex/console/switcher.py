"""Which space a console page shows, and the switcher in every page's header that
changes it.

A page shows the space its ``?space=KEY`` names, else the caller's home space
(``owner.callers.home_space``: ``default`` when they have it). The space travels in the
address: every link and form a page makes (``ConsoleBase.url``, ``link`` in templates)
carries the page's ``?space=`` on, so a memory's page, an action's form and the page it
redirects to stay in that space. A space the caller does not have is refused as one that
does not exist (``console.web``).

The owner may also choose **all spaces** (``?space=*``): the memories and search pages
then read every space one by one and merge them (``console.listing``,
``console.search``), and the activity page counts every space; the other pages, which
act in one space, show the home space (the switcher then says which).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Final

from starlette.requests import Request

from metacortex.access.model import DEFAULT_SPACE, Directory, Level

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
# The page that shows every space's events when no space is named.
ACTIVITY_PAGE: Final = "/console/activity"
# Query fields kept when switching on a listing page (the search's words).
KEPT_FIELDS: Final = ("q",)


def carried_space(request: Request) -> str | None:
    """The ``?space=`` this request was opened with, which every link it makes carries
    on (None: the caller's home space)."""
    return request.query_params.get("space") or None


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
    keys = sorted(levels, key=lambda key: (key != DEFAULT_SPACE, key))
    if len(keys) < 2:
        return None
    labels = space_labels(directory, keys)
    choices = [Choice(key, labels[key]) for key in keys]
    listing = next((page for page in LISTING_PAGES if path.endswith(page)), None)
    offers_all = is_owner and listing in ALL_SPACES_PAGES
    if offers_all:
        choices.insert(0, Choice(ALL_SPACES, "All spaces"))
    params = request.query_params
    all_by_default = listing == ACTIVITY_PAGE and carried_space(request) is None
    kept = {name: params[name] for name in KEPT_FIELDS if listing and params.get(name)}
    return {
        "choices": choices,
        # The activity page counts every space unless one is named.
        "current": ALL_SPACES if offers_all and (shown_all or all_by_default) else current,
        "action": listing or "/console",
        "kept": kept,
    }
