"""Embeddings from any OpenAI-compatible ``/v1/embeddings`` endpoint (``openai`` extra).

Works with OpenAI itself (default model ``text-embedding-3-small``, 1536 dims) and with
local servers that speak the same API (set ``base_url``). The ``openai`` package is
imported lazily, so memlane does not need it unless this embedder is used.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memlane.config.file import OPENAI_MODEL_DIMS, openai_dims
from memlane.embeddings.base import check_vectors, l2_normalize
from memlane.errors import EmbedderUnavailableError, EmbeddingError

__all__ = ["OpenAIEmbedder"]


class OpenAIEmbedder:
    """Remote embeddings through the official ``openai`` SDK.

    Args:
        model: Embedding model name (default ``text-embedding-3-small``).
        dims: Output dimension; required for models not in the known table
            (:data:`memlane.config.file.OPENAI_MODEL_DIMS`: ``text-embedding-3-*``, ``ada-002``).
            For ``text-embedding-3-*`` a smaller value is passed to the API's ``dimensions`` parameter.
        api_key: API key; ``None`` lets the SDK read ``OPENAI_API_KEY``.
        base_url: Endpoint of an OpenAI-compatible server (e.g. ``http://127.0.0.1:8080/v1``);
            ``None`` lets the SDK read ``OPENAI_BASE_URL`` or use OpenAI.
        batch_size: Texts per request, 1..2048 (default 256).
        client: An already-built ``openai.OpenAI`` client (for tests or custom transports).

    Raises:
        ValueError: unknown ``dims`` for a model not in the table, or a bad ``batch_size``.

    The vectors are re-normalised to unit L2 norm. ``model_id`` is ``"openai:<model>@<dims>"``.
    """

    def __init__(
        self,
        model: str = "text-embedding-3-small",
        *,
        dims: int | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        batch_size: int = 256,
        client: Any = None,
    ) -> None:
        dims = openai_dims(model, dims)
        if not 1 <= batch_size <= 2048:
            raise ValueError("batch_size must be in 1..2048")
        self._model = model
        self._dims = dims
        self._api_key = api_key
        self._base_url = base_url
        self._batch_size = batch_size
        self._client = client

    @property
    def model_id(self) -> str:
        """``"openai:<model>@<dims>"``."""
        return f"openai:{self._model}@{self._dims}"

    @property
    def dims(self) -> int:
        """Output dimension."""
        return self._dims

    def _get_client(self) -> Any:
        if self._client is None:
            try:
                import openai
            except ImportError as exc:
                raise EmbedderUnavailableError(
                    "the openai package is needed for OpenAIEmbedder: pip install 'memlane[openai]'"
                ) from exc
            try:
                self._client = openai.OpenAI(api_key=self._api_key, base_url=self._base_url)
            except openai.OpenAIError as exc:  # raised when no API key is configured
                raise EmbedderUnavailableError(
                    f"cannot create the OpenAI client ({exc}); set OPENAI_API_KEY or pass api_key="
                ) from exc
        return self._client

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed ``n`` texts remotely.

        Returns:
            float32 array ``[n, dims]``, rows L2-normalised.

        Raises:
            EmbedderUnavailableError: ``openai`` not installed or no API key.
            EmbeddingError: the request failed or returned the wrong shape.
        """
        if len(texts) == 0:
            return np.zeros((0, self._dims), dtype=np.float32)
        client = self._get_client()
        extra: dict[str, Any] = {}
        if self._model.startswith("text-embedding-3") and self._dims != OPENAI_MODEL_DIMS.get(self._model):
            extra["dimensions"] = self._dims
        rows: list[list[float]] = []
        for start in range(0, len(texts), self._batch_size):
            batch = list(texts[start : start + self._batch_size])
            try:
                response = client.embeddings.create(model=self._model, input=batch, **extra)
            except Exception as exc:  # the SDK's errors all become one typed error here
                raise EmbeddingError(f"embedding request to {self._model!r} failed: {exc}") from exc
            rows.extend(item.embedding for item in sorted(response.data, key=lambda d: d.index))
        return l2_normalize(
            check_vectors(np.asarray(rows, dtype=np.float32), len(texts), self._dims, self.model_id)
        )
