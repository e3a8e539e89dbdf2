"""Pure parts of hybrid recall: query tokenisation, fusion math, candidate merging, time windows."""

from __future__ import annotations

import math
import sqlite3
import unicodedata
from dataclasses import replace
from datetime import UTC, datetime

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlane import ConfigError, MemoryConfig, ValidationError
from memlane.analysis import query_terms
from memlane.config.file import load_config
from memlane.config.profile import HYBRID_RRF, Boosts, Fusion, RankingProfile
from memlane.recall.candidates import merge_candidates
from memlane.recall.ranking import (
    CandidateSignals,
    RankingWeights,
    RankOptions,
    competition_ranks,
    fuse_noisy_or,
    fuse_rrf,
    rank,
)
from memlane.recall.relevance import base_relevance, keyword_relevance
from memlane.recall.temporal import parse_time_window
from memlane.stores.base import KeywordCandidates, VectorCandidates
from memlane.stores.sqlite.fts import fts5_match_expression

NAN = np.nan

# -- tokenisation ---------------------------------------------------------------------------


def test_fts5_expression_quotes_every_term() -> None:
    assert fts5_match_expression(["window", "seat"]) == '"window" OR "seat"'
    assert fts5_match_expression([]) == ""
    assert fts5_match_expression(['a"b']) == '"a""b"'


@pytest.fixture(scope="module")
def fts() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute(
        "CREATE VIRTUAL TABLE t USING fts5(content, tokenize='porter unicode61 remove_diacritics 2')"
    )
    conn.executemany(
        "INSERT INTO t (content) VALUES (?)",
        [("window seat",), ("NEAR the AND gate",), ("ünïcødé text",), ("content: colon",)],
    )
    return conn


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_fts5_syntax_in_user_text_never_errors(fts: sqlite3.Connection, text: str) -> None:
    terms = query_terms(text)
    assert all(t and all(ch.isalnum() or unicodedata.category(ch)[0] == "M" for ch in t) for t in terms)
    expression = fts5_match_expression(terms)
    if expression:
        fts.execute("SELECT rowid FROM t WHERE t MATCH ?", (expression,)).fetchall()


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("\"*():-^+{}[]'\\ NEAROTDwindowseat,.&|!<>~"))))
def test_fts5_operator_soup_never_errors(fts: sqlite3.Connection, text: str) -> None:
    expression = fts5_match_expression(query_terms(text))
    if expression:
        fts.execute("SELECT rowid FROM t WHERE t MATCH ?", (expression,)).fetchall()


# -- fusion math ----------------------------------------------------------------------------


def test_competition_ranks_share_ties_and_ignore_order() -> None:
    assert list(competition_ranks(np.array([0.5, 0.9, 0.5, NAN, 0.1]))) == [2, 1, 2, np.inf, 4]
    assert list(competition_ranks(np.array([]))) == []


def test_rrf_is_normalised() -> None:
    dense = np.array([0.9, 0.8, 0.1, NAN])
    keyword = np.array([3.0, NAN, 1.0, 2.0])
    fused = fuse_rrf(dense, keyword, k=5.0, dense_weight=0.5)  # ranks only: the scale does not matter
    assert fused[0] == pytest.approx(1.0)  # first in both lists
    assert fused[1] == pytest.approx(0.5 * 6 / 7)  # second in dense only
    assert fused[3] == pytest.approx(0.5 * 6 / 7)  # second in keyword only
    assert fused[2] == pytest.approx(0.5 * 6 / 8 + 0.5 * 6 / 8)
    assert np.all((fused >= 0) & (fused <= 1))


def test_noisy_or_and_convex_formulas() -> None:
    dense = np.array([0.4, 0.4, NAN, 0.0])
    keyword = np.array([1.0, NAN, 0.5, 0.0])
    assert list(fuse_noisy_or(dense, keyword, keyword_weight=0.6)) == pytest.approx(
        [1 - 0.6 * 0.4, 0.4, 0.3, 0.0]
    )
    convex = base_relevance(np.nan_to_num(dense), np.nan_to_num(keyword), 0.5)
    assert list(convex) == pytest.approx([0.7, 0.2, 0.25, 0.0])


unit = st.one_of(st.floats(0.0, 1.0), st.just(NAN))


@given(st.lists(st.tuples(unit, unit), min_size=1, max_size=30), st.floats(0.0, 1.0))
def test_noisy_or_bounds(pairs: list[tuple[float, float]], lam: float) -> None:
    dense = np.array([p[0] for p in pairs])
    keyword = np.array([p[1] for p in pairs])
    fused = fuse_noisy_or(dense, keyword, keyword_weight=lam)
    d = np.nan_to_num(dense)
    assert np.all(fused >= d - 1e-12) and np.all(fused <= 1.0) and np.all(fused >= 0.0)
    no_keyword = np.isnan(keyword)
    assert np.allclose(fused[no_keyword], d[no_keyword])
    for f in (
        fuse_rrf(dense, keyword, k=5.0, dense_weight=0.5),
        base_relevance(np.nan_to_num(dense), np.nan_to_num(keyword), 0.3),
    ):
        assert np.all((f >= 0) & (f <= 1))


def test_keyword_relevance_saturates_the_best_match() -> None:
    kw = keyword_relevance(np.array([4.0, 2.0, NAN, 0.0]), saturation=4.0)
    sat = 1 - math.exp(-1.0)
    assert list(kw) == pytest.approx([sat, 0.5 * sat, 0.0, 0.0])
    assert list(keyword_relevance(np.array([NAN, 0.0]))) == [0.0, 0.0]


def _rank(profile: RankingProfile | None = None, **kwargs: object) -> list[tuple[int, float]]:
    signals = {name: kwargs.pop(name) for name in ("cosine", "keyword", "in_window") if name in kwargs}
    ranked = rank(
        CandidateSignals(np.zeros(3), np.full(3, NAN), **signals),  # type: ignore[arg-type]
        profile or RankingProfile(),
        RankOptions(now_seconds=0.0, limit=3, weights=RankingWeights(1, 0, 0), **kwargs),  # type: ignore[arg-type]
    )
    return [(r.index, r.breakdown.relevance) for r in ranked]


def test_rank_modes_threshold_and_window() -> None:
    cos = np.array([0.2, 0.5, NAN])
    kw = np.array([NAN, 1.0, 4.0])
    dense = [(c - 0.1) / 0.6 for c in (0.2, 0.5)]  # calibrated cosine
    ranked = _rank(cosine=cos)
    assert [i for i, _ in ranked] == [1, 0, 2]
    assert [r for _, r in ranked] == pytest.approx([dense[1], dense[0], 0.0])
    assert [i for i, _ in _rank(cosine=None, keyword=kw)] == [2, 1, 0]
    sat = 1 - math.exp(-4.0 / 8.0)  # the best BM25 (4.0) gets its absolute saturation (s = 8)
    hybrid = _rank(cosine=cos, keyword=kw)
    w = 1 - 0.6 * (1 - 2 / 3)  # two of the three candidates match a term: the dense share grows to 0.8
    assert dict(hybrid)[2] == pytest.approx((1 - w) * sat)  # keyword only: w * 0 + (1 - w) * kw
    assert dict(hybrid)[1] == pytest.approx(w * dense[1] + (1 - w) * 0.25 * sat)
    assert [i for i, _ in hybrid] == [1, 0, 2]
    assert [i for i, _ in _rank(cosine=cos, keyword=kw, min_relevance=0.1)] == [1, 0]
    boosted = _rank(cosine=cos, in_window=np.array([True, False, False]))
    assert dict(boosted)[0] == pytest.approx(1 - (1 - dense[0]) * (1 - 0.3))
    rrf = _rank(HYBRID_RRF, cosine=cos, keyword=kw)
    assert rrf[0][1] <= 1.0
    (one,) = rank(
        CandidateSignals(np.zeros(3), np.full(3, NAN), keyword=kw),
        RankingProfile(),
        RankOptions(now_seconds=0.0, limit=1, fallback=True),
    )
    assert one.breakdown.fallback and one.breakdown.retrieval == "keyword" and one.breakdown.dense is None
    with pytest.raises(ValidationError):
        _rank(cosine=cos, retrieval="keyword")
    with pytest.raises(ValidationError):
        _rank(cosine=cos, keyword=kw, retrieval="sparse")
    with pytest.raises(ValidationError):
        _rank(cosine=cos, min_relevance=1.5)
    with pytest.raises(ValidationError):
        _rank(cosine=cos, keyword=np.array([1.0]))


def test_the_time_boost_is_the_profiles_one_knob() -> None:
    """#19: ``RelevanceParams.time_boost`` was silently overwritten by ``HybridSettings.temporal_boost``."""
    cos = np.array([0.2, 0.5, NAN])
    window = np.array([True, False, False])
    dense = (0.2 - 0.1) / 0.6
    for strength in (0.0, 0.3, 0.5):
        profile = replace(RankingProfile(), boosts=Boosts(time_window=strength))
        assert dict(_rank(profile, cosine=cos, in_window=window))[0] == pytest.approx(
            1 - (1 - dense) * (1 - strength)
        )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"method": "max"},
        {"rrf_k": 0},
        {"keyword_weight": 1.5},
        {"dense_weight": -0.1},
        {"dense_weight": float("nan")},
        {"rrf_k": True},
    ],
)
def test_fusion_validation(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        Fusion(**kwargs)  # type: ignore[arg-type]


def test_memory_config_validation_and_yaml_keys() -> None:
    config = MemoryConfig(retrieval="keyword", fusion="rrf", min_relevance=0.3, temporal=False)
    assert config.profile.fusion.method == "rrf" and config.profile == HYBRID_RRF
    for bad in ({"retrieval": "x"}, {"fusion": "x"}, {"min_relevance": 2}, {"temporal": "yes"}):
        with pytest.raises(ConfigError):
            MemoryConfig(**bad)  # type: ignore[arg-type]
    loaded = load_config(
        {
            "episodic_memory": {
                "retrieval": "dense",
                "fusion": "convex",
                "min_relevance": 0.25,
                "temporal": False,
                "embedding_fallback": False,
            }
        }
    ).memory_config
    assert (loaded.retrieval, loaded.fusion, loaded.min_relevance) == ("dense", "convex", 0.25)
    assert (loaded.temporal, loaded.embedding_fallback) == (False, False)
    with pytest.raises(ConfigError, match=r"episodic_memory\.min_relevance"):
        load_config({"episodic_memory": {"min_relevance": -1}})


# -- merging --------------------------------------------------------------------------------


def test_merge_candidates_unions_by_key() -> None:
    dense = VectorCandidates(
        keys=np.array([10, 11, 12]),
        cosine=np.array([0.9, 0.5, 0.1], dtype=np.float32),
        created_at_seconds=np.array([1.0, 2.0, 3.0]),
        importance=np.array([NAN, 5.0, NAN]),
    )
    keyword = KeywordCandidates.from_rows([(12, 3.0, 3.0, None), (20, 1.0, 4.0, 7.0)])
    merged = merge_candidates(dense, keyword)
    assert list(merged.keys) == [10, 11, 12, 20]
    assert merged.cosine is not None and merged.keyword is not None
    assert np.isnan(merged.cosine[3]) and merged.cosine[0] == pytest.approx(0.9)
    assert list(np.isnan(merged.keyword)) == [True, True, False, False]
    assert list(merged.keyword[2:]) == [3.0, 1.0]
    assert list(merged.importance[3:]) == [7.0]
    only_kw = merge_candidates(None, keyword)
    assert only_kw.cosine is None and list(only_kw.keys) == [12, 20]
    assert len(merge_candidates(None, None)) == 0
    assert merge_candidates(dense, None).keyword is None


# -- time windows ---------------------------------------------------------------------------

NOW = datetime(2023, 10, 20, 15, tzinfo=UTC)


def _d(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "start", "end", "granularity"),
    [
        ("what did we discuss last May?", _d(2023, 5, 1), _d(2023, 6, 1), "month"),
        ("anything in 2022?", _d(2022, 1, 1), _d(2023, 1, 1), "year"),
        ("what happened two weeks ago", _d(2023, 10, 2), _d(2023, 10, 9), "week"),
        ("notes from yesterday", _d(2023, 10, 19), _d(2023, 10, 20), "day"),
        ("the call on October 13, 2023", _d(2023, 10, 13), _d(2023, 10, 14), "day"),
        ("trips in July 2023", _d(2023, 7, 1), _d(2023, 8, 1), "month"),
        ("what about last year", _d(2022, 1, 1), _d(2023, 1, 1), "year"),
        ("plans made in April ... in 2023", _d(2023, 4, 1), _d(2023, 5, 1), "month"),
    ],
)
def test_time_windows(query: str, start: datetime, end: datetime, granularity: str) -> None:
    window = parse_time_window(query, NOW)
    assert window is not None
    assert (window.start, window.end, window.granularity) == (start, end, granularity)
    assert window.contains_seconds(start.timestamp()) and not window.contains_seconds(end.timestamp())
    assert window.to_dict()["granularity"] == granularity


@pytest.mark.parametrize(
    "query",
    [
        "When did Melanie paint a sunrise?",
        "How long ago was her 18th birthday?",
        "what may I like?",
        "",
        "   ",
    ],
)
def test_no_time_window(query: str) -> None:
    assert parse_time_window(query, NOW) is None


def test_time_window_needs_an_aware_now() -> None:
    with pytest.raises(ValidationError):
        parse_time_window("last year", datetime(2023, 1, 1))
