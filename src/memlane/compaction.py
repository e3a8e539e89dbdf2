"""Deprecated: moved to :mod:`memlane.lifecycle.compaction`; this alias is removed in a later release."""

from __future__ import annotations

import importlib
import warnings
from typing import Any

from memlane.lifecycle.compaction import (
    MERGE_REASON_PREFIX,
    CompactionReport,
    MergeGroup,
    cluster,
    merge_episodes,
    representative_key,
)

__all__ = [
    "MERGE_REASON_PREFIX",
    "CompactionReport",
    "MergeGroup",
    "cluster",
    "merge_episodes",
    "representative_key",
]

_target = importlib.import_module("memlane.lifecycle.compaction")

warnings.warn(
    "memlane.compaction is deprecated; import from memlane.lifecycle.compaction instead",
    DeprecationWarning,
    stacklevel=2,
)


def __getattr__(name: str) -> Any:
    """Forward any other module-level name to :mod:`memlane.lifecycle.compaction`."""
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(_target, name)
