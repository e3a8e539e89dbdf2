"""The store side of re-embedding: the operations a backend implements and the job state it records.

The job itself (:func:`memlane.lifecycle.reembed.reembed`) lives above the stores; the stores only implement
:class:`ReembedBackend` (:mod:`memlane.stores.sqlite.reembed`, :mod:`memlane.stores.postgres.reembed`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np
from numpy.typing import NDArray

from memlane.errors import StoreError

__all__ = [
    "CURSOR_KEYS",
    "KINDS",
    "META_KEYS",
    "EmbedFn",
    "ReembedBackend",
    "ReembedState",
    "VectorKind",
    "check_switched",
    "stage_late_rows",
    "start_meta",
]

EmbedFn = Callable[[Sequence[str]], NDArray[np.float32]]
"""Embeds ``n`` texts with the new model: float32 ``[n, dims]``, validated."""


VectorKind = Literal["episodes", "session_windows"]
"""The tables holding vectors of the bound model: episodes, and the turn windows of session episodes."""

KINDS: tuple[VectorKind, ...] = ("episodes", "session_windows")
"""Every kind, in the order the job embeds them."""


CURSOR_KEYS: Mapping[VectorKind, str] = {
    "episodes": "reembed_cursor",
    "session_windows": "reembed_window_cursor",
}
"""The store metadata key holding each kind's cursor."""

META_KEYS: tuple[str, ...] = ("reembed_model", "reembed_dims", *CURSOR_KEYS.values())
"""Every store metadata key of a migration in progress."""


def start_meta(model_id: str, dims: int) -> list[tuple[str, str]]:
    """The store metadata rows that start a migration to ``model_id`` (every cursor at 0)."""
    return [
        ("reembed_model", model_id),
        ("reembed_dims", str(int(dims))),
        *((k, "0") for k in CURSOR_KEYS.values()),
    ]


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

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any]) -> ReembedState | None:
        """The state recorded in the store metadata rows ``meta`` (:data:`META_KEYS`), or ``None``."""
        if "reembed_model" not in meta:
            return None
        cursors = {kind: int(meta.get(key, 0)) for kind, key in CURSOR_KEYS.items()}
        return cls(str(meta["reembed_model"]), int(meta["reembed_dims"]), cursors)

    @staticmethod
    def require(state: ReembedState | None, model_id: str, location: str) -> ReembedState:
        """``state``, if it is the migration to ``model_id``.

        Raises:
            StoreError: the migration of the store at ``location`` to ``model_id`` is no longer
                in progress (finished or replaced by another job).
        """
        if state is None or state.model_id != model_id:
            raise StoreError(
                f"the migration of {location} to {model_id!r} is no longer in progress "
                "(finished or replaced by another job)"
            )
        return state


def stage_late_rows(
    rows: Sequence[Sequence[Any]], embed: EmbedFn, stage: Callable[[list[int], NDArray[np.float32]], None]
) -> int:
    """Embed the ``(seq, text)`` rows written after the last staged batch and stage them; return how many."""
    if rows:
        stage([int(r[0]) for r in rows], embed([str(r[1]) for r in rows]))
    return len(rows)


def check_switched(kind: VectorKind, left: int, location: str, model_id: str) -> None:
    """Raise if ``left`` rows of ``kind`` would have no vector of ``model_id`` after the switch.

    Raises:
        StoreError: some would (the switch rolls back).
    """
    if left:
        raise StoreError(
            f"{left} rows of {kind} in {location} would have no vector of "
            f"{model_id!r}; nothing was switched (rerun the job)"
        )


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
