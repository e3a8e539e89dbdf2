"""Deprecated: moved to :mod:`memlane.config.file`; this alias is removed in a later release."""

from __future__ import annotations

import importlib
import warnings
from typing import Any

from memlane.config.file import (
    DEFAULT_MAX_LIMIT,
    DEFAULT_MAX_REQUEST_BYTES,
    LOCAL_MODEL_NAMES,
    ApiKey,
    EpisodicSettings,
    MemlaneConfig,
    ServerSettings,
    StoreSettings,
    build_embedder,
    build_store,
    hash_api_key,
    load_config,
)

__all__ = [
    "DEFAULT_MAX_LIMIT",
    "DEFAULT_MAX_REQUEST_BYTES",
    "LOCAL_MODEL_NAMES",
    "ApiKey",
    "EpisodicSettings",
    "MemlaneConfig",
    "ServerSettings",
    "StoreSettings",
    "build_embedder",
    "build_store",
    "hash_api_key",
    "load_config",
]

_target = importlib.import_module("memlane.config.file")

warnings.warn(
    "memlane.config_file is deprecated; import from memlane.config.file instead",
    DeprecationWarning,
    stacklevel=2,
)


def __getattr__(name: str) -> Any:
    """Forward any other module-level name to :mod:`memlane.config.file`."""
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(_target, name)
