"""The SQLite store's vector search: an in-memory index, its sidecar file and the ANN index.

* :class:`~memlane.stores.vector_index.VectorCache` keeps the episodes' vectors and filter
  columns in memory, appending rows by ``seq`` and rebuilding when ``delete_generation``
  changes (a deletion, supersession, archiving or re-embedding switch, by any process).
* Cold start: the index is saved beside the database as ``<db>.vectors``
  (:mod:`memlane.stores.sidecar`; vectors memory-mapped, no per-row Python work on open). It is
  trusted only if its header matches the store's id (``store_meta.store_id``, made on first
  save), model, dimension and ``delete_generation``; rows with ``seq`` above its ``max_seq``
  are then read from SQLite. A stale, missing or corrupt file is ignored and rewritten once a
  refresh has read at least ``sidecar_min_rows`` rows from SQLite.
* ANN (:mod:`memlane.stores.ann`): when the filtered set has more than ``ann_threshold`` rows,
  an IVF-Flat index over the rows up to its ``built_max_seq`` (saved as ``<db>.ivf``, trained on
  first need) gives the top-N, filtered by a bitmap of the passing row keys; rows added since
  are scanned exactly and merged, and cosines are recomputed exactly. It falls back to exact
  search when the filter keeps < 5 % of the indexed rows or fewer than N rows come back.
"""

from __future__ import annotations

import logging
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memlane.stores import ann
from memlane.stores.base import VectorCandidates
from memlane.stores.sidecar import file_lock, read_index, write_index
from memlane.stores.sqlite.base import read_generation, vector_batches
from memlane.stores.vector_index import OPEN_END, IndexRows, VectorCache, VectorIndex

__all__ = ["SIDECAR_MIN_ROWS", "SQLiteVectors", "index_rows"]

logger = logging.getLogger(__name__)

GENERATION = "delete_generation"
SIDECAR_MIN_ROWS = 10_000
"""A refresh that read at least this many rows from SQLite rewrites the sidecar."""

_FORMAT = 1


def index_rows(conn: sqlite3.Connection, after: int) -> Iterator[IndexRows]:
    """The vector index's rows of the episodes with vectors after row key ``after``, in batches."""
    cursor = conn.execute(
        "SELECT seq, tenant_id, session_id, event_type, created_at_us, importance, embedding, "
        "valid_from_us, valid_until_us, recorded_at_us, invalidated_at_us, archived_at_us "
        "FROM episodes WHERE seq > ? AND embedding IS NOT NULL ORDER BY seq",
        (after,),
    )
    for batch, vectors in vector_batches(cursor, 6):
        yield IndexRows(
            seqs=[r[0] for r in batch],
            tenant_ids=[r[1] for r in batch],
            session_ids=[r[2] for r in batch],
            event_types=[r[3] for r in batch],
            created_us=[r[4] for r in batch],
            importance=[np.nan if r[5] is None else r[5] for r in batch],
            vectors=vectors,
            valid_from_us=[r[7] for r in batch],
            valid_until_us=[OPEN_END if r[8] is None else r[8] for r in batch],
            recorded_us=[r[9] for r in batch],
            invalidated_us=[OPEN_END if r[10] is None else r[10] for r in batch],
            archived_us=[OPEN_END if r[11] is None else r[11] for r in batch],
        )


def _meta(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM store_meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


class SQLiteVectors:
    """Vector search of one SQLite store (the caller holds :attr:`cache` ``.lock``).

    Args:
        path: The database file, or ``None`` for ``":memory:"`` (nothing saved beside it).
        sidecar: Save/load the ``<db>.vectors`` cold-start file and the ``<db>.ivf`` ANN file.
        sidecar_min_rows: Rows read from SQLite in one refresh that trigger a sidecar write.
        ann_threshold: Filtered sets above this many rows use the ANN index; ``None`` = always exact.
    """

    def __init__(
        self,
        path: str | None,
        *,
        sidecar: bool = True,
        sidecar_min_rows: int = SIDECAR_MIN_ROWS,
        ann_threshold: int | None = ann.ANN_THRESHOLD,
    ) -> None:
        self.cache = VectorCache("vectors")
        self._sidecar = None if path is None or not sidecar else Path(path + ".vectors")
        self._ivf = None if path is None or not sidecar else Path(path + ".ivf")
        self._min_rows = max(1, int(sidecar_min_rows))
        self.ann_threshold = ann_threshold
        self._ann: ann.AnnIndex | None = None
        self.ann_searches = 0
        """Searches served by the ANN index (a structural probe for tests)."""

    # -- identity --------------------------------------------------------------------------

    def _store_id(self, conn: sqlite3.Connection, create: bool) -> str | None:
        found = _meta(conn, "store_id")
        if found is None and create:
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute(
                    "INSERT OR IGNORE INTO store_meta (key, value) VALUES ('store_id', ?)",
                    (uuid.uuid4().hex,),
                )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            found = _meta(conn, "store_id")
        return found

    def _identity(self, conn: sqlite3.Connection, dims: int, create: bool) -> dict[str, Any] | None:
        store_id = self._store_id(conn, create)
        if store_id is None:
            return None
        return {
            "format": _FORMAT,
            "store_id": store_id,
            "model": _meta(conn, "embedding_model"),
            "dims": dims,
        }

    # -- refresh ---------------------------------------------------------------------------

    def refresh(self, conn: sqlite3.Connection, dims: int) -> VectorIndex:
        """Bring the in-memory index up to date (sidecar first, then SQLite rows after it)."""
        generation = read_generation(conn, GENERATION)
        max_seq = int(conn.execute("SELECT coalesce(max(seq), 0) FROM episodes").fetchone()[0])
        load = None
        if self._sidecar is not None:
            sidecar = self._sidecar

            def load() -> VectorIndex | None:
                ident = self._identity(conn, dims, create=False)
                if ident is None or not sidecar.exists():
                    return None
                return read_index(sidecar, {**ident, "generation": generation})

        index = self.cache.refresh(dims, generation, max_seq, lambda after: index_rows(conn, after), load)
        if self._sidecar is not None and self.cache.rows_unsaved >= self._min_rows:
            self._save(conn, index, dims, generation)
        return index

    def _save(self, conn: sqlite3.Connection, index: VectorIndex, dims: int, generation: object) -> None:
        assert self._sidecar is not None
        try:
            ident = self._identity(conn, dims, create=True)
            assert ident is not None
            with file_lock(Path(str(self._sidecar) + ".lock")) as mine:
                if mine:
                    write_index(self._sidecar, index, {**ident, "generation": generation})
            self.cache.mark_saved()
        except (OSError, sqlite3.Error) as exc:  # the DB is the source of truth: keep going
            logger.warning("vector sidecar %s not written: %s", self._sidecar, exc)
            self.cache.mark_saved()

    # -- search ----------------------------------------------------------------------------

    def search(
        self,
        conn: sqlite3.Connection,
        index: VectorIndex,
        mask: NDArray[np.bool_],
        query: NDArray[np.float32],
        top_n: int,
    ) -> VectorCandidates:
        """Candidates of the rows set in ``mask``: exact below the threshold, else ANN (see module doc)."""
        count = int(mask.sum())
        if self.ann_threshold is None or count <= self.ann_threshold or count <= top_n or not ann.available():
            return index.exact(mask, query)
        found = self._ann_search(conn, index, mask, query, top_n)
        return index.exact(mask, query) if found is None else found

    def _ann_search(
        self,
        conn: sqlite3.Connection,
        index: VectorIndex,
        mask: NDArray[np.bool_],
        query: NDArray[np.float32],
        top_n: int,
    ) -> VectorCandidates | None:
        ann_index = self._ann_index(conn, index)
        if ann_index is None:
            return None
        seqs = index.seqs
        cut = int(np.searchsorted(seqs, ann_index.built_max_seq, side="right"))
        if cut > ann_index.rows:  # vectors filled in place below built_max_seq: not in the index
            self._ann = ann_index = self.build_ann(index, ann_index.meta["expect"])
            if ann_index is None:
                return None
            cut = len(index)
        inside = np.flatnonzero(mask[:cut])
        share = len(inside) / max(1, ann_index.rows)
        if share < ann.MIN_SELECTIVITY:
            return None
        allowed = np.zeros(ann_index.built_max_seq + 1, dtype=bool)
        allowed[seqs[inside]] = True
        found = ann_index.search(query, top_n, allowed, share)
        if len(found) < min(top_n, len(inside)):
            return None  # fewer than N survived the filter: exact instead
        rows = np.unique(np.concatenate([np.searchsorted(seqs, found), cut + np.flatnonzero(mask[cut:])]))
        self.ann_searches += 1
        return index.candidates(rows, index.cosine(query, rows), exhaustive=False)

    def _ann_index(self, conn: sqlite3.Connection, index: VectorIndex) -> ann.AnnIndex | None:
        """The ANN index: kept, loaded from ``<db>.ivf``, or (re)built when missing or too far behind."""
        ident = self._identity(conn, index.dims, create=self._ivf is not None)
        expect = {**(ident or {}), "kind": "ivf-flat"}
        current = self._ann
        if current is not None and current.meta["expect"] != expect:
            current = None
        if current is None and self._ivf is not None and self._ivf.exists():
            current = ann.AnnIndex.load(self._ivf, expect)
        behind = (
            0
            if current is None
            else len(index) - int(np.searchsorted(index.seqs, current.built_max_seq, "right"))
        )
        if current is None or behind > max(self.ann_threshold or 0, current.rows // 5):
            current = self.build_ann(index, expect)
        self._ann = current
        return current

    def build_ann(self, index: VectorIndex, expect: dict[str, Any]) -> ann.AnnIndex | None:
        """Train and fill the ANN index over every row of ``index`` and save it (if the store has a file)."""
        if len(index) == 0:
            return None
        built = ann.AnnIndex.build(index.seqs.copy(), index.vector_parts(), expect)
        if self._ivf is not None:
            try:
                with file_lock(Path(str(self._ivf) + ".lock")) as mine:
                    if mine:
                        built.save(self._ivf)
            except OSError as exc:
                logger.warning("ANN index %s not written: %s", self._ivf, exc)
        return built

    def clear(self) -> None:
        """Drop the in-memory state (on close)."""
        self.cache.clear()
        self._ann = None
