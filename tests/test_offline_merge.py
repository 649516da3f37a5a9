"""The offline merge (no generation model): drafts become one memory that reads as one.

The drafts are the kind agents write (the migration fixtures' "Draft: ..." records,
the original MetaCortex's wip queue): marked as drafts, overlapping, partly repeated.
"""

from __future__ import annotations

import itertools

from metacortex.providers.offline_merge import SentenceUnionMerger

MERGER = SentenceUnionMerger()


def merge(*contents: str) -> str:
    return MERGER.merge("topic", list(contents))


def test_draft_markers_are_dropped_and_the_texts_read_as_one_paragraph() -> None:
    merged = merge(
        "Draft: retries use exponential backoff.",
        "Draft: the backoff is capped at 8 seconds.",
        "[draft] Jitter is added to every retry",
    )

    assert merged == (
        "Retries use exponential backoff. The backoff is capped at 8 seconds. "
        "Jitter is added to every retry."
    )


def test_markers_in_any_case_and_form_are_dropped_but_words_inside_a_sentence_stay() -> None:
    merged = merge("DRAFT - call the landlord.", "WIP: the draft lease is on the desk.", "(wip) ok")

    assert merged == "Call the landlord. The draft lease is on the desk. Ok."


def test_a_repeated_sentence_is_kept_once_whatever_its_case_spacing_or_end() -> None:
    merged = merge(
        "We fly to Lisbon on May 3.",
        "Draft: we fly to Lisbon on May 3",
        "we  fly to lisbon on may 3! The hotel is near Rossio station.",
    )

    assert merged == "We fly to Lisbon on May 3. The hotel is near Rossio station."


def test_a_sentence_another_one_states_in_full_gives_way_to_it_in_its_place() -> None:
    merged = merge(
        "Standup moved to 9:30. It is in room B.",
        "Bring the laptop.",
        "Standup moved to 9:30 on Mondays.",
    )

    assert merged == "Standup moved to 9:30 on Mondays. It is in room B. Bring the laptop."


def test_a_negated_statement_never_absorbs_the_plain_one() -> None:
    merged = merge("The office is open on Friday.", "The office is not open on Friday.")

    assert merged == "The office is open on Friday. The office is not open on Friday."


def test_list_items_become_sentences_and_identifiers_keep_their_case() -> None:
    merged = merge("Checklist:\n- rotate the key\n- iOS build uses Xcode 16", "npm ci is required")

    assert merged == "Checklist: Rotate the key. iOS build uses Xcode 16. npm ci is required."


def test_the_merge_is_deterministic_and_keeps_every_fact_of_every_order() -> None:
    sources = ["Draft: A is 1.", "B is 2. A is 1.", "Draft: c is 3"]

    results = {merge(*order) for order in itertools.permutations(sources)}

    for result in results:
        assert sorted(part.rstrip(".") for part in result.split(". ")) == [
            "A is 1",
            "B is 2",
            "C is 3",
        ]
    assert merge(*sources) == merge(*sources) == "A is 1. B is 2. C is 3."


def test_the_merge_method_says_what_the_merge_does() -> None:
    assert MERGER.method == "offline_sentence_merge"
