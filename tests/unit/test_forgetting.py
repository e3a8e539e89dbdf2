"""The pure forgetting math: half-life bands, strength, and the ranking hook."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memlane import ConfigError, MemoryConfig
from memlane.config.profile import DEFAULT_PROFILE
from memlane.lifecycle.forgetting import ForgettingPolicy, half_life_strength
from memlane.recall.ranking import CandidateSignals, RankingWeights, RankOptions, rank

DAY = 86_400.0
ratings = st.floats(min_value=1.0, max_value=10.0, allow_nan=False)
ages = st.floats(min_value=0.0, max_value=1e4 * DAY, allow_nan=False)


@pytest.mark.parametrize(
    ("importance", "half_life"),
    [(10, math.inf), (9, math.inf), (8.9, 30), (7, 30), (6.5, 7), (4, 7), (3.99, 1), (1, 1), (None, 7)],
)
def test_default_bands(importance: float | None, half_life: float) -> None:
    assert ForgettingPolicy().half_life_days(importance) == half_life


def test_default_never_forget_from_is_nine() -> None:
    assert ForgettingPolicy().never_forget_from == 9.0
    assert ForgettingPolicy(bands=((1, 3),)).never_forget_from is None


@given(ages, ratings)
def test_strength_is_the_half_life_curve(age: float, importance: float) -> None:
    policy = ForgettingPolicy()
    half = policy.half_life_days(importance)
    strength = policy.strength(age, importance)
    assert 0.0 <= strength <= 1.0
    if math.isinf(half):
        assert strength == 1.0
    else:
        assert strength == pytest.approx(0.5 ** (age / DAY / half), rel=1e-9, abs=1e-300)


@given(ages, ages, ratings)
def test_strength_never_grows_with_age(a: float, b: float, importance: float) -> None:
    policy = ForgettingPolicy()
    young, old = sorted((a, b))
    assert policy.strength(old, importance) <= policy.strength(young, importance)


@given(ages, ratings, ratings)
def test_more_important_is_never_weaker(age: float, x: float, y: float) -> None:
    policy = ForgettingPolicy()
    low, high = sorted((x, y))
    assert policy.strength(age, high) >= policy.strength(age, low)


@given(st.lists(st.one_of(st.none(), ratings), min_size=1, max_size=20))
def test_vectorised_half_lives_match_scalar(values: list[float | None]) -> None:
    policy = ForgettingPolicy()
    arr = np.array([np.nan if v is None else v for v in values])
    assert policy.half_lives(arr).tolist() == [policy.half_life_days(v) for v in values]


def test_one_half_life_halves_and_future_counts_as_now() -> None:
    assert float(half_life_strength(7 * DAY, 7.0)) == pytest.approx(0.5)
    assert float(half_life_strength(-5 * DAY, 1.0)) == 1.0
    assert float(half_life_strength(1e9, math.inf)) == 1.0


def test_rank_uses_half_lives_for_recency() -> None:
    signals = CandidateSignals(
        cosine=np.array([0.5, 0.5]),
        created_at_seconds=np.array([0.0, 0.0]),
        importance=np.array([10.0, 2.0]),
        half_life_days=np.array([math.inf, 1.0]),
    )
    ranked = rank(
        signals, DEFAULT_PROFILE, RankOptions(now_seconds=2 * DAY, limit=2, weights=RankingWeights())
    )
    assert [r.breakdown.recency for r in ranked] == [1.0, pytest.approx(0.25)]


@pytest.mark.parametrize(
    "bands",
    [((7, None), (9, 30)), ((0, 1),), ((11, None),), ((5, -1),), ((5, math.inf),), (), "x"],
)
def test_bad_bands_are_config_errors(bands: object) -> None:
    with pytest.raises(ConfigError):
        ForgettingPolicy(bands=bands)  # type: ignore[arg-type]


def test_config_accepts_a_mapping_and_validates() -> None:
    config = MemoryConfig(forgetting_policy={"bands": {8: None, 1: 2}, "unrated": None})
    assert config.policy.half_life_days(8) == math.inf
    assert config.policy.half_life_days(None) == math.inf
    assert config.policy.half_life_days(5) == 2
    for bad in (
        {"forget_action": "shred"},
        {"forget_threshold": 0},
        {"forget_threshold": 1},
        {"forgetting": "yes"},
        {"forgetting_policy": {"bandz": {}}},
        {"forgetting_policy": {"bands": {"x": 1}}},
        {"contradiction_threshold": 0},
        {"auto_supersede": 1},
    ):
        with pytest.raises(ConfigError):
            MemoryConfig(**bad)  # type: ignore[arg-type]


def test_yaml_keys_reach_the_memory_config() -> None:
    from memlane.config.file import load_config

    config = load_config(
        {
            "episodic_memory": {
                "embedding_provider": "hashing",
                "forgetting": True,
                "forgetting_policy": {"bands": {9: None, 5: 10, 1: 1}, "unrated": 3},
                "forget_action": "delete",
                "forget_threshold": 0.1,
                "contradiction_threshold": 0.9,
                "auto_supersede": True,
            }
        }
    )
    memory = config.episodic_or_default.memory
    assert memory.forgetting and memory.forget_action == "delete" and memory.forget_threshold == 0.1
    assert memory.policy.half_life_days(6) == 10 and memory.policy.half_life_days(None) == 3
    assert memory.auto_supersede and memory.contradiction_threshold == 0.9
    with pytest.raises(ConfigError, match=r"episodic_memory\.forget_action"):
        load_config({"episodic_memory": {"embedding_provider": "hashing", "forget_action": "shred"}})
