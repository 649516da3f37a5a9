"""What an OAuth grant may do: the presets shown on the consent page, and the profile a
request with a grant's token gets.

A grant records the chosen preset (its tools are the tool catalogue's members of
it), readable states, lifecycle right and rate limit; at each request they are
intersected with the endpoint's own profile (the admin profile's ``MCP_ALLOWED_*``
or the static client profile), and its levels capped by the endpoint's, space by
space (``grant_profile``), so a grant never exceeds what the endpoint allows. An
approver gives a connector at most their own level in a space, within the
endpoint's (``grantable_levels``).

The consent page preselects the smallest preset that covers the scopes the client
asked for, as far as the endpoint offers them (a coding agent asking for
``memory:write`` can save after a plain "Allow"). A grant keeps only the scopes
its preset uses there (``granted_scopes``), so its scopes and its tools tell one
story: a "Read only" grant is ``memory:read``, whatever was asked.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any, Final

from metacortex import tool_catalogue
from metacortex.access import scopes as scope_names
from metacortex.access.model import OWNER_ID, Directory, Level
from metacortex.access.profiles import Profile, entry_grants, with_directory
from metacortex.domain.records import ALL_STATES, BranchState
from metacortex.tool_catalogue import Group


@dataclass(frozen=True, slots=True)
class Preset:
    id: str
    title: str
    states: tuple[BranchState, ...]
    may_write_lifecycle: bool

    @property
    def tools(self) -> tuple[str, ...]:
        """The tools it grants, as the tool catalogue says."""
        return tool_catalogue.preset_tools(self.id)


PRESETS: Final = (
    Preset(tool_catalogue.READ_PRESET, "Read only", (BranchState.ACTIVE,), False),
    Preset(tool_catalogue.READ_WRITE_PRESET, "Read and save", (BranchState.ACTIVE,), False),
    Preset(tool_catalogue.CURATOR_PRESET, "Curate everything", tuple(ALL_STATES), True),
)
BY_ID: Final = {preset.id: preset for preset in PRESETS}
CHATGPT_HOSTS: Final = frozenset({"chatgpt.com", "chat.openai.com"})
CLAUDE_HOSTS: Final = frozenset({"claude.ai", "claude.com"})


@dataclass(frozen=True, slots=True)
class KnownClient:
    name: str
    chatgpt_tools: bool


def known_client(redirect_host: str) -> KnownClient | None:
    if redirect_host in CHATGPT_HOSTS:
        return KnownClient("ChatGPT", chatgpt_tools=True)
    if redirect_host in CLAUDE_HOSTS:
        return KnownClient("Claude", chatgpt_tools=False)
    return None


# How the consent page names the states a grant reads.
_STATE_WORDS: Final = {
    BranchState.ACTIVE: "active",
    BranchState.WIP: "draft",
    BranchState.MERGED: "merged",
    BranchState.DEPRECATED: "deprecated",
}


def tools_at(preset: Preset, endpoint: Profile | None) -> tuple[str, ...]:
    """The preset's tools a grant gets at ``endpoint`` (None: not one of this server's)."""
    return tuple(t for t in preset.tools if endpoint is None or t in endpoint.allowed_tools)


def states_at(preset: Preset, endpoint: Profile | None) -> tuple[BranchState, ...]:
    """The states a grant with ``preset`` reads at ``endpoint``: the preset's within the
    endpoint's, or the endpoint's default state when they share none."""
    if endpoint is None:
        return preset.states
    shared = tuple(s for s in ALL_STATES if s in preset.states and s in endpoint.readable_states)
    return shared or (endpoint.default_state,)


def describe(tools: tuple[str, ...], states: tuple[BranchState, ...]) -> str:
    """One sentence saying what a grant with these tools and readable states may do, so
    the consent page's words match what is granted ("your draft memories" where only
    drafts can be read)."""
    reading = _verbs(Group.READING, tools)
    changing = _verbs(Group.CURATING, tools)
    which = (
        "memories in every state (active, draft, merged, deprecated)"
        if set(states) == set(ALL_STATES)
        else f"{_and([_STATE_WORDS[s] for s in ALL_STATES if s in states])} memories"
    )
    parts = [f"{_and(reading)} your {which}"] if reading else []
    if set(tools) & set(tool_catalogue.in_group(Group.SAVING)):
        parts.append("save new ones" if reading else "save new memories")
    if changing:
        parts.append(f"{_and(changing)} them" if reading else f"{_and(changing)} memories")
    if not parts:
        return "Nothing: this endpoint offers none of its tools."
    sentence = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + ", and " + parts[-1]
    return sentence[0].upper() + sentence[1:] + "."


def _verbs(group: Group, tools: tuple[str, ...]) -> list[str]:
    """How the consent page names the group's tools among ``tools`` (the catalogue's
    verbs, in its order)."""
    return [
        tool.verb
        for tool in tool_catalogue.CATALOGUE.values()
        if tool.group is group and tool.name in tools and tool.verb is not None
    ]


def _and(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def preset_scopes(preset: Preset, endpoint_tools: frozenset[str] | None) -> frozenset[str]:
    """The resource scopes the preset's tools use at an endpoint (None: every tool)."""
    tools = [t for t in preset.tools if endpoint_tools is None or t in endpoint_tools]
    return frozenset(scope for tool in tools if (scope := scope_names.needed_for(tool)) is not None)


def preselected(requested: tuple[str, ...], endpoint_tools: frozenset[str] | None) -> Preset:
    """The smallest preset that covers the requested scopes the endpoint can serve."""
    servable = set().union(*(preset_scopes(p, endpoint_tools) for p in PRESETS))
    wanted = set(requested) & servable
    return next((p for p in PRESETS if wanted <= preset_scopes(p, endpoint_tools)), PRESETS[0])


def granted_scopes(
    preset: Preset, requested: tuple[str, ...], endpoint_tools: frozenset[str] | None
) -> tuple[str, ...]:
    """What a grant gets: the requested scopes its preset uses there, and
    ``offline_access`` when asked."""
    used = preset_scopes(preset, endpoint_tools)
    return tuple(s for s in requested if s in used or s == scope_names.OFFLINE)


def grant_profile(
    grant_id: str,
    grant: dict[str, Any],
    endpoint: Profile,
    rate_limit_per_minute: int,
    directory: Directory,
) -> Profile:
    """The profile a request with this grant's token gets at ``endpoint``: what the grant
    records (``_granted``) with what it means now in ``directory`` (``with_directory``),
    never more than the endpoint itself holds, space by space, and refused while the
    grant or the endpoint is paused or the endpoint's person is inactive."""
    profile = with_directory(_granted(grant_id, grant, endpoint, rate_limit_per_minute), directory)
    levels = {
        key: min(level, endpoint.levels[key])
        for key, level in profile.levels.items()
        if key in endpoint.levels
    }
    return replace(
        profile,
        levels=MappingProxyType(levels),
        paused=grant.get("paused") is True or endpoint.paused,
        person_active=profile.person_active and endpoint.person_active,
    )


def grantable_levels(own: Mapping[str, Level], endpoint: Profile | None) -> dict[str, Level]:
    """Space key -> the highest level an approver whose own levels are ``own`` may give
    a connector at ``endpoint`` (None: not one of this server's): theirs, capped by what
    the endpoint holds (``grant_profile`` caps a grant by it at every request anyway)."""
    if endpoint is None:
        return dict(own)
    held = endpoint.levels
    return {key: min(level, held[key]) for key, level in own.items() if key in held}


def _granted(
    grant_id: str, grant: dict[str, Any], endpoint: Profile, rate_limit_per_minute: int
) -> Profile:
    """The profile a grant record describes at ``endpoint``, before the directory."""
    preset = BY_ID[str(grant["preset"])]
    states = frozenset(states_at(preset, endpoint))
    default = endpoint.default_state if endpoint.default_state in states else min(states)
    return Profile(
        id=f"oauth-{grant_id}",
        token_sha256=None,
        # A grant made since spaces exist (it records them) also lists the space tools.
        allowed_tools=(
            frozenset(preset.tools)
            | (
                frozenset(tool_catalogue.in_group(Group.SPACES))
                if isinstance(grant.get("spaces"), dict)
                else frozenset()
            )
        )
        & endpoint.allowed_tools,
        readable_states=states,
        default_state=default,
        may_write_lifecycle=preset.may_write_lifecycle and endpoint.may_write_lifecycle,
        allowed_origins=endpoint.allowed_origins,
        allow_url_token=False,
        rate_limit_per_minute=min(rate_limit_per_minute, endpoint.rate_limit_per_minute),
        chatgpt_data_tools=bool(grant.get("chatgpt_tools", False)),
        # Who approved it and the spaces chosen on the consent page; a grant made before
        # spaces existed is the owner's, on the default space at write.
        person=str(grant.get("person") or OWNER_ID),
        source="grant",
        grants=entry_grants(
            {"spaces": grant["spaces"], "defaultSpace": grant.get("default_space")}
            if isinstance(grant.get("spaces"), dict)
            else {},
            f"grant {grant_id}",
        ),
    )
