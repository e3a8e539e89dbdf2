"""The recall pipeline, one stage a module.

* :mod:`~memlane.recall.temporal` — time expressions in a query -> a time window (pure).
* :mod:`~memlane.recall.candidates` — merging a store's dense and keyword candidates (pure).
* :mod:`~memlane.recall.entities` — the knowledge-graph entity signal: the query's entities, their
  neighbours, the candidates' links and the episodes only the graph finds (off by default).
* :mod:`~memlane.recall.relevance` — the relevance signals: calibration, context, boosts (pure).
* :mod:`~memlane.recall.ranking` — relevance-first scores and their breakdowns (pure).

Every constant of the last two is in one :class:`memlane.config.profile.RankingProfile`
(re-exported here with the weight presets).

:class:`memlane.EpisodicMemory` validates a recall, applies its scope and runs these stages.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memlane.config.profile import (
    DEFAULT_DECAY_PER_DAY,
    DEFAULT_PROFILE,
    PRESETS,
    PROFILES,
    RETRIEVAL_MODES,
    Fusion,
    RankingProfile,
    RankingWeights,
    resolve_weights,
)
from memlane.lazy import lazy_exports

if TYPE_CHECKING:
    from memlane.recall.ranking import CandidateSignals, RankOptions, importance_signal, rank

__getattr__, __dir__ = lazy_exports(
    __name__,
    globals(),
    {"memlane.recall.ranking": ("CandidateSignals", "RankOptions", "importance_signal", "rank")},
)
"""The ranking's names are imported on first use: the weights and presets above need no numpy
(``memlane --help`` reads them), the ranking does."""

__all__ = [
    "DEFAULT_DECAY_PER_DAY",
    "DEFAULT_PROFILE",
    "PRESETS",
    "PROFILES",
    "RETRIEVAL_MODES",
    "CandidateSignals",
    "Fusion",
    "RankOptions",
    "RankingProfile",
    "RankingWeights",
    "importance_signal",
    "rank",
    "resolve_weights",
]
