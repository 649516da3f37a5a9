"""OAuth on the production path: ``functions-framework`` serving ``functions/main.py`` with
the Firestore store on the real emulator (Gemini faked at the HTTP wire). The ``mcp``
SDK's OAuth client discovers, registers, is approved and calls tools under the
function's ``/metaCortexMcp`` prefix; every OAuth record lives in Firestore.

Every way a deployed function is reached: through the cloudfunctions.net front end
(emulated by ``tests.google_front``: the name stripped, every other path Google's 404,
``METACORTEX_PUBLIC_URL`` set as the docs say), with the full path (a Hosting rewrite of
``/metaCortexMcp/**``), and at the root of its run.app URL (every path as sent; the issuer
is then the request's own origin, as ``METACORTEX_PUBLIC_URL`` set to that URL makes it).

An application that starts OAuth itself, before any MCP request (the TypeScript SDK's
``auth()`` with no 401 to follow), needs the function at a root: it finds nothing at the
cloudfunctions.net URL and connects at the run.app one (docs/CONNECTORS.md)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio.to_thread
import httpx2
import pytest
from google.cloud import firestore
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

from bench.cold_start import FunctionProcess, production_settings
from metacortex.kernel.routes import FUNCTION_PREFIX
from metacortex.owner import set_passphrase
from metacortex.storage.firestore import FirestoreStore
from tests import ts_oauth
from tests.auth.test_sdk_client_flow import MemoryTokens
from tests.firestore_support import Emulator
from tests.gemini_wire import FakeGemini, serve_over_http
from tests.google_front import CloudFunctionsFrontEnd
from tests.oauth_support import (
    CALLBACK,
    approve_over_http,
    loopback_listener,
    query_of,
    serving,
    tools_list,
)

pytestmark = [pytest.mark.anyio, pytest.mark.firestore, pytest.mark.slow]


@dataclass
class Deployed:
    form: str
    process: FunctionProcess
    store: FirestoreStore
    base: str  # the function's public URL (/metaCortexMcp included but at the run.app root)
    front: CloudFunctionsFrontEnd | None = None


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=["cloudfunctions.net", "full path", "run.app root"])
def deployed(
    firestore_emulator: Emulator, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Iterator[Deployed]:
    gemini = FakeGemini()
    front = loopback_listener()
    public = f"http://127.0.0.1:{front.getsockname()[1]}{FUNCTION_PREFIX}"
    with serve_over_http(gemini) as gemini_url:
        env = production_settings(firestore_emulator.host, gemini_url) | {
            "METACORTEX_OAUTH": "true"
        }
        if request.param == "cloudfunctions.net":
            env["METACORTEX_PUBLIC_URL"] = public
        project = env["GOOGLE_CLOUD_PROJECT"]
        firestore_emulator.wipe(project)
        monkeypatch.setenv("FIRESTORE_EMULATOR_HOST", firestore_emulator.host)
        store = FirestoreStore(firestore.Client(project=project), "memory_vectors")
        set_passphrase(store, "the cloud owner passphrase")
        try:
            with FunctionProcess(env) as process:
                process.wait_listening()
                if request.param != "cloudfunctions.net":
                    front.close()
                    prefix = FUNCTION_PREFIX if request.param == "full path" else ""
                    yield Deployed(request.param, process, store, process.url + prefix)
                    return
                google = CloudFunctionsFrontEnd(process.url)
                with serving(google, front):
                    yield Deployed(request.param, process, store, public, google)
        finally:
            store.close()


async def test_the_sdk_oauth_client_connects_to_the_function_on_firestore(
    deployed: Deployed,
) -> None:
    server_url = deployed.base + "/mcp"
    owner = httpx2.Client(timeout=60, follow_redirects=False)
    answers: list[AuthorizationCodeResult] = []

    def approve(url: str) -> AuthorizationCodeResult:
        params = approve_over_http(owner, url, passphrase="the cloud owner passphrase")
        return AuthorizationCodeResult(
            code=params["code"], state=params["state"], iss=params["iss"]
        )

    async def redirect_handler(url: str) -> None:
        answers.append(await anyio.to_thread.run_sync(approve, url))

    async def callback_handler() -> AuthorizationCodeResult:
        return answers.pop()

    storage = MemoryTokens()
    provider = OAuthClientProvider(
        server_url=server_url,
        client_metadata=OAuthClientMetadata(
            client_name="Cloud SDK client",
            redirect_uris=[CALLBACK],  # type: ignore[list-item]
            token_endpoint_auth_method="none",
            scope="memory:read memory:write offline_access",
        ),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    try:
        async with (
            httpx2.AsyncClient(auth=provider, timeout=60) as http,
            Client(streamable_http_client(server_url, http_client=http), mode="legacy") as client,
        ):
            saved = await client.call_tool("save_context", {"content": "OAuth on Firestore."})
            assert not saved.is_error
            found = await client.call_tool("search_context", {"query": "Firestore"})
            assert found.structured_content is not None
            assert found.structured_content["matches"]
    finally:
        owner.close()
    assert storage.tokens is not None
    issuer = deployed.base
    assert storage.client is not None
    [(_, grant)] = deployed.store.auth_list("grant")
    assert grant["resource"] == issuer + "/mcp"
    assert grant["client_name"] == "Cloud SDK client"
    assert deployed.store.auth_list("access_token")


@pytest.mark.parametrize("sdk", ts_oauth.SDKS)
@pytest.mark.parametrize("deployed", ["cloudfunctions.net", "run.app root"], indirect=True)
def test_an_app_starting_oauth_itself_connects_where_the_function_has_a_root(
    deployed: Deployed, sdk: str, tmp_path: Path
) -> None:
    """The TypeScript SDK's ``auth()`` called up front, as an app with its own "Connect"
    button does: discovery from the server URL alone (RFC 9728's path-inserted
    ``/.well-known/oauth-protected-resource/...``, then the origin's metadata, then
    ``/register`` at the origin). At cloudfunctions.net every one of those is a root
    path, Google's 404; where the function has a root it connects."""
    server_url = deployed.base + "/mcp"
    state = str(tmp_path / "state.json")
    mark = len(deployed.front.refused) if deployed.front is not None else 0
    first = ts_oauth.run(
        sdk, "auth", serverUrl=server_url, redirectUrl=CALLBACK, stateFile=state, challenge=False
    )
    if deployed.front is not None:
        assert not first["ok"], first
        assert "404" in first["error"], first
        assert deployed.store.auth_list("client") == []
        probes = deployed.front.refused[mark:]
        assert "GET /.well-known/oauth-protected-resource/metaCortexMcp/mcp" in probes
        assert "POST /register" in probes
        return
    assert first["ok"], first
    assert first["result"] == "REDIRECT"
    assert first["issuer"] == deployed.base
    assert query_of(first["authorizationUrl"])["resource"] == server_url
    second = ts_oauth.approve_and_finish(
        sdk,
        first["authorizationUrl"],
        server_url,
        state,
        passphrase="the cloud owner passphrase",
        challenge=False,
    )
    assert tools_list(server_url, second["tokens"]["access_token"]).status_code == 200
