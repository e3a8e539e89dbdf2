"""Retrieval-quality evaluation: benchmark loaders and metrics.

- :mod:`memlane.evaluation.locomo` loads and cleans the LoCoMo benchmark
  (``locomo10.json``, CC BY-NC 4.0, never bundled; see :func:`default_locomo_path`); the file
  format itself is :mod:`memlane.sessions.locomo_format`, which the session importer shares.
- :mod:`memlane.evaluation.metrics` holds recall@k, nDCG@k, percentiles and a
  per-category aggregator.
"""

from __future__ import annotations

from memlane.evaluation.locomo import (
    LOCOMO_CATEGORIES,
    EvidenceCleaning,
    LocomoConversation,
    LocomoFormatError,
    LocomoQuestion,
    LocomoTurn,
    clean_evidence,
    default_locomo_path,
    load_locomo,
    normalise_dia_id,
    parse_locomo,
    parse_session_datetime,
)
from memlane.evaluation.metrics import (
    MetricSummary,
    MetricTable,
    QuestionScore,
    aggregate,
    hit_at_k,
    ndcg_at_k,
    percentile,
    recall_at_k,
)

__all__ = [
    "LOCOMO_CATEGORIES",
    "EvidenceCleaning",
    "LocomoConversation",
    "LocomoFormatError",
    "LocomoQuestion",
    "LocomoTurn",
    "MetricSummary",
    "MetricTable",
    "QuestionScore",
    "aggregate",
    "clean_evidence",
    "default_locomo_path",
    "hit_at_k",
    "load_locomo",
    "ndcg_at_k",
    "normalise_dia_id",
    "parse_locomo",
    "parse_session_datetime",
    "percentile",
    "recall_at_k",
]
