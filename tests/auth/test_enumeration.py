"""With OAuth on, a stranger cannot tell which client ids exist (issue 19, item 15).

A prober's requests over real loopback HTTP at a configured id (``web``) and an
unconfigured one (``nobody``): resource metadata, the 401 challenge and authorize
answer alike, and a bearer token costs the same store reads at both (counted as
Firestore RPCs on the real emulator, not timed; the timing is in
``bench/enumeration.py``). Only the signed-in owner's consent page says that an
endpoint does not exist.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx2
import pytest

from metacortex.owner import set_passphrase
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.server.app import create_app
from metacortex.service import MemoryService
from metacortex.storage.firestore import FirestoreStore
from tests.fakes import HashingEmbedder
from tests.firestore_support import PROJECT, FirestoreStoreFactory
from tests.oauth_support import (
    Browserless,
    OAuthLive,
    access_token_over_http,
    mcp_post,
    oauth_server,
    pkce_pair,
    serving,
)
from tests.rpc_counting import CountingClient, RpcRecorder
from tests.server.conftest import make_settings

KNOWN = "web"  # configured in tests.server.conftest.client_profiles
UNKNOWN = "nobody"
READS = ("BatchGetDocuments", "RunQuery")


@pytest.fixture
def live(tmp_path: Path) -> Iterator[OAuthLive]:
    with oauth_server(tmp_path) as running:
        yield running


def _same_but_id(known: str, unknown: str) -> None:
    assert known.replace(f"/clients/{KNOWN}/", f"/clients/{UNKNOWN}/") == unknown


def test_resource_metadata_and_the_challenge_are_the_same_for_a_known_and_an_unknown_id(
    live: OAuthLive,
) -> None:
    answers = {}
    for client_id in (KNOWN, UNKNOWN):
        metadata = httpx2.get(
            f"{live.url}/.well-known/oauth-protected-resource/clients/{client_id}/mcp"
        )
        challenge = mcp_post(
            f"{live.url}/clients/{client_id}/mcp",
            secrets.token_urlsafe(32),
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        )
        answers[client_id] = (metadata, challenge)
    (known_metadata, known_401), (unknown_metadata, unknown_401) = answers.values()
    assert known_metadata.status_code == unknown_metadata.status_code == 200
    _same_but_id(known_metadata.text, unknown_metadata.text)
    assert known_401.status_code == unknown_401.status_code == 401
    assert known_401.text == unknown_401.text
    _same_but_id(known_401.headers["www-authenticate"], unknown_401.headers["www-authenticate"])
    # An id no profile could have is still no resource.
    malformed = httpx2.get(f"{live.url}/.well-known/oauth-protected-resource/clients/a%20b/mcp")
    assert malformed.status_code == 404


def test_authorize_answers_alike_and_only_the_owner_learns_an_endpoint_does_not_exist(
    live: OAuthLive,
) -> None:
    with contextlib.closing(Browserless(live)) as agent:
        _authorize_alike(live, agent)


def _authorize_alike(live: OAuthLive, agent: Browserless) -> None:
    client_id = agent.register()["client_id"]
    _, challenge = pkce_pair()
    answers = [
        agent.authorize(client_id, challenge, resource=f"{live.url}/clients/{name}/mcp")
        for name in (KNOWN, UNKNOWN)
    ]
    assert [a.status_code for a in answers] == [303, 303]
    assert all("/oauth/consent?request=" in a.headers["location"] for a in answers)

    assert agent.sign_in().status_code == 303
    known_page, unknown_page = (agent.http.get(a.headers["location"]) for a in answers)
    assert known_page.status_code == 200
    assert 'name="decision"' in known_page.text
    assert unknown_page.status_code == 400
    assert "which is not an MCP endpoint of this server; nothing was granted" in (unknown_page.text)
    assert 'name="decision"' not in unknown_page.text


@contextmanager
def _live_on_firestore(store: FirestoreStore, directory: Path) -> Iterator[str]:
    set_passphrase(store, "correct horse battery staple 42")
    service = MemoryService(store, HashingEmbedder(32), merger=SentenceUnionMerger())
    settings = make_settings(
        directory / "data", metacortex_oauth=True, metacortex_rejection_events_per_minute=0
    )
    with serving(create_app(settings, service)) as url:
        yield url


def test_a_bearer_token_costs_the_same_store_reads_at_a_known_and_an_unknown_id(
    firestore_store_factory: FirestoreStoreFactory, tmp_path: Path
) -> None:
    firestore_store_factory()  # a wiped emulator database, the client pointed at it
    recorder = RpcRecorder()
    store = FirestoreStore(CountingClient(recorder, project=PROJECT), "memory_vectors")
    try:
        with (
            _live_on_firestore(store, tmp_path) as url,
            httpx2.Client(timeout=30, follow_redirects=False) as http,
        ):
            valid_elsewhere = access_token_over_http(http, url, f"{url}/mcp")
            for token in (secrets.token_urlsafe(32), valid_elsewhere):
                reads = {}
                for client_id in (KNOWN, UNKNOWN):
                    recorder.reset()
                    answer = mcp_post(
                        f"{url}/clients/{client_id}/mcp",
                        token,
                        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                    )
                    assert answer.status_code == 401
                    reads[client_id] = sorted(
                        (rpc.kind, rpc.documents) for rpc in recorder.rpcs() if rpc.kind in READS
                    )
                assert reads[KNOWN], "the token was looked up"
                assert reads[KNOWN] == reads[UNKNOWN]
    finally:
        store.close()
