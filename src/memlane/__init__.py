"""memlane: episodic memory for AI agents — exact, fast, offline by default.

Quick use::

    from memlane import EpisodicMemory

    with EpisodicMemory.open("memlane.db", tenant_id="acme", session_id="s1") as memory:
        memory.remember_episode("preference", "User prefers window seats", tags=["travel"], importance=7)
        for hit in memory.recall_episodes("where does the user like to sit?"):
            print(hit.episode.content, hit.breakdown)
"""

from typing import TYPE_CHECKING

from memlane.clock import Clock, FrozenClock, SystemClock
from memlane.config import MemoryConfig
from memlane.config.profile import PRESETS, RankingWeights
from memlane.embeddings import Embedder, LocalEmbedder, OpenAIEmbedder
from memlane.errors import (
    ConfigError,
    DuplicateEpisodeError,
    DuplicateSessionError,
    EmbedderUnavailableError,
    EmbeddingError,
    EmbeddingModelMismatchError,
    EpisodeNotFoundError,
    FactNotFoundError,
    MemlaneError,
    SchemaVersionError,
    StoreClosedError,
    StoreError,
    ValidationError,
)
from memlane.graph import Entity, Fact
from memlane.memory import EpisodeInput, EpisodicMemory
from memlane.models import Contradiction, Episode, RecallHit, Scope, ScoreBreakdown
from memlane.sessions import Message, SessionEpisode, SessionMemory, SessionSnippet, ToolCall
from memlane.stores import EpisodeFilter, Store, StoreStats
from memlane.stores.sqlite import SQLiteStore

if TYPE_CHECKING:
    from memlane.aio import AsyncEpisodicMemory, AsyncSessionMemory

__version__ = "0.1.0"

_LAZY = {"AsyncEpisodicMemory": "memlane.aio", "AsyncSessionMemory": "memlane.aio"}
"""Public names imported on first use, so ``import memlane`` does not import asyncio."""


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'memlane' has no attribute {name!r}")


__all__ = [
    "PRESETS",
    "AsyncEpisodicMemory",
    "AsyncSessionMemory",
    "Clock",
    "ConfigError",
    "Contradiction",
    "DuplicateEpisodeError",
    "DuplicateSessionError",
    "Embedder",
    "EmbedderUnavailableError",
    "EmbeddingError",
    "EmbeddingModelMismatchError",
    "Entity",
    "Episode",
    "EpisodeFilter",
    "EpisodeInput",
    "EpisodeNotFoundError",
    "EpisodicMemory",
    "Fact",
    "FactNotFoundError",
    "FrozenClock",
    "LocalEmbedder",
    "MemlaneError",
    "MemoryConfig",
    "Message",
    "OpenAIEmbedder",
    "RankingWeights",
    "RecallHit",
    "SQLiteStore",
    "SchemaVersionError",
    "Scope",
    "ScoreBreakdown",
    "SessionEpisode",
    "SessionMemory",
    "SessionSnippet",
    "Store",
    "StoreClosedError",
    "StoreError",
    "StoreStats",
    "SystemClock",
    "ToolCall",
    "ValidationError",
    "__version__",
]
