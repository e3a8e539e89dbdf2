"""Deprecated: moved to :mod:`memlane.recall.keywords`; this alias is removed in a later release."""

from __future__ import annotations

import importlib
import warnings
from typing import Any

from memlane.recall.keywords import (
    MAX_TERM_CHARS,
    MAX_TERMS,
    STOPWORDS,
    keyword_terms,
)
from memlane.stores.common_terms import CommonTermFilter

__all__ = ["MAX_TERMS", "MAX_TERM_CHARS", "STOPWORDS", "CommonTermFilter", "keyword_terms"]

_target = importlib.import_module("memlane.recall.keywords")

warnings.warn(
    "memlane.keywords is deprecated; import from memlane.recall.keywords instead",
    DeprecationWarning,
    stacklevel=2,
)


def __getattr__(name: str) -> Any:
    """Forward any other module-level name to :mod:`memlane.recall.keywords`."""
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(_target, name)
