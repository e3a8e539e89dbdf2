"""Fixtures of the async API tests: the real bundled embedder, loaded once."""

from __future__ import annotations

import pytest

from memlane import LocalEmbedder


@pytest.fixture(scope="module")
def local_embedder() -> LocalEmbedder:
    """The real bundled model (all-MiniLM-L6-v2, int8 ONNX), shared by a module's tests."""
    return LocalEmbedder()
