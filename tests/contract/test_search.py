"""search_context: hybrid retrieval with filters applied inside the store query."""

from __future__ import annotations

import numpy as np
import pytest

from metacortex.domain.records import BranchState
from metacortex.errors import Forbidden, InvalidArgument
from metacortex.retrieval.fusion import fuse, keyword_weights
from metacortex.retrieval.text import query_terms, term_frequencies
from metacortex.service import Access, MemoryService
from metacortex.storage.base import MemoryFilter, MemoryStore, Scored
from tests.fakes import HashingEmbedder


def test_an_empty_corpus_returns_no_matches_not_an_error(
    service: MemoryService, admin: Access
) -> None:
    result = service.search(admin, query="anything at all")
    assert result["matches"] == []
    assert result["applied_filters"]["states"] == ["active"]
    assert result["applied_filters"]["limit"] == 5


def test_a_query_naming_a_rare_exact_term_finds_it(service: MemoryService, admin: Access) -> None:
    for index in range(40):
        service.save(admin, content=f"Routine note number {index} about the weekly sync meeting")
    target = service.save(admin, content="The staging cluster id is zq-7781-kappa.")["item"]["id"]

    matches = service.search(admin, query="zq-7781-kappa")["matches"]

    assert matches[0]["id"] == target


def test_matches_carry_a_collapsed_summary_and_scores_between_0_and_1_best_first(
    service: MemoryService, admin: Access
) -> None:
    service.save(admin, content="Deploys\n\n happen   on Tuesdays " + "and more words " * 40)
    service.save(admin, content="Lunch is on Fridays")
    matches = service.search(admin, query="when do deploys happen", limit=2)["matches"]

    assert matches[0]["summary"].startswith("Deploys happen on Tuesdays and more words")
    assert len(matches[0]["summary"]) <= 220
    assert "\n" not in matches[0]["summary"]
    scores = [m["score"] for m in matches]
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)


def test_filters_apply_before_ranking_so_a_full_page_comes_back(
    service: MemoryService, admin: Access
) -> None:
    # Many close matches in another topic must not crowd out the filtered topic.
    for index in range(60):
        service.save(admin, content=f"kubernetes upgrade checklist step {index}", topic="noise")
    wanted = {
        service.save(admin, content=f"unrelated grocery list item {index}", topic="home")["item"][
            "id"
        ]
        for index in range(25)
    }

    matches = service.search(admin, query="kubernetes upgrade", filter_topic="home", limit=20)[
        "matches"
    ]

    assert len(matches) == 20
    assert {m["id"] for m in matches} <= wanted


def test_the_state_filter_defaults_to_the_profile_default_and_accepts_several(
    service: MemoryService, admin: Access
) -> None:
    active = service.save(admin, content="release train schedule")["item"]["id"]
    draft = service.save(admin, content="release train schedule draft", draft=True)["item"]["id"]

    default = {m["id"] for m in service.search(admin, query="release train")["matches"]}
    both = service.search(admin, query="release train", filter_state=["active", "wip"])
    only_wip = {
        m["id"] for m in service.search(admin, query="release", filter_state="wip")["matches"]
    }

    assert default == {active}
    assert {m["id"] for m in both["matches"]} == {active, draft}
    assert both["applied_filters"]["states"] == ["active", "wip"]
    assert only_wip == {draft}


def test_a_state_the_profile_may_not_read_is_forbidden(service: MemoryService) -> None:
    scoped = Access(frozenset({BranchState.ACTIVE}), BranchState.ACTIVE, may_write_lifecycle=False)
    with pytest.raises(Forbidden, match="'wip'"):
        service.search(scoped, query="x", filter_state="wip")


def test_origin_filter_keeps_only_that_origin(service: MemoryService, admin: Access) -> None:
    user = service.save(admin, content="coffee preference oat milk", origin="user_asserted")
    service.save(admin, content="coffee preference guessed latte", origin="agent_inferred")
    service.save(admin, content="coffee preference unknown")

    matches = service.search(admin, query="coffee preference", filter_origin="user_asserted")

    assert [m["id"] for m in matches["matches"]] == [user["item"]["id"]]


def test_valid_at_keeps_records_valid_then_and_drops_corrected_ones(
    service: MemoryService, admin: Access
) -> None:
    old = service.save(
        admin,
        content="office address 1 Old Street",
        valid_from="2020-01-01T00:00:00Z",
        valid_until="2024-01-01T00:00:00Z",
    )["item"]["id"]
    new = service.save(
        admin, content="office address 2 New Road", valid_from="2024-01-01T00:00:00Z"
    )["item"]["id"]
    wrong = service.save(admin, content="office address 3 Wrong Lane")["item"]["id"]
    service.deprecate(admin, id=wrong, superseding_id=new, supersession_reason="corrected")
    everything = ["active", "deprecated"]

    in_2022 = service.search(
        admin, query="office address", valid_at="2022-06-01T00:00:00Z", filter_state=everything
    )
    in_2025 = service.search(
        admin, query="office address", valid_at="2025-06-01T00:00:00Z", filter_state=everything
    )

    assert [m["id"] for m in in_2022["matches"]] == [old]
    assert [m["id"] for m in in_2025["matches"]] == [new]
    assert in_2025["applied_filters"]["valid_at"] == "2025-06-01T00:00:00.000Z"


def test_twenty_is_the_largest_limit(service: MemoryService, admin: Access) -> None:
    for index in range(25):
        service.save(admin, content=f"limit probe {index}")
    assert len(service.search(admin, query="limit probe", limit=20)["matches"]) == 20
    with pytest.raises(InvalidArgument, match="between 1 and 20"):
        service.search(admin, query="limit probe", limit=21)
    with pytest.raises(InvalidArgument, match="between 1 and 20"):
        service.search(admin, query="limit probe", limit=0)


def test_an_empty_query_is_refused(service: MemoryService, admin: Access) -> None:
    with pytest.raises(InvalidArgument, match="query must not be empty"):
        service.search(admin, query="   ")


def test_unicode_and_stop_word_only_queries_work(service: MemoryService, admin: Access) -> None:
    target = service.save(admin, content="Der Bäcker öffnet um 7 Uhr — 東京 branch")["item"]["id"]
    assert service.search(admin, query="bäcker")["matches"][0]["id"] == target
    assert service.search(admin, query="東京")["matches"][0]["id"] == target
    # Only stop words: no lexical terms, semantic search still answers.
    assert isinstance(service.search(admin, query="the and of")["matches"], list)


def test_several_states_are_reported_as_a_list_in_the_original_filter_state_key(
    service: MemoryService, admin: Access
) -> None:
    both = service.search(admin, query="x", filter_state=["active", "wip"])["applied_filters"]
    assert (both["filter_topic"], both["filter_state"]) == (None, ["active", "wip"])
    listed = service.list_memories(admin, filter_state=["wip"], filter_topic="t")
    assert (
        listed["applied_filters"]["filter_topic"],
        listed["applied_filters"]["filter_state"],
    ) == ("t", "wip")


def test_each_match_reports_the_raw_cosine_similarity_beside_the_fused_score(
    service: MemoryService, admin: Access, embedder: HashingEmbedder
) -> None:
    texts = ["The red fox jumps.", "A red car parks.", "Blue whales sing."]
    for text in texts:
        service.save(admin, content=text)

    matches = service.search(admin, query="red fox", limit=3)["matches"]

    query = np.asarray(embedder.embed_query("red fox"), dtype=np.float64)
    for match in matches:
        [vector] = embedder.embed_documents(
            [service.fetch(admin, id=match["id"])["item"]["content"]]
        )
        document = np.asarray(vector, dtype=np.float64)
        expected = float(query @ document / (np.linalg.norm(query) * np.linalg.norm(document)))
        assert match["similarity"] == pytest.approx(expected, abs=1e-5)


def test_keyword_hits_carry_the_indexed_term_stream_so_ranking_is_unchanged(
    service: MemoryService, admin: Access, store: MemoryStore, embedder: HashingEmbedder
) -> None:
    # Ranking needs each keyword candidate's term-stream length and query-term counts.
    # The store returns them from its index; they must equal analyzing the text, so the
    # fused scores are the same as when fusion analyzed every candidate itself.
    lengths = ["", " with a much longer tail about other things " * 3, " and the deploy again"]
    for index in range(30):
        service.save(
            admin,
            content=f"Deploys happen on Tuesday number {index}{lengths[index % 3]}",
            topic="ops" if index % 2 else "home",
        )
    query = "When do the deploys happen on Tuesdays?"
    terms = query_terms(query)
    where = MemoryFilter(states=(BranchState.ACTIVE,))
    dense, lexical = store.hybrid_search(embedder.embed_query(query), terms, where, 20)

    assert len(lexical) == 20
    for hit in lexical:
        assert hit.terms is not None
        analyzed = term_frequencies(hit.memory.retrieval_text)
        assert hit.terms.length == sum(analyzed.values())
        assert dict(hit.terms.freqs) == {t: analyzed[t] for t in terms if t in analyzed}
    analyzed_by_fusion = [Scored(hit.memory, hit.score) for hit in lexical]
    assert fuse(dense, lexical) == fuse(dense, analyzed_by_fusion)
    assert keyword_weights(terms, lexical) == keyword_weights(terms, analyzed_by_fusion)
