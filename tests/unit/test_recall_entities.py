"""The knowledge-graph entity signal of recall, one pure piece at a time (memlane.recall.entities)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from memlane import MemoryConfig
from memlane.config.profile import Boosts, RankingProfile
from memlane.errors import ConfigError, ValidationError
from memlane.models import AppliedBoost
from memlane.recall.candidates import MergedCandidates, with_extra
from memlane.recall.entities import (
    QueryEntity,
    entity_weights,
    graph_signal,
    links_by_candidate,
    query_entity_keys,
)
from memlane.recall.ranking import CandidateSignals, RankOptions, rank
from memlane.recall.relevance import boost_factor
from memlane.stores.base import LinkedEpisodes

ALICE = QueryEntity("alice", frozenset({"alice", "ally"}), frozenset({"bob"}))
PARIS = QueryEntity("paris", frozenset({"paris"}))


def test_query_entities_come_from_the_write_time_extractor() -> None:
    # the same rules as on write: capitalised names (a possessive dropped), ids, quoted names
    assert query_entity_keys("What did Caroline's brother tell Bob about INV-2024-001?") == [
        "inv-2024-001",
        "caroline",
        "bob",
    ]
    assert query_entity_keys("what did she say?") == []


def test_the_signal_counts_members_fully_and_neighbours_by_their_share() -> None:
    links = [{"alice", "paris"}, {"ally"}, {"bob"}, {"paris"}, set()]
    weights = np.array([1.0, 1.0])
    g = graph_signal(links, [ALICE, PARIS], neighbour_share=0.5, weights=weights)
    # (w_alice * s_alice + w_paris * s_paris) / 2
    np.testing.assert_allclose(g, [1.0, 0.5, 0.25, 0.5, 0.0])


def test_specificity_weights_an_entity_by_the_share_of_candidates_it_misses() -> None:
    links = [{"alice"}, {"bob"}, {"alice"}, {"paris"}]
    # 1 - df / (n + 1): alice or her neighbour bob on 3 of 4 candidates, paris on 1 of 4
    np.testing.assert_allclose(entity_weights(links, [ALICE, PARIS]), [0.4, 0.8])
    g = graph_signal(links, [ALICE, PARIS], neighbour_share=0.5)
    np.testing.assert_allclose(g, [0.2, 0.1, 0.2, 0.4])


def test_an_entity_every_candidate_mentions_lifts_little() -> None:
    links = [{"alice"}, {"alice", "paris"}, {"ally"}]
    np.testing.assert_allclose(graph_signal(links, [ALICE], neighbour_share=0.5), [0.25, 0.25, 0.25])


def test_an_entity_no_candidate_is_linked_to_does_not_count() -> None:
    # it may exist only because another session mentioned it: it must not dilute the others
    links = [{"alice"}, set(), set()]
    alone = graph_signal(links, [ALICE], neighbour_share=0.5)
    np.testing.assert_allclose(graph_signal(links, [ALICE, PARIS], neighbour_share=0.5), alone)
    assert graph_signal([set(), set()], [PARIS], neighbour_share=0.5).tolist() == [0.0, 0.0]


def test_no_entity_or_no_candidate_gives_zeros() -> None:
    assert graph_signal([{"alice"}, set()], [], neighbour_share=0.5).tolist() == [0.0, 0.0]
    assert len(graph_signal([], [ALICE], neighbour_share=0.5)) == 0
    assert entity_weights([], [ALICE]).tolist() == [1.0]


def test_links_are_grouped_by_candidate_key() -> None:
    linked = LinkedEpisodes.from_rows([(7, "alice"), (3, "bob"), (7, "paris")], [])
    keys = np.array([3, 5, 7], dtype=np.int64)
    assert links_by_candidate(keys, linked) == [
        frozenset({"bob"}),
        frozenset(),
        frozenset({"alice", "paris"}),
    ]


def test_extra_candidates_are_appended_without_a_keyword_score() -> None:
    base = MergedCandidates(
        keys=np.array([1, 2], dtype=np.int64),
        cosine=np.array([0.5, 0.4]),
        keyword=np.array([1.0, np.nan]),
        created_at_seconds=np.array([10.0, 20.0]),
        importance=np.array([5.0, np.nan]),
    )
    merged = with_extra(
        base, np.array([9], dtype=np.int64), np.array([0.3]), np.array([30.0]), np.array([7.0])
    )
    assert merged.keys.tolist() == [1, 2, 9]
    assert merged.cosine is not None and merged.cosine.tolist() == [0.5, 0.4, 0.3]
    assert merged.keyword is not None and np.isnan(merged.keyword[2])
    assert merged.importance.tolist()[2] == 7.0
    assert with_extra(base, np.zeros(0, dtype=np.int64), *(np.zeros(0),) * 3) is base


def test_the_graph_boost_multiplies_the_boost_factor() -> None:
    boosts = Boosts(entity=0.2, time_window=0.3, graph=0.4)
    factor = boost_factor(np.array([1.0, 0.0]), np.array([0.0, 0.0]), boosts, np.array([0.5, 1.0]))
    np.testing.assert_allclose(factor, [0.8 * (1 - 0.4 * 0.5), 1 - 0.4])
    np.testing.assert_allclose(boost_factor(np.zeros(1), np.zeros(1), boosts, None), [1.0])


def _signals(graph: np.ndarray | None) -> CandidateSignals:
    return CandidateSignals(
        created_at_seconds=np.array([0.0, 0.0]),
        importance=np.array([np.nan, np.nan]),
        cosine=np.array([0.55, 0.5]),
        graph=graph,
    )


def test_the_ranking_lifts_and_explains_the_graph_signal() -> None:
    profile = replace(RankingProfile(), boosts=replace(RankingProfile().boosts, graph=0.5))
    options = RankOptions(now_seconds=0.0, limit=2, retrieval="dense")
    plain = rank(_signals(None), profile, options)
    assert [r.index for r in plain] == [0, 1]
    assert all(r.breakdown.boosts == () for r in plain)
    lifted = rank(_signals(np.array([0.0, 0.8])), profile, options)
    assert [r.index for r in lifted] == [1, 0]
    top = lifted[0].breakdown
    assert top.boosts == (AppliedBoost("graph", pytest.approx(0.4)),)
    # relevance = 1 - (1 - own) * (1 - 0.5 * 0.8), own = the dense signal (0.5 - 0.1) / 0.6
    assert top.relevance == pytest.approx(1 - (1 - 0.4 / 0.6) * (1 - 0.4))
    # off (strength 0): the signal changes nothing
    off = rank(_signals(np.array([0.0, 0.8])), RankingProfile(), options)
    assert [r.breakdown for r in off] == [r.breakdown for r in plain]


def test_the_knob_is_checked_and_reaches_the_profile() -> None:
    with pytest.raises(ValidationError):
        Boosts(graph=1.5)
    with pytest.raises(ValidationError):
        Boosts(graph_neighbours=-0.1)
    with pytest.raises(ConfigError):
        MemoryConfig(graph_boost=2)
    assert MemoryConfig(graph_boost=0.3).profile.boosts.graph == 0.3
    assert MemoryConfig().profile.boosts.graph == RankingProfile().boosts.graph


def test_the_facts_a_recall_walks_follow_its_retention() -> None:
    from datetime import UTC, datetime

    from memlane.recall.entities import _fact_filter
    from memlane.stores.base import EpisodeFilter

    cutoff = datetime(2025, 1, 1, tzinfo=UTC)
    flt = EpisodeFilter(tenant_id="t", session_id="s", retained_after=cutoff, never_forget_from=9.0)
    facts = _fact_filter(flt, "t", ["alice"])
    assert (facts.retained_after, facts.never_forget_from, facts.session_id) == (cutoff, 9.0, "s")
