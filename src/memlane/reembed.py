"""Deprecated: moved to :mod:`memlane.lifecycle.reembed`; this alias is removed in a later release."""

from __future__ import annotations

import warnings

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

warnings.warn(
    "memlane.reembed is deprecated; import from memlane.lifecycle.reembed instead",
    DeprecationWarning,
    stacklevel=2,
)
