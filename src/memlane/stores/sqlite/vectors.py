"""The SQLite store's vector search: an in-memory index, its sidecar file and the ANN index.

* :class:`~memlane.stores.sqlite.vector_index.VectorCache` keeps the episodes' vectors and filter
  columns in memory, appending rows by ``seq`` and rebuilding when ``delete_generation``
  changes (a deletion, supersession, archiving or re-embedding switch, by any process).
* Cold start: the index is saved beside the database as ``<db>.vectors``
  (:mod:`memlane.stores.sqlite.sidecar`; vectors memory-mapped, no per-row Python work on open). It is
  trusted only if its header matches the store's id (``store_meta.store_id``, made on first
  save), model, dimension and ``delete_generation``; rows with ``seq`` above its ``max_seq``
  are then read from SQLite. A stale, missing or corrupt file is ignored and rewritten once a
  refresh has read at least ``sidecar_min_rows`` rows from SQLite.
* ANN (:mod:`memlane.stores.sqlite.ann`): when the filtered set has more than ``ann_threshold`` rows,
  an inverted file over the index's own rows (centroids plus the list of every row key, saved as
  ``<db>.ivf``; trained by :meth:`SQLiteVectors.optimize`, i.e. ``memory.optimize()`` or
  ``memlane optimize``, never by a search, then loaded on open) walks the lists nearest the query,
  keeps the members passing the filter mask until it holds ``nprobe`` unfiltered lists' worth of
  them, and adds every row the lists do not hold yet (appended since; folded into the lists once
  that tail exceeds max(2,048, 1/64 of the rows)). Cosines are computed exactly on the one
  in-memory copy of the vectors and the best ``top_n`` are returned (``exhaustive=False``). The
  lists are keyed by row key, so deletes drop out on re-attachment and supersession, archiving
  and time filters act through the mask; ``optimize`` retrains the IVF once the store has grown 4x.
  Without lists (never optimized) a search above the threshold is exact: the same hits, slower,
  and never a training of tens of seconds inside the first recall after a bulk ingest.
* Quantized (``quantized=True``, the store's ``quantized_vectors``): the in-memory index and the
  sidecar hold int8 codes with a per-row scale (1/4 of the float32 bytes); a search scores
  candidates on the codes, keeps the best ``2 * top_n + 64`` and re-ranks them with the exact
  float32 vectors read from SQLite by row key, so the returned cosines are exact.
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

from memlane.stores.base import IndexReport, VectorCandidates
from memlane.stores.sqlite.ann import (
    ANN_THRESHOLD,
    BASE_NPROBE,
    TRAIN_SAMPLE,
    AttachedLists,
    IvfIndex,
    nlist_for,
)
from memlane.stores.sqlite.base import (
    Snapshot,
    SnapshotMemo,
    decode_vectors,
    in_chunks,
    read_generation,
    snapshot,
    vector_batches,
)
from memlane.stores.sqlite.sidecar import file_lock, read_index, write_index
from memlane.stores.sqlite.vector_index import OPEN_END, IndexRows, VectorCache, VectorIndex

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
        sidecar_min_rows: Rows read from SQLite in one refresh that trigger a sidecar write
            (at least 1/16 of the index, so a large sidecar is not rewritten for a few rows).
        ann_threshold: Filtered sets above this many rows use the ANN index; ``None`` = always exact.
        quantized: Keep the in-memory vectors (and the sidecar) as int8 codes, 1/4 of the memory;
            candidates are re-ranked with the exact float32 vectors read from SQLite (see module doc).
    """

    def __init__(
        self,
        path: str | None,
        *,
        sidecar: bool = True,
        sidecar_min_rows: int = SIDECAR_MIN_ROWS,
        ann_threshold: int | None = ANN_THRESHOLD,
        quantized: bool = False,
    ) -> None:
        self.cache = VectorCache("vectors", quantized=quantized)
        self.quantized = quantized
        self._sidecar = None if path is None or not sidecar else Path(path + ".vectors")
        self._ivf_path = None if path is None or not sidecar else Path(path + ".ivf")
        self._min_rows = max(1, int(sidecar_min_rows))
        self.ann_threshold = ann_threshold
        self._ivf: IvfIndex | None = None
        self._lists: AttachedLists | None = None
        self._lists_of: VectorIndex | None = None
        self._ivf_unsaved = 0
        self.nprobe = BASE_NPROBE
        """Unfiltered lists' worth of candidates an ANN query examines (:meth:`IvfIndex.probe`)."""
        self.ann_searches = 0
        """Searches served by the ANN index (a structural probe for tests)."""
        self.ann_trainings = 0
        """IVF trainings in this process (a structural probe: none on a cold open with ``<db>.ivf``)."""
        self.ivf_saves = 0
        """``<db>.ivf`` files written by this process."""
        self.sidecar_saves = 0
        """``<db>.vectors`` files written by this process."""
        self._hinted = False
        self._rejected: tuple[int, int] | None = None  # (mtime_ns, size) of an <db>.ivf that did not load
        self._memo = SnapshotMemo()
        self._fresh: tuple[Snapshot, int, VectorIndex] | None = None  # (snapshot, dims, index) refreshed

    # -- identity --------------------------------------------------------------------------

    def _meta(self, conn: sqlite3.Connection, key: str) -> str | None:
        """:func:`_meta`, read once per snapshot (every ANN search asks for the identity)."""
        return self._memo.get(conn, key, lambda: _meta(conn, key))

    def _store_id(self, conn: sqlite3.Connection, create: bool) -> str | None:
        found = self._meta(conn, "store_id")
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
            found = self._meta(conn, "store_id")
        return found

    def _identity(self, conn: sqlite3.Connection, dims: int, create: bool) -> dict[str, Any] | None:
        store_id = self._store_id(conn, create)
        if store_id is None:
            return None
        return {
            "format": _FORMAT,
            "store_id": store_id,
            "model": self._meta(conn, "embedding_model"),
            "dims": dims,
        }

    # -- refresh ---------------------------------------------------------------------------

    def refresh(self, conn: sqlite3.Connection, dims: int) -> VectorIndex:
        """Bring the in-memory index up to date (sidecar first, then SQLite rows after it).

        Reads nothing but ``PRAGMA data_version`` when the file is unchanged since the last refresh
        for ``dims`` as ``conn`` sees it (an equal :func:`~memlane.stores.sqlite.base.snapshot`).
        """
        at = snapshot(conn)  # taken before the reads: a commit during them changes the next one
        fresh = self._fresh
        if at is not None and fresh is not None and fresh[:2] == (at, dims) and fresh[2] is self.cache.index:
            return fresh[2]
        self._fresh = None  # until the reads below succeed
        generation = read_generation(conn, GENERATION)
        max_seq = int(conn.execute("SELECT coalesce(max(seq), 0) FROM episodes").fetchone()[0])
        load = None
        kind = "int8" if self.quantized else "float32"
        if self._sidecar is not None:
            sidecar = self._sidecar

            def load() -> VectorIndex | None:
                ident = self._identity(conn, dims, create=False)
                if ident is None or not sidecar.exists():
                    return None
                return read_index(sidecar, {**ident, "generation": generation, "vectors": kind})

        index = self.cache.refresh(dims, generation, max_seq, lambda after: index_rows(conn, after), load)
        if self._sidecar is not None and self.cache.rows_unsaved >= max(self._min_rows, len(index) // 16):
            self._save(conn, index, dims, {"generation": generation, "vectors": kind})
        self._fresh = None if at is None else (at, dims, index)
        return index

    def optimize(self, conn: sqlite3.Connection, dims: int) -> IndexReport:
        """Bring every derived index up to date now (:meth:`memlane.stores.base.Store.optimize`).

        Reads the rows not yet in memory, writes the sidecar if any row is unsaved (for an index of
        at least ``sidecar_min_rows`` rows: a smaller one loads as fast from SQLite), and, for an
        index above ``ann_threshold`` rows, loads or trains the IVF lists (retrained once the index
        is 4x the rows they were trained on), folds every unlisted row into them and saves them.
        """
        sidecar_saves, ivf_saves, trainings = self.sidecar_saves, self.ivf_saves, self.ann_trainings
        index = self.refresh(conn, dims)
        if self._sidecar is not None and self.cache.rows_unsaved and len(index) >= self._min_rows:
            kind = "int8" if self.quantized else "float32"
            self._save(conn, index, dims, {"generation": read_generation(conn, GENERATION), "vectors": kind})
        covered = 0
        if self.ann_threshold is not None and len(index) > self.ann_threshold:
            lists = self._attached(conn, index, build=True)
            assert lists is not None and self._ivf is not None
            if self._ivf_unsaved:
                self._save_ivf(self._ivf)
            covered = lists.covered
        written = (
            (self._sidecar, self.sidecar_saves > sidecar_saves),
            (self._ivf_path, self.ivf_saves > ivf_saves),
        )
        return IndexReport(
            vectors=len(index),
            ann_rows=covered,
            ann_trained=self.ann_trainings > trainings,
            saved=tuple(path.name for path, wrote in written if path is not None and wrote),
        )

    def _save(self, conn: sqlite3.Connection, index: VectorIndex, dims: int, extra: dict[str, Any]) -> None:
        assert self._sidecar is not None
        try:
            ident = self._identity(conn, dims, create=True)
            assert ident is not None
            with file_lock(Path(str(self._sidecar) + ".lock")) as mine:
                if mine:
                    write_index(self._sidecar, index, {**ident, **extra})
                    self.sidecar_saves += 1
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
        """Candidates of the rows set in ``mask``: exact below the threshold, else ANN (see module doc).

        Every returned cosine is exact. Exact search of a float32 index returns every filtered row
        (``exhaustive=True``); the ANN path and a quantized index return at least the ``top_n``
        best candidates found (``exhaustive`` only if they are all the filtered rows).
        """
        count = int(np.count_nonzero(mask))
        rows = None
        if self.ann_threshold is not None and count > self.ann_threshold and count > top_n:
            rows = self._ann_rows(conn, index, mask, query, top_n)
        if rows is None:
            if not index.quantized:
                return index.exact(mask, query)
            rows = np.flatnonzero(mask)
        else:
            self.ann_searches += 1
        exhaustive = len(rows) == count
        cosine = index.cosine(query, rows)
        if index.quantized:  # keep the best by int8 cosine, then exact float32 cosines from SQLite
            keep = 2 * top_n + 64
            if len(rows) > keep:
                best = np.sort(np.argpartition(-cosine, keep - 1)[:keep])
                rows, exhaustive = rows[best], False
            rows, cosine = _exact_cosines(conn, index, rows, query)
        elif len(rows) > top_n and not exhaustive:
            best = np.sort(np.argpartition(-cosine, top_n - 1)[:top_n])
            rows, cosine = rows[best], cosine[best]
        return index.candidates(rows, cosine, exhaustive=exhaustive)

    def _ann_rows(
        self,
        conn: sqlite3.Connection,
        index: VectorIndex,
        mask: NDArray[np.bool_],
        query: NDArray[np.float32],
        top_n: int,
    ) -> NDArray[np.int64] | None:
        """Sorted positions of the ANN candidates (probed list members plus the unlisted tail), or None."""
        lists = self._attached(conn, index, build=False)
        if lists is None or self._ivf is None:
            if not self._hinted:
                self._hinted = True
                logger.info(
                    "%d vectors and no ANN index: searching exactly; memory.optimize() (memlane optimize) "
                    "builds it",
                    len(index),
                )
            return None
        found = self._ivf.probe(query, lists, mask, top_n, self.nprobe)
        tail = lists.covered + np.flatnonzero(mask[lists.covered :])
        # the lists hold distinct positions, all below the tail's: one sort, no deduplication
        return np.concatenate([np.sort(found), tail])

    def _attached(self, conn: sqlite3.Connection, index: VectorIndex, *, build: bool) -> AttachedLists | None:
        """The IVF lists as positions of ``index``: kept, loaded from ``<db>.ivf`` or (``build``, i.e.
        :meth:`optimize`) trained, then extended with the rows added since (folded in when the
        unlisted tail is large, or always when building). ``None``: no lists and not ``build``."""
        if len(index) == 0:
            return None
        ident = self._identity(conn, index.dims, create=self._ivf_path is not None) or {}
        expect = {**ident, "kind": "ivf-lists"}
        ivf = self._ivf
        if ivf is not None and ivf.meta["expect"] != expect:
            ivf = self._lists_of = None
        if ivf is None and self._ivf_path is not None:
            ivf = self._load_ivf(self._ivf_path, expect)
        if build and (ivf is None or len(index) >= 4 * max(ivf.trained_rows, 4096)):
            ivf = self._train(index, expect)
            self._lists_of = None
        if ivf is None:
            return None
        self._ivf = ivf
        lists = self._lists if self._lists_of is index else None
        if lists is None:
            lists, missing = ivf.attach(index.seqs)
            if len(missing):  # rows the saved lists do not hold (added since, filled in place)
                ivf.add(index.seqs[missing], index.gather(missing))
                self._ivf_unsaved += len(missing)
                lists, _ = ivf.attach(index.seqs)
        tail = len(index) - lists.covered
        if tail >= (1 if build else max(2048, lists.covered // 64)):
            new = np.arange(lists.covered, len(index))
            ivf.add(index.seqs[new], index.gather(new))
            self._ivf_unsaved += tail
            lists, _ = ivf.attach(index.seqs)
        self._lists, self._lists_of = lists, index
        if self._ivf_unsaved >= max(self._min_rows, len(ivf.seqs) // 16):
            self._save_ivf(ivf)
        return lists

    def _load_ivf(self, path: Path, expect: dict[str, Any]) -> IvfIndex | None:
        """``<db>.ivf`` if it loads; a file that did not is not read again until it changes."""
        try:
            stat = path.stat()
        except OSError:
            return None
        mark = (stat.st_mtime_ns, stat.st_size)
        if mark == self._rejected:
            return None
        ivf = IvfIndex.load(path, expect)
        self._rejected = None if ivf is not None else mark
        self._lists_of = None
        return ivf

    def _train(self, index: VectorIndex, expect: dict[str, Any]) -> IvfIndex:
        n = len(index)
        rng = np.random.default_rng(0)
        size = min(n, nlist_for(n) * TRAIN_SAMPLE)
        sample = index.gather(np.sort(rng.choice(n, size=size, replace=False)))
        ivf = IvfIndex.train(sample, n, expect)
        for lo in range(0, n, 65_536):
            rows = np.arange(lo, min(n, lo + 65_536))
            ivf.add(index.seqs[rows], index.gather(rows))
        self.ann_trainings += 1
        self._save_ivf(ivf)
        return ivf

    def _save_ivf(self, ivf: IvfIndex) -> None:
        self._ivf_unsaved = 0
        if self._ivf_path is None:
            return
        try:
            with file_lock(Path(str(self._ivf_path) + ".lock")) as mine:
                if mine:
                    ivf.save(self._ivf_path)
                    self.ivf_saves += 1
        except OSError as exc:
            logger.warning("ANN index %s not written: %s", self._ivf_path, exc)

    def clear(self) -> None:
        """Drop the in-memory state (on close)."""
        self.cache.clear()
        self._ivf = self._lists = self._lists_of = None
        self._fresh = None


def _exact_cosines(
    conn: sqlite3.Connection, index: VectorIndex, rows: NDArray[np.int64], query: NDArray[np.float32]
) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
    """Exact cosines of positions ``rows`` from the float32 vectors in SQLite (rows gone are dropped)."""
    keys = index.seqs[rows]
    found: dict[int, bytes] = {}
    for chunk, marks in in_chunks(keys.tolist()):
        sql = f"SELECT seq, embedding FROM episodes WHERE seq IN ({marks}) AND embedding IS NOT NULL"
        found.update(conn.execute(sql, chunk).fetchall())
    present = np.fromiter((int(k) in found for k in keys), dtype=bool, count=len(keys))
    rows = rows[present]
    if len(rows) == 0:
        return rows, np.zeros(0, dtype=np.float32)
    vectors = decode_vectors([found[int(k)] for k in keys[present]])
    cosine: NDArray[np.float32] = np.einsum("ij,j->i", vectors, query)
    return rows, cosine
