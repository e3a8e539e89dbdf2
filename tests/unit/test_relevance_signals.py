"""Each relevance signal on its own (pure functions of memlane.recall.relevance and the score terms)."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, datetime

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memlane import ValidationError
from memlane.analysis import runs, tag_words
from memlane.config.profile import (
    DEFAULT_PROFILE,
    PROFILES,
    Boosts,
    ContextWeights,
    DenseCalibration,
    Fusion,
    Pools,
    RankingProfile,
    RankingWeights,
    Speakers,
)
from memlane.recall.ranking import (
    CandidateSignals,
    RankOptions,
    Scores,
    convex_dense_weight,
    decided_by,
    rank,
    scores_of,
)
from memlane.recall.relevance import (
    addresses_agent,
    agent_discounted,
    agent_signal,
    boost_factor,
    boosted,
    contextual_relevance,
    coverage_dense_weight,
    dense_relevance,
    entity_signal,
    groups_by_gap,
    keyword_coverage,
    named_tag,
)

NONE = -1
NAN = float("nan")
LONE = np.full((1, 4), NONE, dtype=np.int64)


def _adjacent(*rows: tuple[int, int, int, int]) -> np.ndarray:
    return np.array(rows, dtype=np.int64)


# -- dense calibration --------------------------------------------------------------------


def test_dense_relevance_is_the_calibrated_cosine() -> None:
    cos = np.array([-0.5, 0.1, 0.4, 0.7, 0.9, np.nan])
    assert list(dense_relevance(cos)) == pytest.approx([0.0, 0.0, 0.5, 1.0, 1.0, 0.0])
    assert list(dense_relevance(cos, DenseCalibration(0.0, 0.5))) == pytest.approx([0, 0.2, 0.8, 1, 1, 0])


# -- conversation context -----------------------------------------------------------------


def test_a_lone_candidate_keeps_its_base_relevance() -> None:
    assert list(contextual_relevance(np.array([0.42]), LONE, np.array([0]))) == pytest.approx([0.42])
    assert (
        len(contextual_relevance(np.zeros(0), np.zeros((0, 4), dtype=np.int64), np.zeros(0, np.int64))) == 0
    )


def test_context_blends_the_neighbours_and_the_group_best() -> None:
    base = np.array([0.0, 0.9, 0.3])
    # candidate 0: +1 neighbour is 1, +2 neighbour is 2; all in group 0
    adjacent = _adjacent((NONE, NONE, 1, 2), (NONE, 0, 2, NONE), (0, 1, NONE, NONE))
    ctx = contextual_relevance(base, adjacent, np.zeros(3, dtype=np.int64))
    w = ContextWeights()
    expected0 = (0.0 + w.neighbour * 0.9 + w.neighbour2 * 0.3 + w.group * 0.9) / (
        1 + w.neighbour + w.neighbour2 + w.group
    )
    assert ctx[0] == pytest.approx(expected0)
    expected1 = (0.9 + w.neighbour * 0.3 + w.group * 0.9) / (1 + w.neighbour + w.group)  # no +-2 neighbour
    assert ctx[1] == pytest.approx(expected1)


def test_a_neighbour_of_another_group_counts_as_absent() -> None:
    base = np.array([0.2, 0.9])
    adjacent = _adjacent((NONE, NONE, 1, NONE), (NONE, 0, NONE, NONE))
    ctx = contextual_relevance(base, adjacent, np.array([0, 1]))
    assert list(ctx) == pytest.approx(base)  # alone in its group: context = base
    off = contextual_relevance(base, adjacent, np.array([0, 0]), ContextWeights(0.0, 0.0, 0.0))
    assert list(off) == pytest.approx(base)  # zero weights: no context


@given(st.lists(st.floats(0, 1), min_size=1, max_size=12), st.integers(0, 3))
def test_context_stays_in_the_unit_interval(values: list[float], groups: int) -> None:
    n = len(values)
    base = np.array(values)
    idx = np.arange(n)
    adjacent = np.stack([idx - 2, idx - 1, idx + 1, idx + 2], axis=1)
    adjacent[(adjacent < 0) | (adjacent >= n)] = NONE
    ctx = contextual_relevance(base, adjacent.astype(np.int64), (idx % (groups + 1)).astype(np.int64))
    assert np.all((ctx >= 0.0) & (ctx <= 1.0 + 1e-12))
    assert np.all(ctx <= max(values) + 1e-12)  # a mean of base values never exceeds the best


# -- groups -------------------------------------------------------------------------------


def test_groups_split_on_sessions_and_pauses() -> None:
    sessions = ["a", "a", "a", "b", None, None]
    order = np.array([1, 2, 3, 4, 5, 6], dtype=np.int64)
    created = np.array([0.0, 600.0, 600.0 + 7200, 700.0, 0.0, 1.0])
    groups = groups_by_gap(sessions, order, created, max_gap_s=3600.0)
    assert groups[0] == groups[1]  # same session, 10 minutes apart
    assert groups[2] != groups[1]  # two hours later: a new group
    assert groups[3] not in {groups[0], groups[2]}  # another session
    assert groups[4] != groups[5]  # no session: each alone
    assert len(groups_by_gap([], np.zeros(0, np.int64), np.zeros(0), 3600.0)) == 0


def test_groups_follow_insertion_order_not_input_order() -> None:
    groups = groups_by_gap(["a", "a", "a"], np.array([3, 1, 2]), np.array([200.0, 0.0, 100.0]), 150.0)
    assert len(set(groups.tolist())) == 1


# -- entity -------------------------------------------------------------------------------


def test_named_tag_is_the_one_tag_whose_words_the_query_names() -> None:
    tags = [("alice", "travel"), ("bob",), ("travel",)]
    assert named_tag("What did Alice say?", tags) == "alice"
    assert named_tag("what did alice tell bob", tags) is None  # two tags named: none
    assert named_tag("nothing here", tags) is None
    assert named_tag("New York trip", [("new york",), ("york",)]) is None  # both fully named
    assert named_tag("york trip", [("new york",), ("york",)]) == "york"
    assert named_tag("anything", []) is None


_TAG = st.sampled_from(
    ["alice", "bob", "new york", "york", "Travel", "travel-plans", "", "x y z", "assistant"]
)


@given(
    st.lists(st.lists(_TAG, max_size=3).map(tuple), max_size=12),
    st.lists(
        st.sampled_from(["alice", "York", "new", "travel", "plans", "x", "y", "z", "bob", "?"]), max_size=6
    ),
)
def test_named_tag_is_the_one_tag_of_any_candidate_whose_every_word_the_query_holds(
    tags: list[tuple[str, ...]], query_words: list[str]
) -> None:
    """The definition, tag by tag over every candidate's list (repeats included)."""
    query = " ".join(query_words)
    words = {run for _, run in runs(query)}
    named = {tag for carried in tags for tag in carried if tag_words(tag) and tag_words(tag) <= words}
    assert named_tag(query, tags) == (next(iter(named)) if len(named) == 1 else None)
    assert named_tag(query, iter(tags)) == named_tag(query, tags)  # any iterable of lists


def test_entity_signal_marks_the_carriers_of_the_tag() -> None:
    tags = [("alice",), ("bob", "alice"), ()]
    assert list(entity_signal(tags, "alice")) == [1.0, 1.0, 0.0]
    assert list(entity_signal(tags, None)) == [0.0, 0.0, 0.0]


# -- boosts -------------------------------------------------------------------------------


def test_boosts_lift_by_noisy_or() -> None:
    entity = np.array([0.0, 1.0, 0.0, 1.0])
    window = np.array([0.0, 0.0, 1.0, 1.0])
    factor = boost_factor(entity, window, Boosts(entity=0.2, time_window=0.3))
    assert list(factor) == pytest.approx([1.0, 0.8, 0.7, 0.56])
    assert list(boosted(np.full(4, 0.5), factor)) == pytest.approx([0.5, 0.6, 0.65, 0.72])
    assert list(boosted(np.array([1.0, 0.0]), np.array([0.5, 1.0]))) == [1.0, 0.0]


# -- score terms and what decided ---------------------------------------------------------


def test_score_terms_add_up_to_the_score() -> None:
    rel, rec, imp = np.array([0.8, 0.5]), np.array([0.2, 1.0]), np.array([0.5, 0.9])
    scores = scores_of(rel, rec, imp, RankingWeights(1, 1, 2), tie_band=0.1)
    expected = (rel + 0.1 * (rec / 4 + 2 * imp / 4)) / 1.1
    assert list(scores.total) == pytest.approx(expected)
    for i in range(2):
        assert float(scores.points(i).sum()) == pytest.approx(scores.total[i])
    assert scores.tie_band == pytest.approx(0.1 * 3 / 4)
    assert scores.weights == pytest.approx((1 / 1.1, 0.1 / 4 / 1.1, 0.1 / 2 / 1.1))


def _scores(rel: list[float], rec: list[float], imp: list[float]) -> Scores:
    return scores_of(np.array(rel), np.array(rec), np.array(imp), RankingWeights(), tie_band=0.1)


def test_decided_by_names_the_signal_that_gave_the_lead() -> None:
    assert decided_by(_scores([0.9, 0.5], [0.0, 1.0], [0.0, 1.0]), 0, 1) == "relevance"  # outside the band
    assert decided_by(_scores([0.5, 0.5], [1.0, 0.2], [0.5, 0.5]), 0, 1) == "recency"
    assert decided_by(_scores([0.51, 0.5], [0.5, 0.5], [0.9, 0.1]), 0, 1) == "importance"
    assert decided_by(_scores([0.51, 0.5], [0.5, 0.5], [0.5, 0.5]), 0, 1) == "relevance"  # inside the band
    assert decided_by(_scores([0.5, 0.5], [0.5, 0.5], [0.5, 0.5]), 0, 1) == "order"
    assert decided_by(_scores([0.5], [0.5], [0.5]), 0, None) == "relevance"


# -- the profile --------------------------------------------------------------------------


def test_profiles_are_recipes_of_one_value() -> None:
    assert PROFILES["convex"] is DEFAULT_PROFILE == RankingProfile()
    assert {name: p.fusion.method for name, p in PROFILES.items()} == {n: n for n in PROFILES}
    assert DEFAULT_PROFILE.pools.recall(10) == 500 and DEFAULT_PROFILE.pools.recall(30) == 600
    assert DEFAULT_PROFILE.pools.sessions(3) == 200 and DEFAULT_PROFILE.pools.sessions(20) == 400
    assert (DEFAULT_PROFILE.bm25.k1, DEFAULT_PROFILE.bm25.b) == (1.2, 0.3)


@pytest.mark.parametrize(
    "build",
    [
        lambda: Fusion(method="max"),
        lambda: DenseCalibration(0.7, 0.1),
        lambda: ContextWeights(neighbour=-1.0),
        lambda: ContextWeights(group_gap_s=0.0),
        lambda: Boosts(entity=1.5),
        lambda: Pools(recall_minimum=0),
        lambda: RankingProfile(tie_band=math.nan),
        lambda: RankingProfile(decay_per_day=0.0),
        lambda: RankingProfile(keyword_saturation=0.0),
        lambda: RankingProfile(fusion="rrf"),  # type: ignore[arg-type]
        lambda: Speakers(agent_discount=1.5),
        lambda: Speakers(agent_tag=" "),
        lambda: RankingProfile(speakers=0.3),  # type: ignore[arg-type]
    ],
)
def test_profile_values_are_checked(build: object) -> None:
    with pytest.raises(ValidationError):
        build()  # type: ignore[operator]


def test_keyword_coverage_is_the_share_of_candidates_that_match() -> None:
    assert keyword_coverage(np.array([2.0, NAN, 0.0, 0.5])) == pytest.approx(0.5)
    assert keyword_coverage(np.array([NAN, NAN])) == 0.0
    assert keyword_coverage(np.zeros(0)) == 0.0


def test_the_dense_share_grows_with_keyword_coverage() -> None:
    w = DEFAULT_PROFILE.fusion.dense_weight
    power = DEFAULT_PROFILE.fusion.coverage_power
    assert coverage_dense_weight(w, 0.0, power) == pytest.approx(w)  # words that pick out a few turns
    assert coverage_dense_weight(w, 1.0, power) == pytest.approx(1.0)  # words every candidate carries
    shares = [coverage_dense_weight(w, c, power) for c in (0.1, 0.3, 0.6, 0.9)]
    assert shares == sorted(shares) and all(w < s < 1.0 for s in shares)
    assert coverage_dense_weight(w, 0.7, 0.0) == pytest.approx(w)  # power 0: the fixed share
    assert coverage_dense_weight(0.4, 0.5, 1.0) == pytest.approx(1 - 0.6 * 0.5)


def test_the_convex_fusion_follows_the_candidates_coverage() -> None:
    def signals(keyword: list[float]) -> CandidateSignals:
        n = len(keyword)
        return CandidateSignals(
            np.zeros(n), np.full(n, NAN), cosine=np.full(n, 0.5), keyword=np.array(keyword)
        )

    fusion = DEFAULT_PROFILE.fusion
    assert convex_dense_weight(signals([3.0, NAN, NAN, NAN]), fusion) == pytest.approx(1 - 0.6 * 0.75)
    assert convex_dense_weight(signals([3.0, 1.0, 2.0, 1.0]), fusion) == pytest.approx(1.0)
    assert convex_dense_weight(signals([3.0, 1.0]), Fusion(coverage_power=0.0)) == fusion.dense_weight
    with pytest.raises(ValidationError):
        Fusion(coverage_power=-1.0)


# -- the fusion is monotone in each signal ----------------------------------------------------

_COSINE = st.floats(-1.0, 1.0) | st.just(NAN)  # NaN: the candidate has no vector
_BM25 = st.floats(0.0, 40.0) | st.just(NAN)  # NaN: no query term matches the candidate
_POOL = st.lists(st.tuples(_COSINE, _BM25), min_size=1, max_size=25)


def _recall_scores(pool: list[tuple[float, float]], fusion: Fusion) -> dict[int, float]:
    """Each candidate's score in one recall (no context, boosts, age or rating: relevance alone orders)."""
    n = len(pool)
    signals = CandidateSignals(
        np.zeros(n),
        np.full(n, NAN),
        cosine=np.array([c for c, _ in pool]),
        keyword=np.array([k for _, k in pool]),
    )
    ranked = rank(signals, replace(DEFAULT_PROFILE, fusion=fusion), RankOptions(now_seconds=0.0, limit=n))
    assert len(ranked) == n
    return {r.index: r.breakdown.score for r in ranked}


@given(pool=_POOL, method=st.sampled_from(["convex", "noisy_or", "rrf"]))
def test_a_candidate_better_on_both_signals_never_ranks_lower(
    pool: list[tuple[float, float]], method: str
) -> None:
    # One recall (a fixed query and its candidates): a candidate whose cosine and BM25 are both at least
    # another's (a missing one counts as lowest) never scores below it, under every fusion method.
    score = _recall_scores(pool, Fusion(method=method))
    low = [(-math.inf if math.isnan(c) else c, -math.inf if math.isnan(k) else k) for c, k in pool]
    for i, (ci, ki) in enumerate(low):
        for j, (cj, kj) in enumerate(low):
            if ci >= cj and ki >= kj:
                assert score[i] >= score[j] - 1e-12


@given(
    others=_POOL,
    cosine=st.floats(-1.0, 1.0),
    bm25=st.floats(0.01, 40.0),
    lower=st.floats(0.0, 1.0),
    method=st.sampled_from(["convex", "noisy_or"]),
)
def test_keyword_evidence_never_costs_against_a_recall_where_nothing_matches(
    others: list[tuple[float, float]], cosine: float, bm25: float, lower: float, method: str
) -> None:
    # LangGraph's test_vector_update_with_embedding: a document that matches the query's words, among any
    # other candidates, scores at least what it (or one no closer to the query) would score in a recall
    # where no candidate matches a query term. The withdrawn "dense share 1 without matches" broke this.
    fusion = Fusion(method=method)
    matching = _recall_scores([*others, (cosine, bm25)], fusion)[len(others)]
    unmatched = [(c, NAN) for c, _ in others]
    for farther in (cosine, cosine - lower * (cosine + 1.0)):
        assert matching >= _recall_scores([*unmatched, (farther, NAN)], fusion)[len(others)] - 1e-12


# -- the agent's own turns ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "addressed"),
    [
        ("How did you recommend handling retries?", True),
        ("What did YOU say about black?", True),
        ("Is that yours?", True),
        ("you're sure?", True),
        ("Can you repeat your advice on retries?", True),
        ("Could you remind me what you recommended?", True),
        ("Can you list the order in which I brought up the features?", False),
        ("What steps would you suggest I take?", False),
        ("What code style does the user prefer?", False),
        ("Which layout did I choose for the youth league site?", False),  # "youth" is not "you"
        ("Can you give me a comprehensive summary of how my project progressed?", True),
        ("Summarise what I learned about retries", True),
        ("A quick recap of the budget tracker, please", True),
        ("Which summer did I move to Berlin?", False),
        ("", False),
    ],
)
def test_a_second_person_query_addresses_the_agent(query: str, addressed: bool) -> None:
    assert addresses_agent(query) is addressed


def test_the_agent_signal_marks_agent_turns_unless_the_query_addresses_the_agent() -> None:
    tags = [("user",), ("assistant",), (), ("assistant", "code")]
    speakers = Speakers()
    assert agent_signal(tags, "what does the user prefer", speakers).tolist() == [0, 1, 0, 1]
    assert agent_signal(tags, "what did you suggest", speakers).tolist() == [0, 0, 0, 0]
    assert agent_signal(tags, "can you list what I asked for", speakers).tolist() == [0, 1, 0, 1]
    assert agent_signal(tags, "can you summarise how my project went", speakers).tolist() == [0, 0, 0, 0]
    assert agent_signal(tags, "what does the user prefer", Speakers(agent_discount=0.0)).tolist() == [0] * 4
    assert agent_signal(tags, "what does the user prefer", Speakers(agent_tag="user")).tolist() == [
        1,
        0,
        0,
        0,
    ]


def test_an_agent_turn_keeps_1_minus_d_of_its_relevance() -> None:
    rel = np.array([0.8, 0.5])
    assert agent_discounted(
        rel, np.array([1.0, 0.0]), Speakers(agent_discount=0.3)
    ).tolist() == pytest.approx([0.56, 0.5])
    assert agent_discounted(rel, None, Speakers()) is rel


def _user_and_agent(agent: list[float] | None) -> CandidateSignals:
    # candidate 0: the agent's long reply (cosine 0.70), candidate 1: the user's own turn (0.62)
    return CandidateSignals(
        np.zeros(2),
        np.full(2, NAN),
        cosine=np.array([0.70, 0.62]),
        agent=None if agent is None else np.array(agent),
    )


def test_the_users_turn_outranks_the_agents_restatement_and_the_breakdown_says_why() -> None:
    options = RankOptions(now_seconds=0.0, limit=2)
    plain = rank(_user_and_agent(None), DEFAULT_PROFILE, options)
    assert [r.index for r in plain] == [0, 1]
    assert all(r.breakdown.agent_discount is None for r in plain)
    ranked = rank(_user_and_agent([1.0, 0.0]), DEFAULT_PROFILE, options)
    assert [r.index for r in ranked] == [1, 0]
    agent = ranked[1].breakdown
    assert agent.agent_discount == DEFAULT_PROFILE.speakers.agent_discount
    assert agent.relevance == pytest.approx(plain[0].breakdown.relevance * (1 - agent.agent_discount))
    assert agent.own_relevance == pytest.approx(plain[0].breakdown.own_relevance * (1 - agent.agent_discount))
    assert ranked[0].breakdown.agent_discount is None
    off = replace(DEFAULT_PROFILE, speakers=Speakers(agent_discount=0.0))
    assert [r.index for r in rank(_user_and_agent([1.0, 0.0]), off, options)] == [0, 1]


def test_the_configuration_sets_the_agent_discount() -> None:
    from memlane import ConfigError, MemoryConfig

    assert MemoryConfig().profile.speakers == Speakers()
    assert MemoryConfig(agent_discount=0.0).profile.speakers.agent_discount == 0.0
    assert MemoryConfig(agent_discount=0.5, graph_boost=0.1).profile.boosts.graph == 0.1
    with pytest.raises(ConfigError):
        MemoryConfig(agent_discount=1.5)


def test_every_explanation_renders_the_agent_discount() -> None:
    from memlane import Episode, RecallHit, wire
    from memlane.cli.output import decision
    from memlane.server.inspector.data import explain

    ranked = rank(_user_and_agent([1.0, 0.0]), DEFAULT_PROFILE, RankOptions(now_seconds=0.0, limit=2))
    agent, user = ranked[1].breakdown, ranked[0].breakdown
    assert "the agent's own turn, discounted by 0.3" in wire.why(agent)
    assert "discounted" not in wire.why(user)
    assert "agent turn discounted" in decision(agent) and "discounted" not in decision(user)
    episode = Episode(
        id="e1",
        tenant_id="t",
        session_id="s",
        event_type="conversation_turn",
        content="Understood: black and type hints from now on.",
        tags=("assistant",),
        importance=None,
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
    )
    (explained,) = explain([RecallHit(episode=episode, breakdown=agent)])
    assert any(line.startswith("Discounted by 0.3: the agent's own turn") for line in explained.lines)
