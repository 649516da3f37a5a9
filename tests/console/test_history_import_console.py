"""The documents page's import of conversation history over real loopback HTTP (the app
with OAuth off, its SQLite store): an uploaded ChatGPT or Claude export (made by
``tests/importing/exports.py`` in the documented formats) becomes one document per
conversation, told apart by its content, and the answer sums it up; the same export
again adds nothing; a hostile archive is refused and writes nothing; an upload past
``METACORTEX_IMPORT_MAX_JSON_BYTES`` is refused while its body is read."""

from __future__ import annotations

import html
import re
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Final

import httpx2
import pytest

from metacortex.domain.records import BranchState
from metacortex.service import Access
from metacortex.storage.base import MemoryFilter
from tests.console.support import ConsoleLive, Owner, console_server
from tests.importing.exports import Chat, chatgpt_export, claude_export, generated_chats

pytestmark = pytest.mark.slow
LIMIT: Final = 64 * 1024
ADMIN: Final = Access.admin()


@pytest.fixture
def live(tmp_path: Path) -> Iterator[ConsoleLive]:
    with console_server(tmp_path, oauth=False, metacortex_import_max_json_bytes=LIMIT) as running:
        yield running


def _import(owner: Owner, name: str, data: bytes, **fields: str) -> httpx2.Response:
    return owner.http.post(
        "/console/documents/import",
        data={"csrf": owner.csrf("/console/documents"), **fields},
        files={"file": (name, data, "application/zip")},
    )


def _summary(answer: httpx2.Response) -> list[str]:
    found = re.search(r'<ul id="import-summary">(.*?)</ul>', answer.text, re.S)
    assert found is not None, answer.text
    return [html.unescape(line) for line in re.findall(r"<li>(.*?)</li>", found.group(1))]


def _passages(live: ConsoleLive) -> int:
    everything = MemoryFilter(states=tuple(BranchState))
    return len(live.store.list_page(everything, 1000, None))


@pytest.mark.parametrize(("kind", "make"), [("ChatGPT", chatgpt_export), ("Claude", claude_export)])
def test_an_uploaded_export_is_told_by_its_content_and_imported_once(
    live: ConsoleLive, owner: Owner, kind: str, make: Callable[[list[Chat]], bytes]
) -> None:
    assert 'id="import"' in owner.http.get("/console/documents").text
    data = make(generated_chats(4, 5))
    answer = _import(owner, "export.zip", data, topic="history")
    assert answer.status_code == 200, answer.text
    assert f"{kind} history imported into default" in answer.text
    assert _summary(answer)[0] == (
        "imported: 4 conversations as new documents (20 messages, 20 passages added)"
    )
    listed = live.service.list_documents(ADMIN)["documents"]
    assert sorted(d["title"] for d in listed) == ["Chat 0", "Chat 1", "Chat 2", "Chat 3"]
    assert {d["added_by"]["client"] for d in listed} == {"console"}
    assert _passages(live) == 20

    again = _import(owner, "export.zip", data)
    assert _summary(again)[2] == "unchanged: 4 conversations already imported"
    assert _passages(live) == 20


def test_a_hostile_archive_is_refused_and_writes_nothing(
    live: ConsoleLive, owner: Owner, tmp_path: Path
) -> None:
    evil = tmp_path / "evil.zip"
    with zipfile.ZipFile(evil, "w") as archive:
        archive.writestr("conversations.json", "[]")
        archive.writestr("../../etc/cron.d/job", "* * * * * root sh")
    answer = _import(owner, "evil.zip", evil.read_bytes())
    assert answer.status_code == 400
    assert "names an entry outside itself" in html.unescape(answer.text)
    assert live.service.list_documents(ADMIN)["documents"] == []
    assert _passages(live) == 0


def test_an_upload_past_the_json_limit_is_refused_naming_the_setting(
    live: ConsoleLive, owner: Owner
) -> None:
    big = chatgpt_export(generated_chats(100, 20))
    assert len(big) > LIMIT
    answer = _import(owner, "export.zip", big)
    assert answer.status_code == 413
    assert "METACORTEX_IMPORT_MAX_JSON_BYTES" in answer.text
    assert _passages(live) == 0


def test_the_kind_chosen_is_checked_against_the_content(live: ConsoleLive, owner: Owner) -> None:
    answer = _import(owner, "export.zip", claude_export(generated_chats(2, 2)), kind="chatgpt")
    assert "it looks like a Claude export" in html.unescape(answer.text)
    assert _passages(live) == 0
