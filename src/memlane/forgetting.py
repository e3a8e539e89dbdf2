"""Deprecated: moved to :mod:`memlane.lifecycle.forgetting`; this alias is removed in a later release."""

from __future__ import annotations

import importlib
import warnings
from typing import Any

from memlane.lifecycle.forgetting import (
    DEFAULT_BANDS,
    ForgetReport,
    ForgettingPolicy,
    half_life_strength,
)

__all__ = ["DEFAULT_BANDS", "ForgetReport", "ForgettingPolicy", "half_life_strength"]

_target = importlib.import_module("memlane.lifecycle.forgetting")

warnings.warn(
    "memlane.forgetting is deprecated; import from memlane.lifecycle.forgetting instead",
    DeprecationWarning,
    stacklevel=2,
)


def __getattr__(name: str) -> Any:
    """Forward any other module-level name to :mod:`memlane.lifecycle.forgetting`."""
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(_target, name)
