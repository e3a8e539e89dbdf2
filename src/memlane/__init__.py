"""memlane: episodic memory for AI agents — exact, fast, offline by default.

Quick use::

    from memlane import EpisodicMemory

    with EpisodicMemory.open("memlane.db", tenant_id="acme", session_id="s1") as memory:
        memory.remember_episode("preference", "User prefers window seats", tags=["travel"], importance=7)
        for hit in memory.recall_episodes("where does the user like to sit?"):
            print(hit.episode.content, hit.breakdown)
"""

from typing import TYPE_CHECKING

from memlane.lazy import lazy_exports

if TYPE_CHECKING:
    from memlane.aio import AsyncEpisodicMemory, AsyncSessionMemory
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

__version__ = "0.1.0"

_HOMES: dict[str, tuple[str, ...]] = {
    "memlane.aio": ("AsyncEpisodicMemory", "AsyncSessionMemory"),
    "memlane.clock": ("Clock", "FrozenClock", "SystemClock"),
    "memlane.config": ("MemoryConfig",),
    "memlane.config.profile": ("PRESETS", "RankingWeights"),
    "memlane.embeddings": ("Embedder", "LocalEmbedder", "OpenAIEmbedder"),
    "memlane.errors": (
        "ConfigError",
        "DuplicateEpisodeError",
        "DuplicateSessionError",
        "EmbedderUnavailableError",
        "EmbeddingError",
        "EmbeddingModelMismatchError",
        "EpisodeNotFoundError",
        "FactNotFoundError",
        "MemlaneError",
        "SchemaVersionError",
        "StoreClosedError",
        "StoreError",
        "ValidationError",
    ),
    "memlane.episode_input": ("EpisodeInput",),
    "memlane.graph": ("Entity", "Fact"),
    "memlane.memory": ("EpisodicMemory",),
    "memlane.models": ("Contradiction", "Episode", "RecallHit", "Scope", "ScoreBreakdown"),
    "memlane.sessions": ("Message", "SessionEpisode", "SessionMemory", "SessionSnippet", "ToolCall"),
    "memlane.stores": ("EpisodeFilter", "Store", "StoreStats"),
    "memlane.stores.sqlite": ("SQLiteStore",),
}
__getattr__, __dir__ = lazy_exports(__name__, globals(), _HOMES)
"""Every public name is imported from its home on first use (PEP 562), so ``import memlane`` (and
every ``memlane.<module>`` import, which runs this file first) costs nothing: ``memlane --help``
and a structured lookup never import numpy, onnxruntime or the recall pipeline they do not use."""

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
