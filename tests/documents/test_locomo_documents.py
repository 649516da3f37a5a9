"""bench/locomo_documents.py: conversations in LoCoMo's format rendered as Markdown and
as a two-column PDF, and passages mapped back to the dialogue turns they hold."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.locomo_documents import Conversation, load, render, turn_spans, turns_in_passage
from metacortex.documents import BlockKind, DocumentLimits, extract
from metacortex.documents.passages import cut_passages

WORDS = "harbour lantern orchard pilot quarry river signal tower valley window".split()


@pytest.fixture(scope="module")
def conversation(tmp_path_factory: pytest.TempPathFactory) -> Conversation:
    """Three sessions of LoCoMo-shaped turns, one with a shared photo."""
    raw: dict[str, object] = {"speaker_a": "Maria", "speaker_b": "John", "qa": []}
    for session in range(1, 4):
        raw[f"session_{session}_date_time"] = f"1:0{session} pm on {session} May, 2023"
        turns = []
        for n in range(1, 31):
            turn = {
                "speaker": "Maria" if n % 2 else "John",
                "dia_id": f"D{session}:{n}",
                "text": f"Turn {session}.{n}: the {WORDS[n % 10]} near the "
                f"{WORDS[(n * 3) % 10]} was {'quiet' if n % 3 else 'busy'} today - "
                "we talked about it for a while, didn’t we?",
            }
            if n == 7:
                turn["blip_caption"] = "a photo of a boat"
            turns.append(turn)
        raw[f"session_{session}"] = turns
    path = tmp_path_factory.mktemp("locomo") / "99.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    return load(path)


@pytest.mark.parametrize("kind", ["markdown", "pdf"])
def test_every_turn_is_found_in_the_extracted_text_in_order(
    conversation: Conversation, kind: str
) -> None:
    data, media_type = render(conversation, kind)
    document = extract(data, media_type, DocumentLimits())
    spans = turn_spans(document, conversation.turns)
    assert [s.dia_id for s in spans] == [t.dia_id for t in conversation.turns]
    headings = [b.text for b in document.blocks if b.kind is BlockKind.HEADING]
    assert headings[0] == conversation.title
    assert headings[1:] == [
        f"Session {n}: {s.date}" for n, s in enumerate(conversation.sessions, start=1)
    ]
    for span, turn in zip(spans, conversation.turns, strict=True):
        assert turn.text.split(":")[0] in document.text[span.start : span.end]


@pytest.mark.parametrize("kind", ["markdown", "pdf"])
def test_a_passage_names_the_turns_it_holds(conversation: Conversation, kind: str) -> None:
    data, media_type = render(conversation, kind)
    document = extract(data, media_type, DocumentLimits())
    spans = turn_spans(document, conversation.turns)
    passages = cut_passages(document, 600)
    named = [turns_in_passage(p, spans) for p in passages]
    for span in spans:
        holder = next(i for i, p in enumerate(passages) if p.start <= span.start < p.end)
        assert span.dia_id in named[holder]
    for passage, dia_ids in zip(passages, named, strict=True):
        for dia_id in dia_ids:
            number = dia_id.removeprefix("D").replace(":", ".")
            spans_of = [s for s in spans if s.dia_id == dia_id]
            assert f"Turn {number}:" in passage.text or spans_of[0].start < passage.start


def test_the_photo_caption_is_part_of_its_turn(conversation: Conversation) -> None:
    turn = next(t for t in conversation.turns if t.dia_id == "D2:7")
    assert turn.text.endswith("[shared a photo: a photo of a boat]")
    assert "didn't we?" in turn.text  # typographic quotes made plain for the PDF font


def test_the_shared_dataset_renders_when_it_is_there() -> None:
    dataset = Path(__file__).resolve().parents[3] / "shared" / "datasets" / "locomo" / "dev"
    if not dataset.is_dir():
        pytest.skip(f"LoCoMo development split not at {dataset}")
    conversation = load(sorted(dataset.glob("*.json"))[0])
    document = extract(*render(conversation, "markdown"), DocumentLimits())
    assert len(turn_spans(document, conversation.turns)) == len(conversation.turns)
