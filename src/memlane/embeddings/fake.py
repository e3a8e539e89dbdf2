"""A deterministic, offline embedder for unit tests of ranking and filters only.

Not a language model: texts that share words get similar vectors (a hashed
bag-of-words), which is enough to test ranking logic without the real model.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from memlane.embeddings.base import l2_normalize
from memlane.errors import EmbeddingError

__all__ = ["FailingEmbedder", "HashingEmbedder"]

_WORD = re.compile(r"\w+")


class HashingEmbedder:
    """Hashed bag-of-words vectors (feature hashing with a sign bit), L2-normalised.

    Args:
        dims: Vector dimension, >= 8 (default 64).
        model_id: Identifier recorded with the vectors (default ``"hashing-<dims>"``).

    Deterministic across processes and platforms (uses BLAKE2b, not ``hash()``).
    ``calls`` counts how many times :meth:`embed` was invoked.
    """

    def __init__(self, dims: int = 64, model_id: str | None = None) -> None:
        if dims < 8:
            raise ValueError("dims must be >= 8")
        self._dims = dims
        self._model_id = model_id or f"hashing-{dims}"
        self.calls = 0

    @property
    def model_id(self) -> str:
        """Identifier of this fake model."""
        return self._model_id

    @property
    def dims(self) -> int:
        """Vector dimension."""
        return self._dims

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Return ``[len(texts), dims]`` float32 unit vectors (zero rows for texts without words)."""
        self.calls += 1
        out = np.zeros((len(texts), self._dims), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
                h = int.from_bytes(digest, "little")
                out[row, h % self._dims] += 1.0 if (h >> 63) & 1 else -1.0
        return l2_normalize(out)


class FailingEmbedder(HashingEmbedder):
    """An embedder that raises on every call; proves a code path never embeds.

    Args:
        dims: Reported dimension (default 64).
        model_id: Reported model id (default ``"hashing-64"`` so it can open a store
            written by :class:`HashingEmbedder` with the default arguments).
    """

    def __init__(self, dims: int = 64, model_id: str = "hashing-64") -> None:
        super().__init__(dims, model_id)

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Always raise.

        Raises:
            EmbeddingError: on every call.
        """
        raise EmbeddingError("FailingEmbedder.embed was called")
