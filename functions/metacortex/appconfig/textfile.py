"""A configuration file's text as its author wrote it: byte-order mark and line endings.

The editors work on plain text with ``\\n`` line ends (``Text.plain``); ``Text.render``
puts the file's own conventions back on the edited text: the UTF-8 byte-order mark
when the file began with one, and on every line the ending it had (``\\r\\n`` or
``\\n``, matched line by line, so a file that mixes them keeps each as it was). A
line the edit added gets the ending most of the file's lines use.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Final

from metacortex.appconfig.errors import Malformed

BOM: Final = b"\xef\xbb\xbf"


@dataclass(frozen=True, slots=True)
class Text:
    written: str  # as in the file, without its byte-order mark
    bom: bool

    @property
    def plain(self) -> str:
        """The text with every ``\\r\\n`` as ``\\n``: what the editors edit."""
        return self.written.replace("\r\n", "\n")

    def render(self, edited: str) -> str:
        """``edited`` (plain text) with the file's line endings put back."""
        if edited == self.plain:
            return self.written
        old = self.written.split("\n")
        ends = [("\r\n" if line.endswith("\r") else "\n") for line in old[:-1]]
        old_plain = [
            line[:-1] if end == "\r\n" else line for line, end in zip(old, ends, strict=False)
        ]
        old_plain.append(old[-1])
        usual = "\r\n" if ends.count("\r\n") > ends.count("\n") else "\n"
        new = edited.split("\n")
        new_ends = [usual] * (len(new) - 1)
        matcher = difflib.SequenceMatcher(None, old_plain, new, autojunk=False)
        for block in matcher.get_matching_blocks():
            for offset in range(block.size):
                old_index, new_index = block.a + offset, block.b + offset
                if old_index < len(ends) and new_index < len(new_ends):
                    new_ends[new_index] = ends[old_index]
        return "".join(line + end for line, end in zip(new, new_ends, strict=False)) + new[-1]

    def encode(self, rendered: str) -> bytes:
        """``rendered`` (from ``render``) as the file's bytes."""
        return (BOM if self.bom else b"") + rendered.encode("utf-8")


def decode(raw: bytes, where: str) -> Text:
    """The text of a file's bytes (Malformed unless UTF-8)."""
    bom = raw.startswith(BOM)
    try:
        return Text(raw[len(BOM) :].decode("utf-8") if bom else raw.decode("utf-8"), bom)
    except UnicodeDecodeError:
        raise Malformed(f"{where} is not UTF-8 text") from None
