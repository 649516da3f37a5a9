"""``metacortex tools``: the exact model-facing surface of a profile, without a server.

It prints what ``tools/list``, ``resources/list``, ``resources/templates/list``
and ``prompts/list`` return on that profile's endpoint (names, descriptions,
input and output schemas, annotations), from the same definitions the server
uses, after validating the profile configuration.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from metacortex.access.profiles import ADMIN_PROFILE_ID, Profile, load_profiles
from metacortex.clients.lookup import profiles_with_stored
from metacortex.config import Settings
from metacortex.errors import ConfigurationError
from metacortex.mcp_surface.prompts import prompts_for
from metacortex.mcp_surface.resources import resources_for, templates_for
from metacortex.mcp_surface.tools import tool_definitions


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "tools",
        help="show the tools, resources and prompts a profile's endpoint offers",
        description="Show exactly what a model sees on a profile's endpoint: tool names, "
        "descriptions, input/output schemas and annotations, resources and prompts.",
    )
    parser.add_argument(
        "--profile",
        default=ADMIN_PROFILE_ID,
        help="profile id: 'default' (the admin endpoint /mcp, the default) or a client id "
        "(from MCP_CLIENT_PROFILES_JSON or the store: metacortex client list)",
    )
    parser.add_argument("--json", action="store_true", help="print the raw JSON surface")
    parser.set_defaults(run=run)


def surface(profile: Profile, *, extraction: bool = False) -> dict[str, Any]:
    """The profile's tools/list, resources/list, resources/templates/list and
    prompts/list results, in wire (camelCase) form (``extraction``: the server splits
    saved texts into facts, METACORTEX_EXTRACTION)."""
    return {
        "profile": profile.id,
        "endpoint": f"POST {profile.path}",
        "tools": [
            tool.model_dump(mode="json", by_alias=True, exclude_none=True)
            for tool in tool_definitions(profile, extraction=extraction)
        ],
        "resources": [
            resource.model_dump(mode="json", by_alias=True, exclude_none=True)
            for resource in resources_for(profile)
        ],
        "resourceTemplates": [
            template.model_dump(mode="json", by_alias=True, exclude_none=True)
            for template in templates_for(profile)
        ],
        "prompts": [
            prompt.model_dump(mode="json", by_alias=True, exclude_none=True)
            for prompt in prompts_for(profile)
        ],
    }


def run(args: argparse.Namespace) -> int:
    settings = Settings()
    profiles = load_profiles(settings)
    profile = profiles.get(None if args.profile == ADMIN_PROFILE_ID else args.profile)
    if profile is None:
        profiles = profiles_with_stored(settings, profiles)
        profile = profiles.get(args.profile)
    if profile is None:
        known = ", ".join([ADMIN_PROFILE_ID, *sorted(profiles.clients)])
        raise ConfigurationError(f"no profile {args.profile!r}; known profiles: {known}")
    data = surface(profile, extraction=settings.extracts_facts)
    if args.json:
        print(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        print(_human(data))
    return 0


def _human(data: dict[str, Any]) -> str:
    lines = [f"Profile {data['profile']!r} ({data['endpoint']})", ""]
    for tool in data["tools"]:
        hints = tool.get("annotations", {})
        flags = ["read-only" if hints.get("readOnlyHint") else "writes"]
        flags += [name for name in ("idempotent", "destructive") if hints.get(f"{name}Hint")]
        lines.append(f"{tool['name']}  [{', '.join(flags)}]")
        lines += [f"  {line}" for line in tool["description"].splitlines()]
        schema = tool["inputSchema"]
        required = set(schema.get("required", []))
        for name, spec in schema.get("properties", {}).items():
            kind = spec.get("type", "value")
            if "enum" in spec:
                kind = " | ".join(str(value) for value in spec["enum"])
            marker = " (required)" if name in required else ""
            lines.append(f"    {name}: {kind}{marker}")
        returns = ", ".join(tool["outputSchema"].get("properties", {}))
        lines += [f"  returns: {{{returns}}}", ""]
    for resource in data["resources"]:
        lines += [f"resource {resource['uri']}", f"  {resource['description']}", ""]
    for template in data["resourceTemplates"]:
        lines += [f"resource {template['uriTemplate']}", f"  {template['description']}", ""]
    for prompt in data["prompts"]:
        arguments = ", ".join(
            argument["name"] + ("" if argument.get("required") else "?")
            for argument in prompt.get("arguments", [])
        )
        lines += [f"prompt {prompt['name']}({arguments})", f"  {prompt['description']}", ""]
    return "\n".join(lines).rstrip()
