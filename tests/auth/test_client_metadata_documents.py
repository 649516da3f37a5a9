"""Client ID Metadata Document fetching: https only, public addresses only, limits,
validation, and the cache that serves a stale document when the host fails."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from metacortex.auth.cimd import MetadataDocumentError, MetadataDocuments, fetch_limited
from metacortex.owner.sessions import digest
from metacortex.storage.sqlite import SQLiteStore
from tests.oauth_support import MetadataFixture, serving


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    opened = SQLiteStore(tmp_path / "m.sqlite3")
    yield opened
    opened.close()


@pytest.fixture
def fixture() -> Iterator[MetadataFixture]:
    documents = MetadataFixture()
    with serving(documents.app()) as url:
        documents.url = url
        yield documents


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://client.example/meta.json", "https"),
        ("https://127.0.0.1/meta.json", "private or loopback"),
        ("https://localhost/meta.json", "private or loopback"),
        ("https://[::1]/meta.json", "private or loopback"),
        ("https://10.1.2.3/meta.json", "private or loopback"),
        ("https://169.254.169.254/latest/meta-data", "private or loopback"),
        ("https://client.example/", "path"),
        ("https://user:pw@client.example/meta.json", "credentials"),
    ],
)
async def test_unsafe_metadata_urls_are_refused_before_any_fetch(
    store: SQLiteStore, url: str, reason: str
) -> None:
    documents = MetadataDocuments(store)  # no test origin: production rules
    with pytest.raises(MetadataDocumentError, match=reason):
        await documents.get(url)


@pytest.mark.anyio
async def test_the_loopback_fixture_is_refused_without_the_test_override(
    store: SQLiteStore, fixture: MetadataFixture
) -> None:
    client_id = fixture.add("c", redirect_uris=["https://app.example/cb"])
    with pytest.raises(MetadataDocumentError, match="https"):
        await MetadataDocuments(store).get(client_id)
    assert fixture.fetches == 0


@pytest.mark.anyio
async def test_a_document_naming_another_client_id_is_refused(
    store: SQLiteStore, fixture: MetadataFixture
) -> None:
    client_id = fixture.add("c", redirect_uris=["https://app.example/cb"])
    fixture.documents["c"]["client_id"] = "https://someone.else/c.json"
    with pytest.raises(MetadataDocumentError, match="client_id"):
        await MetadataDocuments(store, test_origin=fixture.url).get(client_id)


@pytest.mark.anyio
async def test_an_oversized_document_is_refused(
    store: SQLiteStore, fixture: MetadataFixture
) -> None:
    client_id = fixture.add("c", redirect_uris=["https://app.example/cb"], padding="x" * 20_000)
    with pytest.raises(MetadataDocumentError, match="larger than"):
        await MetadataDocuments(store, test_origin=fixture.url).get(client_id)


@pytest.mark.anyio
async def test_documents_are_cached_and_served_stale_when_the_host_fails(
    store: SQLiteStore, fixture: MetadataFixture
) -> None:
    client_id = fixture.add("c", client_name="Cached", redirect_uris=["https://app.example/cb"])
    documents = MetadataDocuments(store, test_origin=fixture.url)

    assert (await documents.get(client_id))["client_name"] == "Cached"
    assert (await documents.get(client_id))["client_name"] == "Cached"
    assert fixture.fetches == 1  # fresh from the cache

    record = store.auth_get("cimd", digest(client_id))
    assert record is not None
    store.auth_put("cimd", digest(client_id), {**record, "fetched_at": 0.0}, None)  # now stale
    fixture.failing = True
    assert (await documents.get(client_id))["client_name"] == "Cached"
    assert fixture.fetches == 2  # it tried, failed (503 HTML), and served the stale copy

    store.auth_delete("cimd", digest(client_id))
    with pytest.raises(MetadataDocumentError, match="503"):
        await documents.get(client_id)


@pytest.mark.anyio
async def test_the_fetch_connects_to_the_checked_address_not_to_a_new_dns_answer(
    fixture: MetadataFixture,
) -> None:
    fixture.add("pinned", redirect_uris=["https://app.example/cb"])
    port = fixture.url.rsplit(":", 1)[1]
    # .invalid never resolves: only the pinned address can have answered.
    body = await fetch_limited(f"http://pinned.invalid:{port}/clients/pinned.json", "127.0.0.1")
    assert b"pinned.json" in body
    with pytest.raises(MetadataDocumentError, match="cannot fetch"):
        await fetch_limited(f"http://pinned.invalid:{port}/clients/pinned.json", None)
