"""Unit tests of input validation and configuration."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta, timezone

import numpy as np
import pytest

from memlane import ConfigError, FrozenClock, MemoryConfig, RankingWeights, Scope, ValidationError
from memlane.clock import ensure_utc
from memlane.config import database_from_env
from memlane.validation import (
    check_identifier,
    check_limit,
    clamp_importance,
    normalize_metadata,
    normalize_tags,
)


def test_clamp_importance() -> None:
    assert clamp_importance(None) is None
    assert clamp_importance(0) == 1.0
    assert clamp_importance(100) == 10.0
    assert clamp_importance(np.float32(7.5)) == 7.5
    assert clamp_importance(np.int64(3)) == 3.0
    for bad in (math.nan, math.inf, True, "7", None.__class__, [1]):
        with pytest.raises(ValidationError):
            clamp_importance(bad)


def test_normalize_tags_rule() -> None:
    assert normalize_tags(None) == ()
    assert normalize_tags([" Travel ", "travel", "", "  ", "New   York", "new york", "Payment"]) == (
        "travel",
        "new york",
        "payment",
    )
    assert normalize_tags("Solo") == ("solo",)
    for bad in ([1], [None], {"a": 1}, 5):
        with pytest.raises(ValidationError):
            normalize_tags(bad)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        normalize_tags(["x" * 201])


def test_identifiers_and_limits() -> None:
    assert check_identifier("  booking ", "event_type") == "booking"
    with pytest.raises(ValidationError, match="event_type"):
        check_identifier(" ", "event_type")
    assert check_limit(3) == 3
    for bad in (0, -2, True, 2.0, None):
        with pytest.raises(ValidationError):
            check_limit(bad)


def test_metadata_is_copied() -> None:
    original = {"a": [1, 2], "b": {"c": "d"}}
    copy = normalize_metadata(original)
    assert copy == original and copy is not original
    with pytest.raises(ValidationError):
        normalize_metadata(["not", "a", "mapping"])  # type: ignore[arg-type]


def test_clock_and_utc() -> None:
    t = datetime(2026, 1, 1, 12, tzinfo=timezone(timedelta(hours=2)))
    assert ensure_utc(t, "t") == t and ensure_utc(t, "t").tzinfo == UTC
    with pytest.raises(ValidationError):
        ensure_utc(datetime(2026, 1, 1), "t")
    clock = FrozenClock(t)
    clock.advance(timedelta(days=1))
    assert clock.now() == t + timedelta(days=1)


def test_memory_config_validation() -> None:
    cfg = MemoryConfig(scope="tenant", weights="cold_start")
    assert cfg.scope is Scope.TENANT
    assert cfg.ranking_weights == RankingWeights(0.3, 0.0, 0.7, tie_band=1.0)
    for bad in (
        {"scope": "planet"},
        {"default_limit": 0},
        {"default_limit": True},
        {"retention_days": 0},
        {"retention_days": math.inf},
        {"prune_probability": 1.5},
        {"decay_per_day": 0},
        {"weights": "nope"},
    ):
        with pytest.raises(ConfigError):
            MemoryConfig(**bad)  # type: ignore[arg-type]


def test_database_from_env() -> None:
    assert database_from_env({}) == "memlane.db"
    assert database_from_env({"MEMLANE_DB": "/tmp/x.db"}) == "/tmp/x.db"
