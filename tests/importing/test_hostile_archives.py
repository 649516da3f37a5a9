"""Hostile and broken exports are refused whole, before anything is written, with a
message that says why (and names the setting when a limit refused it): zip bombs (by
the size the archive declares, by the size it really unpacks to, by a directory that
lies), entries outside the archive, symbolic links, too many entries or conversations,
JSON nested past its reader, and files that are not exports. The archives are made with
Python's ``zipfile`` (the writer), some then altered byte by byte as an attacker would."""

from __future__ import annotations

import io
import json
import stat
import struct
import zipfile
from pathlib import Path

import pytest

from metacortex.importing.limits import ImportLimits, ImportRefused
from metacortex.importing.run import read_export
from tests.importing.exports import chatgpt_conversation, generated_chats, zipped

MIB = 1024 * 1024


def _valid_json() -> bytes:
    return json.dumps([chatgpt_conversation(c) for c in generated_chats(3, 4)]).encode()


def _refused(tmp_path: Path, data: bytes, limits: ImportLimits | None = None) -> str:
    path = tmp_path / "export.zip"
    path.write_bytes(data)
    with pytest.raises(ImportRefused) as refused:
        read_export(path, "chatgpt", limits or ImportLimits())
    return refused.value.message


def _with_entry(info: zipfile.ZipInfo, data: bytes = b"x") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("conversations.json", _valid_json())
        archive.writestr(info, data)
    return buffer.getvalue()


def test_a_bomb_declaring_more_unpacked_bytes_than_the_limit_is_refused(tmp_path: Path) -> None:
    bomb = zipped({"conversations.json": b"[" + b" " * (20 * MIB) + b"]"})
    assert len(bomb) < 100_000
    message = _refused(tmp_path, bomb, ImportLimits(max_bytes=10 * MIB))
    assert "METACORTEX_IMPORT_MAX_BYTES" in message
    assert "nothing was imported" in message


def test_a_conversations_json_past_its_limit_is_refused_as_it_is_read(tmp_path: Path) -> None:
    bomb = zipped({"conversations.json": b"[" + b" " * (5 * MIB) + b"]"})
    message = _refused(tmp_path, bomb, ImportLimits(max_json_bytes=MIB))
    assert "METACORTEX_IMPORT_MAX_JSON_BYTES" in message


def _declaring(data: bytes, size: int) -> bytes:
    """The archive with its only entry's unpacked size rewritten, in the local header and
    the central directory (a bomb that lies about its size)."""
    altered = bytearray(data)
    local = altered.index(b"PK\x03\x04")
    struct.pack_into("<I", altered, local + 22, size)
    central = altered.index(b"PK\x01\x02")
    struct.pack_into("<I", altered, central + 24, size)
    return bytes(altered)


def test_a_bomb_whose_directory_lies_about_its_size_is_refused(tmp_path: Path) -> None:
    bomb = _declaring(zipped({"conversations.json": b"[" + b" " * (20 * MIB) + b"]"}), 1000)
    message = _refused(tmp_path, bomb, ImportLimits(max_bytes=10 * MIB))
    assert "cannot be unpacked" in message


@pytest.mark.parametrize(
    "name", ["../../home/ann/.bashrc", "/etc/cron.d/job", "C:/Windows/evil.dll", "a/../../b"]
)
def test_an_entry_named_outside_the_archive_is_refused(tmp_path: Path, name: str) -> None:
    message = _refused(tmp_path, _with_entry(zipfile.ZipInfo(name)))
    assert "outside itself" in message
    assert "refused as hostile" in message


def test_a_symbolic_link_is_refused(tmp_path: Path) -> None:
    link = zipfile.ZipInfo("attachments/passwd")
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    assert "symbolic link" in _refused(tmp_path, _with_entry(link, b"/etc/passwd"))


def test_more_entries_than_the_limit_are_refused(tmp_path: Path) -> None:
    files = {f"file-{n}.png": b"." for n in range(5)} | {"conversations.json": _valid_json()}
    message = _refused(tmp_path, zipped(files), ImportLimits(max_entries=4))
    assert "6 entries" in message
    assert "METACORTEX_IMPORT_MAX_ENTRIES" in message


def test_more_conversations_than_the_limit_are_refused(tmp_path: Path) -> None:
    message = _refused(
        tmp_path, zipped({"conversations.json": _valid_json()}), ImportLimits(max_conversations=2)
    )
    assert "METACORTEX_IMPORT_MAX_CONVERSATIONS" in message


def test_json_nested_deeper_than_its_reader_follows_is_refused(tmp_path: Path) -> None:
    deep = b"[" * 200_000 + b"]" * 200_000
    assert "nests deeper" in _refused(tmp_path, zipped({"conversations.json": deep}))


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"chat.html": b"<html></html>"}, "holds no conversations.json"),
        (
            {"a/conversations.json": b"[]", "b/conversations.json": b"[]"},
            "several conversations.json",
        ),
        ({"conversations.json": b'[{"title": '}, "is not valid JSON"),
        ({"conversations.json": b"\xff\xfe\x00garbage"}, "is not valid JSON"),
        ({"conversations.json": b'{"mapping": {}}'}, "not a ChatGPT export"),
    ],
)
def test_an_archive_that_is_not_an_export_is_refused_saying_why(
    tmp_path: Path, files: dict[str, bytes], expected: str
) -> None:
    assert expected in _refused(tmp_path, zipped(files))


def test_two_entries_of_one_name_are_refused(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("conversations.json", _valid_json())
        with pytest.warns(UserWarning, match="Duplicate name"):
            archive.writestr("conversations.json", b"[]")
    assert "two entries named" in _refused(tmp_path, buffer.getvalue())


def test_an_encrypted_entry_is_refused(tmp_path: Path) -> None:
    data = bytearray(zipped({"conversations.json": _valid_json()}))
    for signature, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        at = data.index(signature)
        flags = struct.unpack_from("<H", data, at + offset)[0]
        struct.pack_into("<H", data, at + offset, flags | 0x1)
    assert "is encrypted" in _refused(tmp_path, bytes(data))


def test_a_file_that_is_not_a_zip_nor_json_and_a_missing_file_are_refused(
    tmp_path: Path,
) -> None:
    path = tmp_path / "export.pdf"
    path.write_bytes(b"%PDF-1.7")
    with pytest.raises(ImportRefused, match="not a zip archive"):
        read_export(path, "chatgpt", ImportLimits())
    with pytest.raises(ImportRefused, match="no such file"):
        read_export(tmp_path / "gone.zip", "chatgpt", ImportLimits())
    truncated = tmp_path / "truncated.zip"
    truncated.write_bytes(zipped({"conversations.json": _valid_json()})[:-30])
    with pytest.raises(ImportRefused):
        read_export(truncated, "chatgpt", ImportLimits())
