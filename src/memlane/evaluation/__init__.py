"""Retrieval-quality evaluation: benchmark loaders and metrics.

- :mod:`memlane.evaluation.locomo` loads and cleans the LoCoMo benchmark
  (``locomo10.json``, CC BY-NC 4.0, never bundled; see :func:`default_locomo_path`); the file
  format itself is :mod:`memlane.sessions.locomo_format`, which the session importer shares.
- :mod:`memlane.evaluation.metrics` holds recall@k, nDCG@k, percentiles and a
  per-category aggregator.
- :mod:`memlane.evaluation.beam` loads and runs the BEAM benchmark (no licence, never bundled; see
  :func:`default_beam_path`); :mod:`memlane.evaluation.bootstrap` gives per-conversation paired
  bootstrap intervals.
- :mod:`memlane.evaluation.configurations` names what the runners compare.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memlane.lazy import lazy_exports

if TYPE_CHECKING:
    from memlane.evaluation.beam import (
        BeamReport,
        beam_report_to_markdown,
        default_beam_path,
        load_beam,
        run_beam,
    )
    from memlane.evaluation.bootstrap import PairedDifference, paired_bootstrap
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

_HOMES: dict[str, tuple[str, ...]] = {
    "memlane.evaluation.beam": (
        "BeamReport",
        "beam_report_to_markdown",
        "default_beam_path",
        "load_beam",
        "run_beam",
    ),
    "memlane.evaluation.bootstrap": (
        "PairedDifference",
        "paired_bootstrap",
    ),
    "memlane.evaluation.locomo": (
        "LOCOMO_CATEGORIES",
        "EvidenceCleaning",
        "LocomoConversation",
        "LocomoFormatError",
        "LocomoQuestion",
        "LocomoTurn",
        "clean_evidence",
        "default_locomo_path",
        "load_locomo",
        "normalise_dia_id",
        "parse_locomo",
        "parse_session_datetime",
    ),
    "memlane.evaluation.metrics": (
        "MetricSummary",
        "MetricTable",
        "QuestionScore",
        "aggregate",
        "hit_at_k",
        "ndcg_at_k",
        "percentile",
        "recall_at_k",
    ),
}
__getattr__, __dir__ = lazy_exports(__name__, globals(), _HOMES)
"""Names imported on first use: ``memlane eval``'s options read
:mod:`memlane.evaluation.configurations` without loading the runners (numpy, the engine)."""

__all__ = [
    "LOCOMO_CATEGORIES",
    "BeamReport",
    "EvidenceCleaning",
    "LocomoConversation",
    "LocomoFormatError",
    "LocomoQuestion",
    "LocomoTurn",
    "MetricSummary",
    "MetricTable",
    "PairedDifference",
    "QuestionScore",
    "aggregate",
    "beam_report_to_markdown",
    "clean_evidence",
    "default_beam_path",
    "default_locomo_path",
    "hit_at_k",
    "load_beam",
    "load_locomo",
    "ndcg_at_k",
    "normalise_dia_id",
    "paired_bootstrap",
    "parse_locomo",
    "parse_session_datetime",
    "percentile",
    "recall_at_k",
    "run_beam",
]
