"""Deprecated: moved to :mod:`memlane.recall.candidates`; this alias is removed in a later release."""

from __future__ import annotations

import importlib
import warnings
from typing import Any

from memlane.recall.candidates import (
    MergedCandidates,
    merge_candidates,
)

__all__ = ["MergedCandidates", "merge_candidates"]

_target = importlib.import_module("memlane.recall.candidates")

warnings.warn(
    "memlane.retrieval is deprecated; import from memlane.recall.candidates instead",
    DeprecationWarning,
    stacklevel=2,
)


def __getattr__(name: str) -> Any:
    """Forward any other module-level name to :mod:`memlane.recall.candidates`."""
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(_target, name)
