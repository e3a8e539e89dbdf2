"""The store side of re-embedding: the operations a backend implements and the job state it records.

The job itself (:func:`memlane.reembed.reembed`) lives above the stores; the stores only implement
:class:`ReembedBackend` (:mod:`memlane.stores.sqlite.reembed`, :mod:`memlane.stores.postgres.reembed`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np
from numpy.typing import NDArray

__all__ = ["KINDS", "EmbedFn", "ReembedBackend", "ReembedState", "VectorKind"]

EmbedFn = Callable[[Sequence[str]], NDArray[np.float32]]
"""Embeds ``n`` texts with the new model: float32 ``[n, dims]``, validated."""


VectorKind = Literal["episodes", "session_windows"]
"""The tables holding vectors of the bound model: episodes, and the turn windows of session episodes."""

KINDS: tuple[VectorKind, ...] = ("episodes", "session_windows")
"""Every kind, in the order the job embeds them."""


@dataclass(frozen=True, slots=True)
class ReembedState:
    """A migration in progress, as recorded in the store metadata.

    Attributes:
        model_id: The new model's id.
        dims: The new model's dimension.
        cursors: Per kind, the largest row key (``seq``) staged so far (0 before the first batch).
    """

    model_id: str
    dims: int
    cursors: Mapping[VectorKind, int]


class ReembedBackend(Protocol):
    """The store operations the job needs; one implementation per backend.

    See :class:`memlane.stores.sqlite.reembed.SQLiteReembed` and
    :class:`memlane.stores.postgres.reembed.PostgresReembed`. ``kind`` names the vector table
    (:data:`KINDS`); rows are ``(seq, text)`` with ``seq`` that table's row key.
    """

    def bound_model(self) -> tuple[str, int] | None:
        """``(model_id, dims)`` the store is bound to, read from the database (no cache)."""
        ...

    def state(self) -> ReembedState | None:
        """The migration in progress, or ``None``."""
        ...

    def start(self, model_id: str, dims: int) -> None:
        """Discard any staged vectors and record a new migration to ``model_id`` at cursor 0."""
        ...

    def abort(self) -> None:
        """Discard the migration in progress (staged vectors and cursors); recall is unaffected."""
        ...

    def count_after(self, kind: VectorKind, cursor: int) -> int:
        """Rows of ``kind`` with ``seq > cursor``."""
        ...

    def count_staged(self, kind: VectorKind) -> int:
        """Staged vectors of ``kind`` of the migration in progress."""
        ...

    def batch_after(self, kind: VectorKind, cursor: int, limit: int) -> list[tuple[int, str]]:
        """Up to ``limit`` rows of ``kind`` with ``seq > cursor``, by ``seq``."""
        ...

    def stage(
        self, kind: VectorKind, model_id: str, seqs: Sequence[int], vectors: NDArray[np.float32], cursor: int
    ) -> None:
        """Stage ``vectors`` (float32 ``[len(seqs), dims]``) and advance the cursor, in one transaction.

        Raises:
            StoreError: the migration to ``model_id`` is no longer in progress.
        """
        ...

    def count_missing(self, kind: VectorKind, model_id: str) -> int:
        """Rows of ``kind`` without a vector of ``model_id``."""
        ...

    def missing_after(
        self, kind: VectorKind, model_id: str, cursor: int, limit: int
    ) -> list[tuple[int, str]]:
        """Up to ``limit`` rows of ``kind`` after ``cursor`` without a vector of ``model_id``, by ``seq``."""
        ...

    def fill(
        self, kind: VectorKind, model_id: str, seqs: Sequence[int], vectors: NDArray[np.float32]
    ) -> None:
        """Write vectors of the bound model in place (one transaction), visible to every process."""
        ...

    def switch(self, model_id: str, dims: int, embed: EmbedFn) -> tuple[int, int]:
        """Stage the rows left after the cursors, move staged vectors in and rebind: one transaction.

        Returns:
            ``(moved, late)``: rows (of every kind) that got a vector of the new model, and
            how many of them were inserted after the last batch and embedded inside the
            transaction.

        Raises:
            StoreError: the migration is not in progress, or a row would be left without
                a vector of the new model (nothing is changed).
        """
        ...
