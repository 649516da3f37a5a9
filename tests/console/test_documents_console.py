"""The console's documents pages over real loopback HTTP (the app with OAuth off, its SQLite
store, the product's document reader process): a multipart upload becomes a document
whose page shows its text, its passages and a search inside it; an upload over
``METACORTEX_DOCUMENT_MAX_BYTES`` is refused while its body is read, declared or not, and
leaves nothing; a reader sees no upload and no erase, and cannot post either; erasing asks
first, needs the form's CSRF token, and leaves no passage behind."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import httpx2
import pytest

from metacortex.documents.isolation import shut_down
from metacortex.service import Access
from metacortex.usecases.documents import RETRY_AFTER_SECONDS
from tests.console.documents_support import documents_console
from tests.console.support import ConsoleLive, Owner
from tests.oauth_support import hidden
from tests.owner.people_support import BEN_PASSPHRASE, Household, PersonBrowser

pytestmark = pytest.mark.slow

GARDEN: Final = b"""# Garden plan

## Tomatoes

Plant the tomatoes in May, once the last frost is over. Stake them early.

## Beans

The runner beans climb the north fence; pick them every other day in August.

## Compost

Turn the compost heap every fortnight and keep it as damp as a wrung sponge.
"""


@pytest.fixture(scope="module", autouse=True)
def _reader_hosts() -> Iterator[None]:
    yield
    shut_down()


@pytest.fixture
def live(tmp_path: Path) -> Iterator[ConsoleLive]:
    with documents_console(tmp_path) as running:
        yield running


def _upload(owner: Owner, name: str, data: bytes, **fields: str) -> httpx2.Response:
    return owner.http.post(
        "/console/documents/upload",
        data={"csrf": owner.csrf("/console/documents"), **fields},
        files={"file": (name, data, "application/octet-stream")},
    )


def _documents(live: ConsoleLive) -> list[dict[str, object]]:
    listed = live.service.list_documents(Access.admin())["documents"]
    return list(listed)


def test_an_uploaded_file_becomes_a_document_whose_page_shows_text_passages_and_search(
    live: ConsoleLive, owner: Owner
) -> None:
    answer = _upload(owner, "garden.md", GARDEN, topic="home")
    assert answer.status_code == 303, answer.text
    [document] = _documents(live)
    assert answer.headers["location"].endswith(
        f"/console/documents/{document['id']}?space=default&added=created"
    )
    assert (document["title"], document["source"], document["topic"]) == (
        "Garden plan",
        "garden.md",
        "home",
    )
    assert document["added_by"] == {"person_id": "owner", "name": "Owner", "client": "console"}

    listing = owner.http.get("/console/documents").text
    assert "Garden plan" in listing
    assert "garden.md" in listing
    assert "3 passages" in listing
    assert 'id="upload"' in listing

    page = owner.http.get(answer.headers["location"])
    assert page.status_code == 200
    assert "Document added" in page.text
    assert "Plant the tomatoes in May" in page.text  # the text
    passages = re.search(r'<ol class="memories" id="passages".*?</ol>', page.text, re.S)
    assert passages is not None
    assert passages.group(0).count('class="memory"') == 3
    assert "Garden plan › Beans" in passages.group(0)  # each with its locator

    found = owner.http.get(
        f"/console/documents/{document['id']}", params={"q": "runner beans", "space": "default"}
    ).text
    results = re.search(r'id="found-passages".*?</ol>', found, re.S)
    assert results is not None
    assert "north fence" in results.group(0)
    assert "tomatoes" not in results.group(0).lower()  # its passages holding the words only


def test_an_upload_over_the_limit_is_refused_and_leaves_nothing(
    live: ConsoleLive, owner: Owner
) -> None:
    big = b"# Big\n\n" + b"All work and no play makes a dull document. " * 4_000  # 180 KB
    declared = _upload(owner, "big.md", big)
    assert declared.status_code == 413
    assert "larger than this server's limit of 64 KB" in html.unescape(declared.text)
    assert "METACORTEX_DOCUMENT_MAX_BYTES" in declared.text

    # No Content-Length (chunked): counted as it arrives.
    boundary = "x-boundary-7"
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="csrf"\r\n\r\n'
        f"{owner.csrf('/console/documents')}\r\n--{boundary}\r\n"
        'Content-Disposition: form-data; name="file"; filename="big.md"\r\n'
        "Content-Type: text/markdown\r\n\r\n"
    ).encode()

    def body() -> Iterator[bytes]:
        yield head
        for _ in range(0, len(big), 8_192):
            yield big[:8_192]
        yield f"\r\n--{boundary}--\r\n".encode()

    chunked = owner.http.post(
        "/console/documents/upload",
        content=body(),
        headers={"content-type": f"multipart/form-data; boundary={boundary}"},
    )
    assert chunked.status_code == 413
    assert "nothing was stored" in chunked.text
    assert _documents(live) == []
    # A file under the limit still goes in.
    assert _upload(owner, "garden.md", GARDEN).status_code == 303


def test_an_upload_while_the_server_reads_as_many_documents_as_it_may_is_503_retry_after(
    live: ConsoleLive, owner: Owner
) -> None:
    """Issue 37: as many documents as the server reads at once are being read (two
    callers' uploads, their slots held here); the next upload is answered at once."""
    slots = live.service.document_slots
    with slots.taken("ann-laptop"), slots.taken("ben-phone"):
        answer = _upload(owner, "garden.md", GARDEN)

    assert answer.status_code == 503
    assert answer.headers["retry-after"] == str(RETRY_AFTER_SECONDS)
    assert f"busy, retry after {RETRY_AFTER_SECONDS} s" in html.unescape(answer.text)
    assert _documents(live) == []
    assert _upload(owner, "garden.md", GARDEN).status_code == 303  # room again


def test_a_reader_sees_no_upload_and_no_erase_and_cannot_post_them(
    live: ConsoleLive, owner: Owner
) -> None:
    household = Household.signed_up(live.store)
    owner_access = Access.admin(directory=household.registry.directory())
    added = live.service.create_document(
        owner_access, content=GARDEN.decode(), media_type="text/markdown", space="family"
    )["document"]
    ben = PersonBrowser(live.url)
    try:
        ben.sign_in("ben@example.com", BEN_PASSPHRASE)
        listing = ben.http.get("/console/documents", params={"space": "family"})
        assert listing.status_code == 200
        assert "Garden plan" in listing.text
        assert 'id="upload"' not in listing.text
        page = ben.http.get(f"/console/documents/{added['id']}", params={"space": "family"})
        assert page.status_code == 200
        assert "Erase this document" not in page.text
        erase = ben.http.get(f"/console/documents/{added['id']}/erase", params={"space": "family"})
        assert erase.status_code == 403
        csrf = hidden(listing.text, "csrf")
        posted = ben.http.post(
            "/console/documents/upload?space=family",
            data={"csrf": csrf},
            files={"file": ("mine.md", b"# Mine\n\nMine.\n", "text/markdown")},
        )
        assert posted.status_code == 403
        assert "may only read" in posted.text
        erased = ben.http.post(
            f"/console/documents/{added['id']}/erase?space=family", data={"csrf": csrf}
        )
        assert erased.status_code == 403
        assert len(live.service.list_documents(owner_access, space="family")["documents"]) == 1
    finally:
        ben.close()


def test_erasing_a_document_asks_first_needs_the_csrf_token_and_leaves_no_passage(
    live: ConsoleLive, owner: Owner
) -> None:
    _upload(owner, "garden.md", GARDEN)
    [document] = _documents(live)
    passages = [p.id for p in live.store.document_passages(str(document["id"]))]
    confirm = owner.http.get(f"/console/documents/{document['id']}/erase")
    assert confirm.status_code == 200
    assert "This cannot be undone" in confirm.text
    assert _documents(live) != []  # asking changes nothing

    forged = owner.http.post(f"/console/documents/{document['id']}/erase", data={"csrf": "x"})
    assert forged.status_code == 403
    assert _documents(live) != []

    done = owner.http.post(
        f"/console/documents/{document['id']}/erase",
        data={"csrf": hidden(confirm.text, "csrf")},
    )
    assert done.status_code == 200
    assert "1 version and 3 passages erased" in done.text
    assert _documents(live) == []
    assert live.store.get_many(passages) == [None] * 3
    assert live.store.relations_of([*passages, str(document["id"])], include_invalid=True) == []
