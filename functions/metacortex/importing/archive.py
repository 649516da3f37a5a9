"""Opening an export: the ``conversations.json`` of a ChatGPT or Claude data export (a zip
archive, or that file itself), read within ``ImportLimits``.

Only ``conversations.json`` is read, into memory; nothing is unpacked to disk. Before it
is read, the archive's directory is checked whole and the archive refused (``ImportRefused``,
nothing written) when it holds more entries or declares more unpacked bytes than the
limits, names an entry outside the archive (an absolute path, ``..``, a drive letter),
holds a symbolic link, an encrypted entry or two entries of the same name, or holds no
``conversations.json`` or several. The file is then read in chunks and refused past
``METACORTEX_IMPORT_MAX_JSON_BYTES`` whatever size the directory declared (a zip bomb
lies there), and parsed as JSON; nesting deeper than the parser reads is refused too.
"""

from __future__ import annotations

import json
import stat
import zipfile
from pathlib import Path, PurePosixPath
from typing import IO, Any, Final

from metacortex.importing.limits import ImportLimits, ImportRefused

CONVERSATIONS: Final = "conversations.json"
CHUNK: Final = 1024 * 1024


def read_conversations(path: Path, limits: ImportLimits) -> Any:
    """The parsed ``conversations.json`` of the export at ``path``."""
    try:
        with path.open("rb") as file:
            return read_conversations_from(file, path.name, limits)
    except FileNotFoundError:
        raise ImportRefused(f"no such file: {path}") from None
    except IsADirectoryError:
        raise ImportRefused(f"{path} is a folder: give the export's zip file") from None
    except PermissionError:
        raise ImportRefused(f"cannot read {path}: permission denied") from None


def read_conversations_from(file: IO[bytes], name: str, limits: ImportLimits) -> Any:
    """The parsed ``conversations.json`` of an export given as a seekable binary file
    (an upload) named ``name``: a zip archive, or that JSON file itself."""
    if zipfile.is_zipfile(file):
        file.seek(0)
        return _parse(_from_zip(file, limits), CONVERSATIONS)
    file.seek(0)
    if not name.endswith(".json"):
        raise ImportRefused(
            f"{name} is not a zip archive (an export as downloaded) nor a "
            f"{CONVERSATIONS}: nothing was imported"
        )
    return _parse(_bounded(file, limits, name), name)


def _from_zip(file: IO[bytes], limits: ImportLimits) -> bytes:
    try:
        archive = zipfile.ZipFile(file)
    except (zipfile.BadZipFile, OSError, ValueError) as error:
        raise ImportRefused(f"the archive cannot be read ({error}): nothing was imported") from None
    with archive:
        entries = archive.infolist()
        limits.check_entries(len(entries))
        limits.check_bytes(sum(entry.file_size for entry in entries))
        seen: set[str] = set()
        found: list[zipfile.ZipInfo] = []
        for entry in entries:
            _check_entry(entry)
            if entry.filename in seen:
                raise ImportRefused(
                    f"the archive holds two entries named {entry.filename!r}: refused as "
                    "hostile, nothing was imported"
                )
            seen.add(entry.filename)
            if PurePosixPath(entry.filename).name == CONVERSATIONS and not entry.is_dir():
                found.append(entry)
        chosen = _the_conversations(found)
        try:
            with archive.open(chosen) as member:
                return _bounded(member, limits, chosen.filename)
        except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError) as error:
            raise ImportRefused(
                f"{chosen.filename} cannot be unpacked ({error}): nothing was imported"
            ) from None


def _check_entry(entry: zipfile.ZipInfo) -> None:
    name = entry.filename
    path = PurePosixPath(name.replace("\\", "/"))
    if (
        path.is_absolute()
        or ".." in path.parts
        or (len(name) > 1 and name[1] == ":")
        or "\x00" in name
    ):
        raise ImportRefused(
            f"the archive names an entry outside itself ({name[:80]!r}): refused as hostile, "
            "nothing was imported"
        )
    if stat.S_ISLNK(entry.external_attr >> 16):
        raise ImportRefused(
            f"the archive holds a symbolic link ({name[:80]!r}): refused as hostile, "
            "nothing was imported"
        )
    if entry.flag_bits & 0x1:
        raise ImportRefused(
            f"the archive's entry {name[:80]!r} is encrypted: export it again without a "
            "password; nothing was imported"
        )


def _the_conversations(found: list[zipfile.ZipInfo]) -> zipfile.ZipInfo:
    if not found:
        raise ImportRefused(
            f"the archive holds no {CONVERSATIONS}: is it a ChatGPT or Claude data export? "
            "Nothing was imported"
        )
    shallowest = min(len(PurePosixPath(entry.filename).parts) for entry in found)
    top = [entry for entry in found if len(PurePosixPath(entry.filename).parts) == shallowest]
    if len(top) > 1:
        names = ", ".join(entry.filename for entry in top[:3])
        raise ImportRefused(
            f"the archive holds several {CONVERSATIONS} ({names}): import each export on "
            "its own; nothing was imported"
        )
    return top[0]


def _bounded(stream: IO[bytes], limits: ImportLimits, name: str) -> bytes:
    """The stream's bytes, refused past the limit (read at most a chunk past it)."""
    chunks: list[bytes] = []
    size = 0
    while chunk := stream.read(CHUNK):
        size += len(chunk)
        if size > limits.max_json_bytes:
            raise limits.json_refusal(name)
        chunks.append(chunk)
    return b"".join(chunks)


def _parse(data: bytes, name: str) -> Any:
    try:
        return json.loads(data)
    except RecursionError:
        raise ImportRefused(
            f"{name} nests deeper than its reader follows: refused as hostile, nothing was imported"
        ) from None
    except (UnicodeDecodeError, ValueError) as error:
        raise ImportRefused(
            f"{name} is not valid JSON ({str(error)[:120]}): nothing was imported"
        ) from None
