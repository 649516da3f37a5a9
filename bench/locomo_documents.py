"""LoCoMo conversations as documents, for choosing the passage size (issue 31, section 4).

    .venv/bin/python bench/locomo_documents.py --out /tmp/locomo-docs   # writes .md and .pdf
    .venv/bin/python bench/locomo_documents.py --target 600 --target 1000  # passage stats
    .venv/bin/python bench/locomo_documents.py --dataset ../../shared/datasets/locomo/dev

One document per conversation (``../shared/datasets/locomo/README.md`` for the format):
a title, one heading per session with its date, one paragraph per dialogue turn
(``Speaker: text``, plus ``[shared a photo: caption]``). As Markdown, and as a
two-column PDF set by fpdf2 with running title and page numbers (what a person
would get printing the chat log as a paper).

For the hit@5 evaluation: ``turn_spans`` finds every turn in the *extracted* text
(the spans passages carry index that text, not the source), and
``turns_in_passage`` names the dialogue turns a passage overlaps; a question is
answered at k when a top-k passage holds one of its evidence turns.
"""

from __future__ import annotations

import argparse
import bisect
import json
import statistics
import sys
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from fpdf import FPDF

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from metacortex.documents import DocumentLimits, ExtractedDocument, extract
from metacortex.documents.passages import Passage, cut_passages

# As bench/locomo.py finds it: shared/ beside the checkout (pass --dataset from a worktree).
DATASET: Final = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "locomo" / "dev"
_LATIN: Final = str.maketrans(
    {"’": "'", "‘": "'", "“": '"', "”": '"', "—": "-", "–": "-", "…": "..."}
)


@dataclass(frozen=True, slots=True)
class Turn:
    dia_id: str
    speaker: str
    text: str  # the turn as the document prints it, after the speaker


@dataclass(frozen=True, slots=True)
class Session:
    date: str
    turns: tuple[Turn, ...]


@dataclass(frozen=True, slots=True)
class Conversation:
    name: str
    speakers: tuple[str, str]
    sessions: tuple[Session, ...]

    @property
    def title(self) -> str:
        return f"Conversation between {self.speakers[0]} and {self.speakers[1]}"

    @property
    def turns(self) -> list[Turn]:
        return [turn for session in self.sessions for turn in session.turns]


def latin(text: str) -> str:
    """Text the PDF's core font can print (fpdf2's Helvetica is Latin-1): typographic
    quotes and dashes made plain, anything else outside Latin-1 dropped."""
    text = unicodedata.normalize("NFKC", text.translate(_LATIN))
    return text.encode("latin-1", "ignore").decode("latin-1")


def load(path: Path) -> Conversation:
    raw: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    sessions = []
    number = 1
    while f"session_{number}" in raw:
        turns = []
        for turn in raw[f"session_{number}"]:
            text = turn["text"]
            if turn.get("blip_caption"):
                text += f" [shared a photo: {turn['blip_caption']}]"
            turns.append(Turn(turn["dia_id"], latin(turn["speaker"]), latin(text)))
        sessions.append(Session(latin(raw.get(f"session_{number}_date_time", "")), tuple(turns)))
        number += 1
    return Conversation(path.stem, (raw["speaker_a"], raw["speaker_b"]), tuple(sessions))


def questions(path: Path) -> list[tuple[str, list[str]]]:
    """The questions of categories 1-4 with evidence, as bench/locomo.py asks them."""
    raw: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return [
        (qa["question"], list(qa["evidence"]))
        for qa in raw["qa"]
        if qa.get("category") in {1, 2, 3, 4} and qa.get("evidence")
    ]


def _markdown_escape(text: str) -> str:
    # A turn that starts like a list item or a heading must stay a paragraph.
    return (
        "\\" + text
        if text[:1] in {"#", "-", "*", "+", ">"} or text[:2].rstrip(".").isdigit()
        else text
    )


def as_markdown(conversation: Conversation) -> str:
    parts = [f"# {conversation.title}\n"]
    for number, session in enumerate(conversation.sessions, start=1):
        parts.append(f"## Session {number}: {session.date}\n")
        for turn in session.turns:
            parts.append(f"**{turn.speaker}:** {_markdown_escape(turn.text)}\n")
    return "\n".join(parts)


class _Log(FPDF):
    def __init__(self, title: str) -> None:
        super().__init__(format="A4")
        self.running_title = title

    def header(self) -> None:
        if self.page_no() > 1:
            self.set_font("Helvetica", "I", 8)
            self.cell(0, 6, self.running_title, align="C")
            self.ln(10)

    def footer(self) -> None:
        self.set_y(-15)
        self.set_font("Helvetica", "", 8)
        self.cell(0, 10, str(self.page_no()), align="C")


def as_pdf(conversation: Conversation) -> bytes:
    """Two columns (fpdf2 text_columns), session dates as bold headings."""
    pdf = _Log(latin(conversation.title))
    pdf.set_auto_page_break(auto=True, margin=20)
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 16)
    pdf.multi_cell(0, 9, latin(conversation.title), align="C", new_x="LMARGIN", new_y="NEXT")
    pdf.ln(4)
    with pdf.text_columns(ncols=2, gutter=8, text_align="J") as columns:
        for number, session in enumerate(conversation.sessions, start=1):
            pdf.set_font("Helvetica", "B", 12)
            columns.write(f"Session {number}: {session.date}\n")
            pdf.set_font("Helvetica", "", 10)
            for turn in session.turns:
                columns.write(f"{turn.speaker}: {turn.text}\n\n")
    return bytes(pdf.output())


@dataclass(frozen=True, slots=True)
class TurnSpan:
    dia_id: str
    start: int  # in the extracted text; a turn runs to the next turn's start
    end: int


def _normalized(text: str) -> tuple[str, list[int]]:
    """``text`` casefolded with runs of whitespace as one space and hyphens dropped, and
    for each of its characters the offset it came from (extraction joins lines and
    hyphenated words, so the source and the extracted text differ there)."""
    out: list[str] = []
    where: list[int] = []
    space = True
    for offset, char in enumerate(text):
        if char.isspace():
            if not space:
                out.append(" ")
                where.append(offset)
            space = True
        elif char not in "-\u00ad":
            out.append(char.casefold())
            where.append(offset)
            space = False
    return "".join(out), where


def turn_spans(
    document: ExtractedDocument, turns: Sequence[Turn], probe: int = 40
) -> list[TurnSpan]:
    """Each turn's span in ``document.text``, found in order by its speaker and first
    ``probe`` characters. A turn that cannot be found is left out (and counted by
    the caller: a question whose evidence is missing cannot be answered)."""
    flat, where = _normalized(document.text)
    starts: list[tuple[str, int]] = []
    position = 0
    for turn in turns:
        key, _ = _normalized(f"{turn.speaker}: {turn.text}")
        found = flat.find(key[:probe], position)
        if found < 0:
            continue
        starts.append((turn.dia_id, where[found]))
        position = found + 1
    spans = []
    for index, (dia_id, start) in enumerate(starts):
        end = starts[index + 1][1] if index + 1 < len(starts) else len(document.text)
        spans.append(TurnSpan(dia_id, start, end))
    return spans


def turns_in_passage(passage: Passage, spans: Sequence[TurnSpan]) -> list[str]:
    """The dialogue turns whose text overlaps the passage's span."""
    starts = [span.start for span in spans]
    first = max(0, bisect.bisect_right(starts, passage.start) - 1)
    found = []
    for span in spans[first:]:
        if span.start >= passage.end:
            break
        if span.end > passage.start:
            found.append(span.dia_id)
    return found


def render(conversation: Conversation, kind: str) -> tuple[bytes, str]:
    if kind == "markdown":
        return as_markdown(conversation).encode(), "text/markdown"
    return as_pdf(conversation), "application/pdf"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--dataset", type=Path, default=DATASET)
    parser.add_argument("--out", type=Path, help="write the rendered documents here")
    parser.add_argument("--target", type=int, action="append", help="passage size(s)")
    args = parser.parse_args(argv)
    targets = args.target or [1000]
    limits = DocumentLimits()
    print("| conversation | format | pages | turns found | target | passages | chars p50"
          " | turns/passage p50 |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for path in sorted(args.dataset.glob("*.json")):
        conversation = load(path)
        for kind in ("markdown", "pdf"):
            data, media_type = render(conversation, kind)
            if args.out:
                args.out.mkdir(parents=True, exist_ok=True)
                suffix = ".md" if kind == "markdown" else ".pdf"
                (args.out / f"locomo-{path.stem}{suffix}").write_bytes(data)
            document = extract(data, media_type, limits)
            spans = turn_spans(document, conversation.turns)
            for target in targets:
                passages = cut_passages(document, target)
                per = [len(turns_in_passage(p, spans)) for p in passages]
                print(
                    f"| {path.stem} | {kind} | {document.page_count or '-'} "
                    f"| {len(spans)}/{len(conversation.turns)} | {target} | {len(passages)} "
                    f"| {statistics.median(len(p.text) for p in passages):.0f} "
                    f"| {statistics.median(per):.0f} |",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
