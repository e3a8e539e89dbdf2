"""Deprecated: moved to :mod:`memlane.recall.ranking`; this alias is removed in a later release."""

from __future__ import annotations

import importlib
import warnings
from typing import Any

from memlane.recall.ranking import (
    DEFAULT_DECAY_PER_DAY,
    FUSION_METHODS,
    PRESETS,
    RETRIEVAL_MODES,
    HybridSettings,
    RankedCandidate,
    RankingWeights,
    competition_ranks,
    fuse_convex,
    fuse_noisy_or,
    fuse_rrf,
    importance_signal,
    keyword_signal,
    rank,
    recency_signal,
    relevance_signal,
    resolve_weights,
)

__all__ = [
    "DEFAULT_DECAY_PER_DAY",
    "FUSION_METHODS",
    "PRESETS",
    "RETRIEVAL_MODES",
    "HybridSettings",
    "RankedCandidate",
    "RankingWeights",
    "competition_ranks",
    "fuse_convex",
    "fuse_noisy_or",
    "fuse_rrf",
    "importance_signal",
    "keyword_signal",
    "rank",
    "recency_signal",
    "relevance_signal",
    "resolve_weights",
]

_target = importlib.import_module("memlane.recall.ranking")

warnings.warn(
    "memlane.ranking is deprecated; import from memlane.recall.ranking instead",
    DeprecationWarning,
    stacklevel=2,
)


def __getattr__(name: str) -> Any:
    """Forward any other module-level name to :mod:`memlane.recall.ranking`."""
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(_target, name)
