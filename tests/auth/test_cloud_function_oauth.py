"""OAuth on the production path: ``functions-framework`` serving ``functions/main.py`` with
the Firestore store on the real emulator (Gemini faked at the HTTP wire). The ``mcp``
SDK's OAuth client discovers, registers, is approved and calls tools under the
function's ``/metaCortexMcp`` prefix; every OAuth record lives in Firestore.

Both ways the prefix reaches a deployed function: through the cloudfunctions.net
front end (emulated by ``tests.google_front``: the name stripped, every other path
Google's 404, ``METACORTEX_PUBLIC_URL`` set as the docs say), and with the full path
(Hosting rewrites, run.app URLs)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import anyio.to_thread
import httpx2
import pytest
from google.cloud import firestore
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

from bench.cold_start import FunctionProcess, production_settings
from metacortex.guard.routes import FUNCTION_PREFIX
from metacortex.owner import set_passphrase
from metacortex.storage.firestore import FirestoreStore
from tests.auth.test_sdk_client_flow import MemoryTokens
from tests.firestore_support import Emulator
from tests.gemini_wire import FakeGemini, serve_over_http
from tests.google_front import CloudFunctionsFrontEnd
from tests.oauth_support import CALLBACK, approve_over_http, loopback_listener, serving

pytestmark = [pytest.mark.anyio, pytest.mark.firestore, pytest.mark.slow]


@dataclass
class Deployed:
    process: FunctionProcess
    store: FirestoreStore
    base: str  # the function's public URL, /metaCortexMcp included


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=["cloudfunctions.net", "full path"])
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
                if request.param == "full path":
                    front.close()
                    yield Deployed(process, store, process.url + FUNCTION_PREFIX)
                    return
                with serving(CloudFunctionsFrontEnd(process.url), front):
                    yield Deployed(process, store, public)
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
