"""The expansion rules of typo tolerance (retrieval/typos.py), on analyzed terms."""

from __future__ import annotations

from metacortex.retrieval.text import query_terms
from metacortex.retrieval.typos import MAX_EXPANSIONS, WEIGHT, eligible, expansions


def _term(word: str) -> str:
    [term] = query_terms(word)
    return term


def test_a_swapped_pair_of_letters_is_one_edit_from_the_word() -> None:
    vocabulary = {_term("receive"): 3, _term("parcels"): 2, _term("deceive"): 1}

    assert expansions([_term("recieve")], vocabulary, set()) == {_term("receive"): WEIGHT[1]}


def test_a_typo_in_an_ending_the_stemmer_would_remove_still_finds_the_stem() -> None:
    # "meeting" is stored as "meet"; "meetign" keeps its ending.
    assert _term("meetign") == "meetign"

    assert expansions(["meetign"], {"meet": 4, "meat": 1}, set()) == {"meet": WEIGHT[1]}


def test_long_terms_reach_two_edits_and_weigh_less_there() -> None:
    found = expansions(["managment"], {"management": 1, "managements": 1, "manag": 1}, set())

    assert found == {"management": WEIGHT[1], "managements": WEIGHT[2]}
    assert expansions(["mangment"], {"managements": 1}, set()) == {}


def test_numbers_identifiers_and_short_terms_are_never_expanded() -> None:
    vocabulary = {"2024": 1, "abc123": 1, "cat": 1, "cart": 1}

    assert not eligible("2025")
    assert not eligible("abc124")
    assert not eligible("cat")
    assert expansions(["2025", "abc124", "cst"], vocabulary, set()) == {}


def test_a_query_term_is_never_an_expansion_of_another() -> None:
    assert expansions(["recieve"], {"receive": 1}, {"recieve", "receive"}) == {}


def test_at_most_a_few_expansions_the_nearest_and_most_common_first() -> None:
    vocabulary = {"bat": 9, "bate": 1, "bats": 5, "bite": 7, "bote": 2, "byte": 3, "bake": 4}

    found = expansions(["bjte"], vocabulary, set())

    # One edit each: bite, byte, bote, bate (bake and bats are two); three kept.
    assert MAX_EXPANSIONS == 3
    assert list(found) == ["bite", "byte", "bote"]
