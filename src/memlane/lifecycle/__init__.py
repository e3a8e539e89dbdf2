"""What happens to episodes after they are written.

* :mod:`~memlane.lifecycle.forgetting` — importance-banded forgetting curves and ``forget``.
* :mod:`~memlane.lifecycle.compaction` — merging near-duplicates and archiving stale episodes.
* :mod:`~memlane.lifecycle.reembed` — moving a store to another embedding model.
"""

from __future__ import annotations

from memlane.lifecycle.compaction import CompactionReport, MergeGroup
from memlane.lifecycle.forgetting import ForgetReport, ForgettingPolicy
from memlane.lifecycle.reembed import (
    DEFAULT_BATCH_SIZE,
    ReembedReport,
    embedder_for_model,
    reembed,
    reembed_backend,
)

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "CompactionReport",
    "ForgetReport",
    "ForgettingPolicy",
    "MergeGroup",
    "ReembedReport",
    "embedder_for_model",
    "reembed",
    "reembed_backend",
]
