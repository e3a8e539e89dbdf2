"""The recall pipeline, one stage a module.

* :mod:`~memlane.recall.keywords` — query text -> safe keyword terms (pure).
* :mod:`~memlane.recall.temporal` — time expressions in a query -> a time window (pure).
* :mod:`~memlane.recall.candidates` — merging a store's dense and keyword candidates (pure).
* :mod:`~memlane.recall.ranking` — relevance, recency, importance, fusion and presets (pure).

:class:`memlane.EpisodicMemory` validates a recall, applies its scope and runs these stages.
"""

from __future__ import annotations

from memlane.recall.ranking import (
    DEFAULT_DECAY_PER_DAY,
    PRESETS,
    RETRIEVAL_MODES,
    HybridSettings,
    RankingWeights,
    importance_signal,
    rank,
    resolve_weights,
)

__all__ = [
    "DEFAULT_DECAY_PER_DAY",
    "PRESETS",
    "RETRIEVAL_MODES",
    "HybridSettings",
    "RankingWeights",
    "importance_signal",
    "rank",
    "resolve_weights",
]
