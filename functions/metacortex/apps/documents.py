"""Each view's one self-contained HTML document, assembled from ``static/``.

A view's file (``static/<view>.html``) holds its markup and its own script; the
parts every view shares (the stylesheet, the bridge to the host, the rendering
helpers) are written once and inlined where the view's file says
``<!-- metacortex:head -->`` (``head.html``: doctype, viewport and the document's
own Content-Security-Policy), ``<!-- metacortex:style -->`` and
``<!-- metacortex:script -->``. The document
a host receives therefore loads nothing: no file, no CDN, no font.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Final

STATIC: Final = Path(__file__).parent / "static"
HEAD_MARK: Final = "<!-- metacortex:head -->"
STYLE_MARK: Final = "<!-- metacortex:style -->"
SCRIPT_MARK: Final = "<!-- metacortex:script -->"
SHARED_STYLE: Final = ("base.css",)
SHARED_SCRIPT: Final = ("bridge.js", "render.js")


@cache
def document(view: str) -> str:
    """The view's HTML with the shared style and scripts inlined."""
    page = (STATIC / f"{view}.html").read_text(encoding="utf-8")
    if any(page.count(mark) != 1 for mark in (HEAD_MARK, STYLE_MARK, SCRIPT_MARK)):
        raise ValueError(f"static/{view}.html must hold each include mark exactly once")
    style = "\n".join((STATIC / name).read_text(encoding="utf-8") for name in SHARED_STYLE)
    script = "\n".join((STATIC / name).read_text(encoding="utf-8") for name in SHARED_SCRIPT)
    head = (STATIC / "head.html").read_text(encoding="utf-8")
    return (
        page.replace(HEAD_MARK, head.rstrip("\n"))
        .replace(STYLE_MARK, f"<style>\n{style}</style>")
        .replace(SCRIPT_MARK, f"<script>\n{script}</script>")
    )
