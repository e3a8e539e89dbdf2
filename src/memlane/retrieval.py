"""Deprecated: moved to :mod:`memlane.recall.candidates`; this alias is removed in a later release."""

from __future__ import annotations

import warnings

from memlane.recall.candidates import (
    MergedCandidates,
    merge_candidates,
)

__all__ = ["MergedCandidates", "merge_candidates"]

warnings.warn(
    "memlane.retrieval is deprecated; import from memlane.recall.candidates instead",
    DeprecationWarning,
    stacklevel=2,
)
