"""The ``Embedder`` protocol: one batch method plus the model's identity."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from memlane.errors import EmbeddingError

__all__ = ["Embedder", "check_vectors", "l2_normalize"]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors.

    Attributes:
        model_id: Stable identifier of the model *and* its preprocessing (stored with
            every vector; a store refuses vectors from another ``model_id``).
        dims: Vector dimension (e.g. 384 for all-MiniLM-L6-v2).
    """

    @property
    def model_id(self) -> str:
        """Stable identifier of the model that produces the vectors."""
        ...

    @property
    def dims(self) -> int:
        """Dimension of every vector (number of float32 components)."""
        ...

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed a batch of texts.

        Args:
            texts: ``n`` strings (``n`` may be 0).

        Returns:
            float32 array of shape ``[n, dims]``, each row L2-normalised (norm 1).

        Raises:
            EmbeddingError: the model failed; EmbedderUnavailableError if it cannot run here.
        """
        ...


def l2_normalize(matrix: NDArray[np.floating]) -> NDArray[np.float32]:
    """Return ``matrix`` (shape ``[n, d]``) with each row scaled to unit L2 norm, as float32.

    All-zero rows stay zero (their cosine with anything is 0).
    """
    m = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return (m / np.where(norms > 0, norms, 1.0)).astype(np.float32, copy=False)


def check_vectors(vectors: NDArray[np.floating], n: int, dims: int, model_id: str) -> NDArray[np.float32]:
    """Validate an embedder's output: shape ``[n, dims]``, finite values; return float32.

    Raises:
        EmbeddingError: wrong shape or non-finite values.
    """
    arr = np.asarray(vectors, dtype=np.float32)
    if arr.shape != (n, dims):
        raise EmbeddingError(f"embedder {model_id!r} returned shape {arr.shape}, expected ({n}, {dims})")
    if not np.all(np.isfinite(arr)):
        raise EmbeddingError(f"embedder {model_id!r} returned non-finite values")
    return arr
