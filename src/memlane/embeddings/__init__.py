"""Embedders: the ``Embedder`` protocol and its implementations.

* :class:`LocalEmbedder` — default, offline all-MiniLM-L6-v2 (384 dims) on onnxruntime.
* :class:`OpenAIEmbedder` — any OpenAI-compatible endpoint (``openai`` extra, imported lazily).
* :mod:`memlane.embeddings.fake` — deterministic embedders for unit tests only.
"""

from memlane.embeddings.base import Embedder
from memlane.embeddings.local import LocalEmbedder
from memlane.embeddings.openai import OpenAIEmbedder

__all__ = ["Embedder", "LocalEmbedder", "OpenAIEmbedder"]
