"""Deprecated: moved to :mod:`memlane.recall.keywords`; this alias is removed in a later release."""

from __future__ import annotations

import warnings

from memlane.recall.keywords import (
    MAX_TERM_CHARS,
    MAX_TERMS,
    STOPWORDS,
    keyword_terms,
)
from memlane.stores.common_terms import CommonTermFilter

__all__ = ["MAX_TERMS", "MAX_TERM_CHARS", "STOPWORDS", "CommonTermFilter", "keyword_terms"]

warnings.warn(
    "memlane.keywords is deprecated; import from memlane.recall.keywords instead",
    DeprecationWarning,
    stacklevel=2,
)
