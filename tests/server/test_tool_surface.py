"""The model-facing surface is a contract: frozen per profile in a snapshot file.

A change to a tool's name, description, schema or hints changes what every
connected model sees; it must be deliberate. To accept a deliberate change,
regenerate the snapshot and review its diff:

    METACORTEX_UPDATE_SNAPSHOTS=1 .venv/bin/pytest tests/server/test_tool_surface.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from metacortex.access import stored_clients
from metacortex.access.model import FRESH
from metacortex.access.profiles import (
    Profile,
    load_profiles,
    new_token,
    token_digest,
    with_directory,
)
from metacortex.cli.surface import surface
from metacortex.config import Settings
from metacortex.service import MemoryService
from metacortex.tool_catalogue import CATALOGUE, Group, default_tools, model_tools
from tests.server.conftest import READER_TOKEN, WEB_TOKEN, Harness, make_settings, started
from tests.server.surface_snapshot import SNAPSHOT, frozen_surface, tool_names
from tests.spaces.team import store_client
from tests.tool_results import error_code

PROFILE_TOKENS = {"default": None, "web": WEB_TOKEN, "reader": READER_TOKEN}


def profiles(tmp_path: Path) -> dict[str, Profile]:
    """The environment's profiles; a client as ``metacortex client add`` stores one (the
    default tools: the only kind, with OAuth grants, offered set_default_space); and a
    stored client allowed every tool but granted its only space at read (``viewer``)."""
    settings = make_settings(tmp_path)
    loaded = load_profiles(settings)
    entry = {
        "id": "laptop",
        "token_sha256": token_digest(new_token()).hex(),
        "allowedTools": list(default_tools()),
    }
    laptop = stored_clients.decode(
        "laptop", stored_clients.record(entry, created_by="test")
    ).profile(settings)
    viewer = stored_clients.decode(
        "viewer", stored_clients.record(viewer_entry(), created_by="test")
    )
    clients = (laptop, with_directory(viewer.profile(settings), FRESH))
    return {profile.id: profile for profile in (*loaded.all(), *clients)}


def viewer_entry(token: str | None = None) -> dict[str, Any]:
    """A stored client allowed every tool, that may only read the default space."""
    return {
        "id": "viewer",
        "token_sha256": token_digest(token or new_token()).hex(),
        "allowedTools": list(model_tools()),
        "spaces": {"default": "read"},
    }


def current(tmp_path: Path) -> dict[str, Any]:
    return {profile_id: surface(profile) for profile_id, profile in profiles(tmp_path).items()}


def test_the_tool_surface_matches_the_snapshot(tmp_path: Path) -> None:
    now = current(tmp_path)
    if os.environ.get("METACORTEX_UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.write_text(json.dumps(now, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    frozen = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    assert now == frozen, (
        "the model-facing tool surface changed; if deliberate, regenerate with "
        "METACORTEX_UPDATE_SNAPSHOTS=1 and review the diff of " + str(SNAPSHOT)
    )
    # The admin token lists every tool of the catalogue but the credential's own (it
    # keeps no record), the owner's (not turned on) and ChatGPT's shapes (not asked for);
    # a stored client with the default tools lists set_default_space.
    apart = (Group.CREDENTIAL, Group.OWNER, Group.CHATGPT)
    assert [tool["name"] for tool in frozen["default"]["tools"]] == [
        tool.name for tool in CATALOGUE.values() if tool.group not in apart
    ]
    assert [tool["name"] for tool in frozen["laptop"]["tools"]] == [
        tool.name for tool in CATALOGUE.values() if tool.default
    ]
    assert "set_default_space" in default_tools()


@pytest.mark.anyio
@pytest.mark.parametrize("profile_id", sorted(PROFILE_TOKENS))
async def test_the_wire_serves_exactly_the_snapshotted_surface(
    harness: Harness, profile_id: str
) -> None:
    frozen = json.loads(SNAPSHOT.read_text(encoding="utf-8"))[profile_id]
    path = "/mcp" if profile_id == "default" else f"/clients/{profile_id}/mcp"
    token = PROFILE_TOKENS[profile_id]
    async with harness.connect(path, token) if token else harness.connect(path) as client:
        tools = [
            tool.model_dump(mode="json", by_alias=True, exclude_none=True)
            for tool in (await client.list_tools()).tools
        ]
        prompts = [
            prompt.model_dump(mode="json", by_alias=True, exclude_none=True)
            for prompt in (await client.list_prompts()).prompts
        ]
        resources = [
            resource.model_dump(mode="json", by_alias=True, exclude_none=True)
            for resource in (await client.list_resources()).resources
        ]
        templates = [
            template.model_dump(mode="json", by_alias=True, exclude_none=True)
            for template in (await client.list_resource_templates()).resource_templates
        ]
    assert tools == frozen["tools"]
    assert prompts == frozen["prompts"]
    assert resources == frozen["resources"]
    assert templates == frozen["resourceTemplates"]


@pytest.mark.anyio
async def test_a_credential_that_may_write_nowhere_is_not_offered_the_tools_that_write(
    settings: Settings, service: MemoryService
) -> None:
    """Allowed every tool but granted its one space at read, a stored client's model sees
    the reading tools only (and no correct_memory prompt, which saves and deprecates):
    every call of the others would be refused (``Access.space``)."""
    token = new_token()
    store_client(service.store, viewer_entry(token))
    async with (
        started(settings, service) as harness,
        harness.connect("/clients/viewer/mcp", token) as viewer,
    ):
        names = [tool.name for tool in (await viewer.list_tools()).tools]
        prompts = [prompt.name for prompt in (await viewer.list_prompts()).prompts]
        refused = await viewer.call_tool("save_context", {"content": "Not allowed here."})

    assert names == tool_names("viewer")
    assert "save_context" not in names
    assert [tool.name for tool in CATALOGUE.values() if tool.name in names] == names
    assert prompts == [prompt["name"] for prompt in frozen_surface("viewer")["prompts"]]
    assert "correct_memory" not in prompts
    # Still refused, as before, if the model calls it anyway.
    assert refused.is_error
    assert error_code(refused) == "forbidden"
