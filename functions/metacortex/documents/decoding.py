"""Bytes of a text format as a string: the declared charset, a byte-order mark, UTF-8,
then Windows-1252 (what old exports from Excel and Notepad are)."""

from __future__ import annotations

import codecs

from metacortex.errors import DocumentRefused

_BOMS = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def decode_text(data: bytes, charset: str | None) -> str:
    candidates: list[str] = []
    if charset:
        try:
            candidates.append(codecs.lookup(charset).name)
        except LookupError:
            raise DocumentRefused(
                "not_text", f"the declared charset {charset!r} is not one Python knows"
            ) from None
    else:
        candidates += [name for bom, name in _BOMS if data.startswith(bom)][:1]
        candidates += ["utf-8", "cp1252"]
    for name in candidates:
        try:
            text = data.decode(name)
        except UnicodeDecodeError:
            continue
        if "\x00" in text:
            break  # a binary file, whatever it decodes as
        return text.replace("\r\n", "\n").replace("\r", "\n")
    raise DocumentRefused(
        "not_text",
        "the content is not text in "
        + (charset or "UTF-8 or Windows-1252")
        + ": send it with its real media type (or the right charset)",
    )
