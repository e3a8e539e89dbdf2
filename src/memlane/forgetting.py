"""Deprecated: moved to :mod:`memlane.lifecycle.forgetting`; this alias is removed in a later release."""

from __future__ import annotations

import warnings

from memlane.lifecycle.forgetting import (
    DEFAULT_BANDS,
    ForgetReport,
    ForgettingPolicy,
    half_life_strength,
)

__all__ = ["DEFAULT_BANDS", "ForgetReport", "ForgettingPolicy", "half_life_strength"]

warnings.warn(
    "memlane.forgetting is deprecated; import from memlane.lifecycle.forgetting instead",
    DeprecationWarning,
    stacklevel=2,
)
