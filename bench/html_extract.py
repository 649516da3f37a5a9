"""Which way of finding a web page's main text keeps the article and drops the rest
(docs/DOCUMENTS.md, "HTML").

    .venv/bin/python bench/html_extract.py

Three page shapes, each with a numbered-sentence article (bench/documents_corpus.py)
inside navigation, sidebars, a cookie banner, related links and a footer whose
phrases are known: a semantic HTML5 news page, a ``div`` soup blog with comments,
and a documentation page with a long side menu and a ``role=main`` body. For each
candidate: article sentences recovered whole, headings recovered, boilerplate
phrases leaked, milliseconds per page. Candidates: readability-lxml, jusText
(English stoplist), trafilatura, and the product's extractor
(``metacortex.documents.html``).
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.documents_corpus import plain, sentences

BOILERPLATE = (
    "Subscribe to our newsletter",
    "We use cookies to improve",
    "Copyright 2026 Example Media",
    "Related stories you may like",
    "Sign in to comment",
    "Home About Contact",
    "Getting started guide",
    "Privacy policy and terms",
    "Most popular this week",
)
HEADINGS = ("The harbour survey", "Methods of counting", "What the pilots found")


def _article(paragraph_html: Callable[[list[str]], str]) -> tuple[str, list[str]]:
    made = [plain(s) for s in sentences(18, seed=11, label="Note")]
    body = f"<h1>{HEADINGS[0]}</h1>"
    body += paragraph_html(made[0:4]) + paragraph_html(made[4:8])
    body += f"<h2>{HEADINGS[1]}</h2>" + paragraph_html(made[8:12])
    body += "<ul>" + "".join(f"<li>{s}</li>" for s in made[12:15]) + "</ul>"
    body += f"<h2>{HEADINGS[2]}</h2>" + paragraph_html(made[15:18])
    return body, made


def _menu(count: int) -> str:
    items = ["Home", "About", "Contact", *[f"Topic {n}" for n in range(count)]]
    return "<ul>" + "".join(f'<li><a href="/{i}">{i}</a></li>' for i in items) + "</ul>"


def semantic_page() -> tuple[str, list[str]]:
    article, made = _article(lambda s: f"<p>{' '.join(s)}</p>")
    page = f"""<!doctype html><html><head><title>The harbour survey | Example</title></head>
<body><div class="cookie">We use cookies to improve your visit. <button>OK</button></div>
<header><a href="/">Example Media</a><nav>{_menu(12)}<p>Home About Contact</p></nav></header>
<main><article>{article}</article>
<aside><h3>Most popular this week</h3><ul><li><a href="/a">Related stories you may like</a></li>
<li><a href="/b">Another story about orchards and lanterns</a></li></ul></aside></main>
<footer><p>Subscribe to our newsletter for weekly updates on every topic.</p>
<p>Copyright 2026 Example Media. Privacy policy and terms.</p></footer></body></html>"""
    return page, made


def div_soup_page() -> tuple[str, list[str]]:
    article, made = _article(lambda s: f"<p>{' '.join(s)}</p>")
    comments = "".join(
        f'<div class="comment"><b>reader{n}</b> Great post, thanks for sharing it.</div>'
        for n in range(6)
    )
    page = f"""<html><head><title>Blog</title></head><body>
<div id="top"><div id="menu">{_menu(8)}<span>Home About Contact</span></div></div>
<div id="wrap"><div id="content"><div class="post">{article}</div>
<div class="comments"><h3>Comments</h3>{comments}<p>Sign in to comment.</p></div></div>
<div id="sidebar"><h3>Most popular this week</h3>{_menu(10)}
<p>Related stories you may like: lanterns, orchards, quarries and rivers.</p></div></div>
<div id="footer">Subscribe to our newsletter. We use cookies to improve the site.
Copyright 2026 Example Media. Privacy policy and terms.</div></body></html>"""
    return page, made


def docs_page() -> tuple[str, list[str]]:
    article, made = _article(lambda s: "<p>" + " ".join(s) + "</p><pre>run --all</pre>")
    side = "".join(
        f'<li><a href="/docs/{n}">Chapter {n}: configuration</a></li>' for n in range(40)
    )
    page = f"""<html><head><title>Docs</title></head><body>
<div class="navbar">Home About Contact <a href="/start">Getting started guide</a></div>
<nav class="sidebar"><ul>{side}</ul></nav>
<div role="main" class="document">{article}</div>
<div class="footer">Copyright 2026 Example Media. Privacy policy and terms.
Subscribe to our newsletter.</div></body></html>"""
    return page, made


def readability_text(html: str) -> str:
    from lxml import html as lxml_html
    from readability import Document

    return str(lxml_html.fromstring(Document(html).summary(html_partial=True)).text_content())


def justext_text(html: str) -> str:
    import justext

    paragraphs = justext.justext(html.encode(), justext.get_stoplist("English"))
    return "\n".join(p.text for p in paragraphs if not p.is_boilerplate)


def trafilatura_text(html: str) -> str:
    import trafilatura

    return trafilatura.extract(html, include_tables=True, favor_recall=True) or ""


def product_text(html: str) -> str:
    from metacortex.documents import DocumentLimits, extract

    return extract(html.encode(), "text/html", DocumentLimits()).text


CANDIDATES: dict[str, Callable[[str], str]] = {
    "readability-lxml": readability_text,
    "jusText": justext_text,
    "trafilatura": trafilatura_text,
    "product": product_text,
}


def main() -> int:
    pages = {"semantic": semantic_page(), "div soup": div_soup_page(), "docs": docs_page()}
    print("| extractor | page | sentences | headings | boilerplate leaked | ms/page |")
    print("|---|---|---|---|---|---|")
    for name, read in CANDIDATES.items():
        for page_name, (html, made) in pages.items():
            try:
                text = read(html)
            except Exception as error:  # noqa: BLE001 - a candidate failing is a result
                print(f"| {name} | {page_name} | failed: {type(error).__name__} | | | |")
                continue
            flat = " ".join(text.split())
            found = sum(1 for s in made if s in flat)
            headings = sum(1 for h in HEADINGS if h in flat)
            leaked = sum(1 for b in BOILERPLATE if b.casefold() in flat.casefold())
            times = []
            for _ in range(5):
                started = time.perf_counter()
                read(html)
                times.append(time.perf_counter() - started)
            print(
                f"| {name} | {page_name} | {found}/{len(made)} | {headings}/{len(HEADINGS)} "
                f"| {leaked}/{len(BOILERPLATE)} | {statistics.median(times) * 1000:.1f} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
