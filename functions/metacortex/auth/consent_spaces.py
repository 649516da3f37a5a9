"""Which spaces a connector gets: chosen on the consent page, among the approver's.

The approver is whoever is signed in: the owner, who may give any space at write,
or a person the owner invited, who may give their own spaces at most at their own
level there (membership capped by role: ``access.model.effective_levels``). Never
above what the endpoint itself holds either (``auth.resource`` caps a grant by it
at every request; the page offers no more than that, so what it says is what the
connector gets).

The page preselects the approver's default space (``default`` when they have it,
else the first of theirs by key) at the highest level allowed there, alone. The
grant records the approver (``person``), the levels (``spaces``: ``{key: "read" |
"write"}``) and ``default_space``, which ``access.grants.grant_profile`` reads.

A form that sends no space field at all (a client of the consent form other than
the page, such as the tests' plain-HTTP user agent) gets the preselection: what a
plain "Allow" on the page sends.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from starlette.datastructures import FormData

from metacortex.access.grants import grantable_levels
from metacortex.access.model import Level
from metacortex.access.profiles import Profile
from metacortex.errors import InvalidArgument
from metacortex.owner.callers import Caller, home_space

FIELD_PREFIX: Final = "space-"
DEFAULT_FIELD: Final = "default_space"
NONE: Final = "none"
# How the page names each level it offers.
LEVEL_WORDS: Final = {NONE: "No access", "read": "Read only", "write": "Read and write"}


@dataclass(frozen=True, slots=True)
class SpaceChoice:
    levels: Mapping[str, Level]
    default: str

    def record(self) -> dict[str, Any]:
        """The grant record's fields (``access.grants.grant_profile`` reads them)."""
        return {
            "spaces": {key: level.word for key, level in sorted(self.levels.items())},
            "default_space": self.default,
        }

    def fields(self) -> dict[str, str]:
        """The form fields this choice is (to show it again)."""
        return {
            **{FIELD_PREFIX + key: level.word for key, level in self.levels.items()},
            DEFAULT_FIELD: self.default,
        }


def allowed_levels(caller: Caller, endpoint: Profile | None) -> dict[str, Level]:
    """Space key -> the highest level the signed-in approver may give a connector there
    (``access.grants.grantable_levels``)."""
    return grantable_levels(caller.levels, endpoint)


def preselection(allowed: Mapping[str, Level]) -> SpaceChoice:
    """The approver's default space at the highest level allowed there."""
    default = home_space(allowed)
    return SpaceChoice({default: allowed[default]}, default)


def chosen(form: FormData, allowed: Mapping[str, Level]) -> SpaceChoice:
    """The spaces and default the form chose; InvalidArgument saying what to fix."""
    fields = {
        name[len(FIELD_PREFIX) :]: value
        for name, value in form.multi_items()
        if name.startswith(FIELD_PREFIX) and isinstance(value, str)
    }
    default = form.get(DEFAULT_FIELD)
    if not fields and default is None:
        return preselection(allowed)
    levels: dict[str, Level] = {}
    for key, word in fields.items():
        if word == NONE:
            continue
        if key not in allowed:
            raise InvalidArgument(f"the space {key!r} is not one you can give")
        level = Level.parse(word, f"the level for {key!r}")
        if level > allowed[key]:
            raise InvalidArgument(
                f"you can give at most {allowed[key].word} access to the space {key!r}"
            )
        levels[key] = level
    if not levels:
        raise InvalidArgument("choose at least one space it may use")
    if not isinstance(default, str) or default not in levels:
        raise InvalidArgument(
            "its default space must be one of the spaces it gets: choose a level there, "
            "or another default"
        )
    return SpaceChoice(levels, default)


def offered(
    caller: Caller, allowed: Mapping[str, Level], fields: Mapping[str, str]
) -> list[dict[str, Any]]:
    """Each space the page offers: key, name, the level words it may choose between and
    the one selected (``fields``: a choice's form fields)."""
    spaces = caller.directory.spaces
    shown = []
    for key in sorted(allowed):
        words = [NONE, *(level.word for level in Level if level <= allowed[key])]
        shown.append(
            {
                "key": key,
                "name": spaces[key].name if key in spaces else key,
                "levels": [(word, LEVEL_WORDS[word]) for word in words],
                "selected": fields.get(FIELD_PREFIX + key, NONE),
            }
        )
    return shown
