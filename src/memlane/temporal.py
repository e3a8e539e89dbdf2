"""Deprecated: moved to :mod:`memlane.recall.temporal`; this alias is removed in a later release."""

from __future__ import annotations

import importlib
import warnings
from typing import Any

from memlane.recall.temporal import (
    TimeWindow,
    parse_time_window,
)

__all__ = ["TimeWindow", "parse_time_window"]

_target = importlib.import_module("memlane.recall.temporal")

warnings.warn(
    "memlane.temporal is deprecated; import from memlane.recall.temporal instead",
    DeprecationWarning,
    stacklevel=2,
)


def __getattr__(name: str) -> Any:
    """Forward any other module-level name to :mod:`memlane.recall.temporal`."""
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(_target, name)
