"""Deprecated: moved to :mod:`memlane.lifecycle.compaction`; this alias is removed in a later release."""

from __future__ import annotations

import warnings

from memlane.lifecycle.compaction import (
    CompactionReport,
    MergeGroup,
    cluster,
    merge_episodes,
    representative_key,
)

__all__ = ["CompactionReport", "MergeGroup", "cluster", "merge_episodes", "representative_key"]

warnings.warn(
    "memlane.compaction is deprecated; import from memlane.lifecycle.compaction instead",
    DeprecationWarning,
    stacklevel=2,
)
