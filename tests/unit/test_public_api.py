"""Pins the curated public API: changing it must be a deliberate edit of this list."""

from __future__ import annotations

import memlane

EXPECTED = {
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
    "Episode",
    "EpisodeFilter",
    "EpisodeInput",
    "EpisodeNotFoundError",
    "Entity",
    "Fact",
    "FactNotFoundError",
    "EpisodicMemory",
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
    "ScoreBreakdown",
    "SessionEpisode",
    "SessionMemory",
    "SessionSnippet",
    "Scope",
    "Store",
    "StoreClosedError",
    "StoreError",
    "StoreStats",
    "SystemClock",
    "ToolCall",
    "ValidationError",
    "__version__",
}


def test_all_is_pinned() -> None:
    assert set(memlane.__all__) == EXPECTED
    for name in memlane.__all__:
        assert hasattr(memlane, name), name


def test_errors_refine_builtins() -> None:
    assert issubclass(memlane.ValidationError, ValueError)
    assert issubclass(memlane.ConfigError, ValueError)
    assert issubclass(memlane.DuplicateEpisodeError, KeyError)
    assert issubclass(memlane.StoreError, RuntimeError)
    assert issubclass(memlane.EmbeddingModelMismatchError, ValueError)
    for name in memlane.__all__:
        obj = getattr(memlane, name)
        if isinstance(obj, type) and issubclass(obj, Exception):
            assert issubclass(obj, memlane.MemlaneError)


def test_public_objects_have_docstrings() -> None:
    for name in memlane.__all__:
        obj = getattr(memlane, name)
        if callable(obj):
            assert obj.__doc__ and len(obj.__doc__.strip()) > 20, name
