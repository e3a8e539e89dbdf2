"""Embedding model migration: re-embed every vector of a store with another model, resumably.

``memlane reembed --model NAME`` (and :func:`reembed`) moves a store from the model it is
bound to (the *old* model) to another one (the *new* model) without ever leaving recall
without vectors. Two tables hold vectors of the bound model (:data:`KINDS`): episodes, and
the turn windows of session episodes (:mod:`memlane.sessions`); both are migrated.

1. **Staging.** Rows are read in ``seq`` order (each table's insertion key, which only
   grows), ``batch_size`` at a time; each batch is embedded with the new model and written
   to a staging table keyed by the row (``reembed_staging`` / ``reembed_window_staging`` in
   SQLite, ``memlane_reembed_staging`` / ``memlane_reembed_window_staging`` in PostgreSQL),
   **in the same transaction** as that table's progress cursor (the last staged ``seq``) and
   the job's target ``(model_id, dims)`` in the store metadata. Nothing in ``episodes``
   changes meanwhile: recall keeps using the old vectors with the old model (and keywords
   for episodes without one).
2. **Resuming.** After a crash (or Ctrl-C, or an embedder outage) rerunning the same
   command continues after the last committed batch: every row is staged exactly once
   (the staging key is the row key). Rows that writers insert meanwhile (with the old model)
   have larger ``seq`` values, so the job picks them up before switching. A run with a
   *different* target model discards the other target's staged vectors and starts over.
3. **Switch.** When no row is left after the cursors, one transaction takes the write
   lock, embeds any row inserted since the last batch, moves every staged vector into
   place (each with its ``embedding_model``: the model id is recorded per vector), checks
   that every row now has a vector of the new model, rebinds the store to the new
   ``(model_id, dims)`` and clears the staging tables and cursors. SQLite also bumps
   ``delete_generation`` and ``session_delete_generation`` so every process rebuilds its
   in-memory vector indexes; PostgreSQL retypes the episode column ``vector(dims)`` and
   rebuilds the HNSW index inside the same transaction (readers wait for it: about 25 s per
   100,000 rows of 384 dims). Either everything is switched or nothing is.

After the switch, processes still running with the old embedder get
:class:`~memlane.errors.EmbeddingModelMismatchError` when they open the store (a PostgreSQL
process that had already bound it gets a :class:`~memlane.errors.StoreError` from the
retyped column): restart them with the new model (``episodic_memory.embedding_model``).
Rows such a process wrote after the switch (same dimension, old model) are found and
fixed by running the job with the *current* model (below).

**Same model** (or a store not bound yet): only episodes without a vector (stored during an
embedder outage, ``embedding_fallback``) or with a vector of another model are embedded,
in place, batch by batch (each batch is its own transaction, so the job is resumable
without any cursor).

Run one job per store at a time; a second job for the same target notices when the first
has switched and stops with a :class:`~memlane.errors.StoreError`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from memlane.config import DEFAULT_REEMBED_BATCH_SIZE
from memlane.embeddings.base import Embedder, check_vectors
from memlane.errors import StoreError, ValidationError
from memlane.stores.base import Store
from memlane.stores.reembed_base import KINDS, EmbedFn, ReembedBackend, ReembedState, VectorKind

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "KINDS",
    "EmbedFn",
    "ProgressFn",
    "ReembedBackend",
    "ReembedReport",
    "ReembedState",
    "VectorKind",
    "embedder_for_model",
    "reembed",
    "reembed_backend",
]

logger = logging.getLogger(__name__)

DEFAULT_BATCH_SIZE = DEFAULT_REEMBED_BATCH_SIZE
"""Episodes embedded and committed per batch (:data:`memlane.config.DEFAULT_REEMBED_BATCH_SIZE`)."""

ProgressFn = Callable[[int, int], None]
"""``progress(done, total)``: rows (episodes and session windows) embedded so far, including
an interrupted run's, and the rows the job covers; called once before the first batch and
after every batch."""


@dataclass(frozen=True, slots=True)
class ReembedReport:
    """What :func:`reembed` did (or, with ``dry_run``, would do).

    Attributes:
        mode: ``"migrate"`` (another model: staging, then switch) or ``"fill"`` (the bound
            model, or an unbound store: only rows without a vector of it, in place).
        model_id: The new (target) model.
        dims: Its dimension.
        previous_model: ``(model_id, dims)`` the store was bound to before, or ``None``.
        total: Rows (episodes and session windows) the job covers (``migrate``: every row;
            ``fill``: those missing a vector of the model).
        embedded: Rows embedded by this run (0 for a dry run).
        resumed_from: Rows already staged by an earlier, interrupted run of the same
            migration (0 otherwise).
        switched: Whether the store was rebound to the new model by this run.
        dry_run: Whether nothing was written.
    """

    mode: Literal["migrate", "fill"]
    model_id: str
    dims: int
    previous_model: tuple[str, int] | None
    total: int
    embedded: int
    resumed_from: int
    switched: bool
    dry_run: bool


def reembed_backend(store: Store) -> ReembedBackend:
    """Return the re-embedding operations of ``store`` (its ``reembed_backend`` attribute).

    Raises:
        StoreError: the store does not support re-embedding.
    """
    backend: ReembedBackend | None = getattr(store, "reembed_backend", None)
    if backend is None:
        raise StoreError(f"{store!r} does not support re-embedding")
    return backend


def embedder_for_model(
    name: str, *, provider: str | None = None, dims: int | None = None, base_url: str | None = None
) -> Embedder:
    """Build an embedder from a model name, exactly as the YAML ``episodic_memory:`` section would.

    Args:
        name: ``all-MiniLM-L6-v2`` (bundled), ``text-embedding-3-small`` or ``openai:NAME``
            (``openai`` extra), or ``hashing-N`` (the deterministic fake embedder with ``N``
            dims; tests only).
        provider: ``local`` | ``openai`` | ``hashing``; default inferred from ``name``.
        dims: Vector dimension (``openai``: optional for known models; ``hashing``).
        base_url: OpenAI-compatible endpoint (``openai`` only).

    Raises:
        ConfigError: unknown model, or an invalid provider/dimension combination; the
            message names the ``episodic_memory.*`` key.
    """
    from memlane.assembly import build_embedder
    from memlane.config.file import load_config

    section: dict[str, object] = {"embedding_model": name}
    if provider is None and name.startswith("hashing-") and name.removeprefix("hashing-").isdigit():
        provider = "hashing"
        dims = dims or int(name.removeprefix("hashing-"))
    for key, value in (
        ("embedding_provider", provider),
        ("embedding_dims", dims),
        ("embedding_base_url", base_url),
    ):
        if value is not None:
            section[key] = value
    return build_embedder(load_config({"episodic_memory": section}).episodic)


def reembed(
    store: Store,
    embedder: Embedder,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: ProgressFn | None = None,
    dry_run: bool = False,
) -> ReembedReport:
    """Re-embed the episodes of ``store`` with ``embedder`` (see the module docstring).

    Args:
        store: An open store (SQLite or PostgreSQL), possibly in use by other processes.
        embedder: The new model (or the bound one, to fill in missing vectors).
        batch_size: Episodes per embedder call and per committed batch, >= 1.
        progress: Called as ``progress(done, total)`` (see :data:`ProgressFn`). An exception
            it raises stops the job like a crash would; rerunning resumes.
        dry_run: Only count what would be embedded; write nothing.

    Returns:
        A :class:`ReembedReport`.

    Raises:
        ValidationError: ``batch_size`` < 1.
        EmbeddingError: the embedder failed (committed batches are kept; rerun to resume).
        StoreError: the store failed or does not support re-embedding.
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValidationError(f"batch_size must be an integer >= 1, got {batch_size!r}")
    backend = reembed_backend(store)
    model_id, dims = embedder.model_id, embedder.dims

    def embed(texts: Sequence[str]) -> NDArray[np.float32]:
        return check_vectors(embedder.embed(list(texts)), len(texts), dims, model_id)

    report = progress or (lambda done, total: None)
    bound = backend.bound_model()
    if bound is None or bound == (model_id, dims):
        if bound is None and not dry_run:
            store.bind_embedding_model(model_id, dims)  # an empty or unbound store takes the model
        return _fill(backend, model_id, dims, bound, embed, batch_size, report, dry_run)
    return _migrate(backend, model_id, dims, bound, embed, batch_size, report, dry_run)


def _fill(
    backend: ReembedBackend,
    model_id: str,
    dims: int,
    bound: tuple[str, int] | None,
    embed: EmbedFn,
    batch_size: int,
    progress: ProgressFn,
    dry_run: bool,
) -> ReembedReport:
    total = sum(backend.count_missing(kind, model_id) for kind in KINDS)
    done = 0
    if not dry_run:
        progress(0, total)
        for kind in KINDS:
            cursor = 0
            while rows := backend.missing_after(kind, model_id, cursor, batch_size):
                backend.fill(kind, model_id, [seq for seq, _ in rows], embed([text for _, text in rows]))
                cursor = rows[-1][0]
                done += len(rows)
                total = max(total, done)
                progress(done, total)
        logger.info("filled in %d missing vectors of %s", done, model_id)
    return ReembedReport(
        mode="fill",
        model_id=model_id,
        dims=dims,
        previous_model=bound,
        total=total,
        embedded=done,
        resumed_from=0,
        switched=False,
        dry_run=dry_run,
    )


def _migrate(
    backend: ReembedBackend,
    model_id: str,
    dims: int,
    bound: tuple[str, int],
    embed: EmbedFn,
    batch_size: int,
    progress: ProgressFn,
    dry_run: bool,
) -> ReembedReport:
    state = backend.state()
    resuming = state is not None and (state.model_id, state.dims) == (model_id, dims)
    cursors: dict[VectorKind, int] = {kind: 0 for kind in KINDS}
    if resuming and state is not None:
        cursors.update(state.cursors)
    staged = sum(backend.count_staged(kind) for kind in KINDS) if resuming else 0
    total = staged + sum(backend.count_after(kind, cursors[kind]) for kind in KINDS)
    if dry_run:
        return ReembedReport(
            mode="migrate",
            model_id=model_id,
            dims=dims,
            previous_model=bound,
            total=total,
            embedded=0,
            resumed_from=staged,
            switched=False,
            dry_run=True,
        )
    if not resuming:
        if state is not None:
            logger.warning(
                "discarding the vectors staged for %s (%d dims): migrating to %s instead",
                state.model_id,
                state.dims,
                model_id,
            )
        backend.start(model_id, dims)
    else:
        logger.info("resuming the migration to %s after %d staged rows", model_id, staged)
    done = staged
    progress(done, total)
    for kind in KINDS:
        cursor = cursors[kind]
        while rows := backend.batch_after(kind, cursor, batch_size):
            vectors = embed([text for _, text in rows])
            cursor = rows[-1][0]
            backend.stage(kind, model_id, [seq for seq, _ in rows], vectors, cursor)
            done += len(rows)
            total = max(total, done)
            progress(done, total)
    moved, late = backend.switch(model_id, dims, embed)
    logger.info("switched to %s (%d dims): %d rows carry its vectors", model_id, dims, moved)
    if late:
        progress(done + late, max(total, done + late))
    return ReembedReport(
        mode="migrate",
        model_id=model_id,
        dims=dims,
        previous_model=bound,
        total=max(total, done + late),
        embedded=done - staged + late,
        resumed_from=staged,
        switched=True,
        dry_run=False,
    )
