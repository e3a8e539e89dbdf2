"""The configurations the benchmarks compare (:class:`EvalConfiguration`), apart from the runners.

The runners (:mod:`memlane.evaluation.locomo_run`, :mod:`~memlane.evaluation.beam`) import the
engine and numpy; ``memlane eval``'s options only need these names, so ``memlane --help`` reads
them without loading either.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from memlane.config import MemoryConfig
from memlane.config.profile import RankingWeights

__all__ = ["DEFAULT_CONFIGURATIONS", "EvalConfiguration"]


@dataclass(frozen=True)
class EvalConfiguration:
    """One way of recalling, as compared by the benchmark.

    Attributes:
        weights: Ranking weights: a preset name or :class:`RankingWeights`.
        retrieval: ``"hybrid"``, ``"dense"`` or ``"keyword"`` (:attr:`MemoryConfig.retrieval`).
        fusion: ``"convex"`` (default), ``"noisy_or"`` or ``"rrf"`` (:attr:`MemoryConfig.fusion`).
        temporal: Whether time expressions in questions boost their window.
        agent_discount: :attr:`MemoryConfig.agent_discount` (``None``: the profile's).
        description: One line for the report's legend.
    """

    weights: RankingWeights | str = "relevance_only"
    retrieval: str = "hybrid"
    fusion: str = "convex"
    temporal: bool = True
    agent_discount: float | None = None
    description: str = ""

    def memory_config(self) -> MemoryConfig:
        """The :class:`MemoryConfig` this configuration recalls with."""
        return MemoryConfig(
            weights=self.weights,
            retrieval=self.retrieval,
            fusion=self.fusion,
            temporal=self.temporal,
            agent_discount=self.agent_discount,
        )


DEFAULT_CONFIGURATIONS: Mapping[str, EvalConfiguration] = {
    "library defaults": EvalConfiguration(
        weights="balanced",
        description="the library defaults through the public API, no options (the headline row)",
    ),
    "relevance_only": EvalConfiguration(description="the defaults with the relevance_only preset"),
    "dense": EvalConfiguration(retrieval="dense", description="embeddings only (the bundled MiniLM)"),
    "keyword": EvalConfiguration(retrieval="keyword", description="keyword index only (per-scope BM25)"),
}
"""Configuration label -> what it runs. The first row is what a user who keeps every default
gets (``balanced`` weights, hybrid relevance with context signals, time windows); the others
change one thing. No reranker is compared: no PyPI package carries a stronger embedding model
or a cross-encoder as an ONNX file usable offline (see ``benchmarks/README.md``)."""
