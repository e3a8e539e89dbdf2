"""Deprecated: moved to :mod:`memlane.lifecycle.reembed`; this alias is removed in a later release."""

from __future__ import annotations

import importlib
import warnings
from typing import Any

from memlane.lifecycle.reembed import (
    DEFAULT_BATCH_SIZE,
    KINDS,
    EmbedFn,
    ProgressFn,
    ReembedBackend,
    ReembedReport,
    ReembedState,
    VectorKind,
    embedder_for_model,
    reembed,
    reembed_backend,
)

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "KINDS",
    "EmbedFn",
    "ProgressFn",
    "ReembedBackend",
    "ReembedReport",
    "ReembedState",
    "VectorKind",
    "embedder_for_model",
    "reembed",
    "reembed_backend",
]

_target = importlib.import_module("memlane.lifecycle.reembed")

warnings.warn(
    "memlane.reembed is deprecated; import from memlane.lifecycle.reembed instead",
    DeprecationWarning,
    stacklevel=2,
)


def __getattr__(name: str) -> Any:
    """Forward any other module-level name to :mod:`memlane.lifecycle.reembed`."""
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(_target, name)
