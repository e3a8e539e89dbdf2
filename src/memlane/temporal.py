"""Deprecated: moved to :mod:`memlane.recall.temporal`; this alias is removed in a later release."""

from __future__ import annotations

import warnings

from memlane.recall.temporal import (
    TimeWindow,
    parse_time_window,
)

__all__ = ["TimeWindow", "parse_time_window"]

warnings.warn(
    "memlane.temporal is deprecated; import from memlane.recall.temporal instead",
    DeprecationWarning,
    stacklevel=2,
)
