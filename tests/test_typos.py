"""The expansion rules of typo tolerance (retrieval/typos.py), on analyzed terms."""

from __future__ import annotations

import random

from rapidfuzz.distance import OSA

from metacortex.retrieval.text import query_terms
from metacortex.retrieval.typos import (
    LONG_TERM_CHARS,
    MAX_EXPANSIONS,
    MIN_TERM_CHARS,
    SUFFIX_CHARS,
    WEIGHT,
    Lexicon,
    eligible,
    expansions,
    near,
)


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


def test_the_letter_filter_skips_no_word_in_reach() -> None:
    # Every word near() finds through the filter, a scan of all words finds too, and
    # nothing more: random words and one- and two-edit misspellings of them.
    rng = random.Random(5)
    vocabulary = [
        "".join(rng.choice("abcdeéfgh") for _ in range(rng.randint(4, 11))) for _ in range(3000)
    ]
    lexicon = Lexicon(vocabulary)
    queries = [_misspelt(rng, rng.choice(vocabulary), rng.randint(1, 2)) for _ in range(300)]

    found = [near(term, lexicon) for term in queries]

    assert found == [_scanned(term, vocabulary) for term in queries]
    assert sum(map(len, found)) >= len(queries)  # the misspelled words are found


def _scanned(term: str, vocabulary: list[str]) -> dict[str, int]:
    """``near``'s rules applied to every word, one by one."""
    reach = 2 if len(term) >= LONG_TERM_CHARS else 1
    found: dict[str, int] = {}
    for word in vocabulary:
        if len(word) < MIN_TERM_CHARS:
            continue
        if (distance := OSA.distance(term, word)) <= reach:
            found[word] = distance
        if len(term) - SUFFIX_CHARS <= len(word) < len(term):
            kept = OSA.distance(term[: len(word)], word) + 1
            if kept <= reach:
                found[word] = min(found.get(word, reach), kept)
    return found


def _misspelt(rng: random.Random, word: str, edits: int) -> str:
    for _ in range(edits):
        at = rng.randrange(len(word))
        kind = rng.randrange(4)
        if kind == 0:
            word = word[:at] + word[at + 1 :]
        elif kind == 1:
            word = word[:at] + rng.choice("abcdeéfgh") + word[at:]
        elif kind == 2:
            word = word[:at] + rng.choice("abcdeéfgh") + word[at + 1 :]
        elif at + 1 < len(word):
            word = word[:at] + word[at + 1] + word[at] + word[at + 2 :]
    return word
