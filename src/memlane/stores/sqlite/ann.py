"""Approximate nearest neighbours for large filtered scopes: an inverted file over the index's own rows.

Used by the SQLite store's vector search (:mod:`memlane.stores.sqlite.vectors`) when the filtered
candidate set has more than :data:`ANN_THRESHOLD` rows; below it the search is exact.

What faiss does (faiss-cpu, MIT): the numerics. Training is spherical ``faiss.Kmeans`` (10
iterations, fixed seeds, on a sample of at most :data:`TRAIN_SAMPLE` rows a list) in two levels:
``C ~ sqrt(nlist)`` coarse centroids, then, inside each coarse cell, lists in proportion to its
share of the sample (the scheme of ``faiss.contrib.clustering.two_level_clustering``). A row is
put in a list by a faiss ``IndexIVFFlat`` holding the fine centroids under their coarse parent,
searched with ``nprobe`` :data:`_ASSIGN_COARSE`; a query ranks the centroids with a faiss
``IndexFlatIP``. Building uses two OpenMP threads, a query one; the caller's thread count is put
back after every call (libgomp keeps it per calling thread, so nothing leaks).

What memlane's lists add, and why: a faiss IVF-Flat stores its own copy of every vector in its
inverted lists, i.e. a second full copy next to the one the exact path needs (resident memory ~2x
the raw vectors once both paths have run; the target is <= 1.2x). Here the lists hold only row
keys (``seq``): ``nlist`` unit centroids and, for every covered row key, the list it belongs to.
A query walks the lists by centroid score, keeps the members that pass the filter mask and stops
once it has as many passing candidates as ``nprobe`` unfiltered lists would hold (so a selective
filter probes more lists, never fewer candidates); the caller then computes exact cosines of those
candidates against the one in-memory copy of the vectors (the memory-mapped sidecar and its
appended blocks). Resident memory is the vectors plus ~12 bytes a row plus the centroids; the
persisted ``<db>.ivf`` file (21 MiB at 1M rows) is read in one call on open (no training on the
first recall of a store that has one).

Measured (2 shared cores, 384-d, benchmarks/results/ann.md): recall@200 1.0 at ``nprobe`` 24,
unfiltered and under 1-30 % filters, at 100k and 1M; IVF build (train and list every row) at 1M
(4,096 lists) 34 CPU s, 20 s wall (the former numpy k-means: 36 CPU s, 87 s wall), 4.7 CPU s at
100k; cold start 0.32 s at 1M; resident 1.11x the raw vectors at 1M (1.10x before: the faiss
shared libraries add ~22 MB whatever the size).
Alternatives measured: faiss HNSW at M=16 never reached recall@200 >= 0.98 at 1M (0.80 at ef 200,
0.95 at ef 800), cost ~650 CPU s to build and lost recall under selective filters; a flat
(one-level) faiss k-means of 4,096 lists on 131k samples took 229 CPU s and flat assignment of 1M
rows ~165 CPU s here, against ~17 CPU s for the two-level ``IndexIVFFlat`` assignment, which agrees
with the flat one on 99.996 % of the rows.

Contract with the caller: ids are row keys; rows the index does not cover (added since, or
filled in place) are folded in by :meth:`IvfIndex.add` or scanned exactly by the caller; a row key
that no longer exists (deleted) is dropped when the lists are attached to an index
(:meth:`IvfIndex.attach`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memlane.stores.sqlite.sidecar import write_atomic

__all__ = ["ANN_THRESHOLD", "BASE_NPROBE", "TRAIN_SAMPLE", "AttachedLists", "IvfIndex", "nlist_for"]

logger = logging.getLogger(__name__)

ANN_THRESHOLD = 50_000
"""Filtered candidate sets with at most this many rows are searched exactly (2-14 ms here)."""

BASE_NPROBE = 24
"""Unfiltered lists' worth of passing candidates a query examines (tuned in benchmarks/ann.py)."""

TRAIN_SAMPLE = 32
"""Training vectors per inverted list: the caller samples at most ``nlist_for(rows) * 32`` rows."""

_ITERATIONS = 10
_ASSIGN_COARSE = 4
_BUILD_THREADS = 2
_BLOCK = 65_536
_FORMAT = 1
_FIRST_RANKED = 4
"""A probe ranks ``4 * nprobe`` lists first (an unfiltered walk needs about ``nprobe``), then 4x more."""


def nlist_for(n: int) -> int:
    """Inverted lists for ``n`` rows: 16 up to 16,384 rows (tests: every list is probed), then
    ``4 sqrt(n)`` rounded to a power of two (4,096 at 1M)."""
    if n <= 16_384:
        return 16
    return int(max(16, min(65_536, 2 ** round(math.log2(4 * math.sqrt(max(n, 1)))))))


@contextlib.contextmanager
def _omp_threads(n: int) -> Iterator[Any]:
    """faiss (imported on first use) with its OpenMP pool at ``n`` threads, restored on exit.

    libgomp keeps the thread count per calling thread, and the previous value is put back, so
    nothing leaks to the caller's other faiss (or OpenBLAS) work.
    """
    import faiss

    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(n)
    try:
        yield faiss
    finally:
        faiss.omp_set_num_threads(before)


def _kmeans(faiss: Any, x: NDArray[np.float32], k: int, seed: int) -> NDArray[np.float32]:
    """``k`` unit centroids of the unit rows ``x`` (``k <= len(x)``): faiss spherical k-means."""
    km = faiss.Kmeans(
        x.shape[1],
        k,
        niter=_ITERATIONS,
        spherical=True,
        seed=seed,
        min_points_per_centroid=1,  # the sample is bounded by the caller (no faiss warning)
        max_points_per_centroid=1 << 30,
    )
    km.train(x)
    centroids: NDArray[np.float32] = km.centroids
    return centroids


class AttachedLists:
    """The inverted lists as positions of one :class:`~memlane.stores.sqlite.vector_index.VectorIndex`.

    Attributes:
        positions: int64 ``[m]``, row positions grouped by list.
        offsets: int64 ``[nlist + 1]``, list ``l`` is ``positions[offsets[l]:offsets[l+1]]``.
        covered: Rows ``0..covered-1`` of the index are all in the lists.
    """

    def __init__(self, positions: NDArray[np.int64], offsets: NDArray[np.int64], covered: int) -> None:
        self.positions = positions
        self.offsets = offsets
        self.covered = covered


class IvfIndex:
    """Centroids and the list of every covered row key (see the module doc).

    Args:
        coarse: float32 ``[C, dims]`` coarse centroids.
        centroids: float32 ``[nlist, dims]`` fine centroids (the lists).
        parent: int64 ``[nlist]``, the coarse centroid of each list.
        seqs: int64 ``[m]`` ascending covered row keys.
        lists: int64 ``[m]`` list of each row key.
        meta: ``{"expect": ..., "trained_rows": int}``.
    """

    def __init__(
        self,
        coarse: NDArray[np.float32],
        centroids: NDArray[np.float32],
        parent: NDArray[np.int64],
        seqs: NDArray[np.int64],
        lists: NDArray[np.int64],
        meta: dict[str, Any],
    ) -> None:
        self.coarse = coarse
        self.centroids = centroids
        self.parent = parent
        self.seqs = seqs
        self.lists = lists
        self.meta = meta
        self._ranker: Any = None  # faiss IndexFlatIP over the lists' centroids (query ranking)
        self._assigner: Any = None  # faiss IndexIVFFlat: the lists' centroids under the coarse ones

    @property
    def nlist(self) -> int:
        """Number of inverted lists."""
        return len(self.centroids)

    @property
    def trained_rows(self) -> int:
        """Rows the index had when it was trained (retrain when the store has grown 4x)."""
        return int(self.meta["trained_rows"])

    @classmethod
    def train(cls, sample: NDArray[np.float32], rows: int, expect: dict[str, Any], seed: int = 0) -> IvfIndex:
        """Train centroids for ``rows`` rows on ``sample`` (float32 unit rows ``[m, dims]``), no rows yet.

        Two levels of faiss spherical k-means (``faiss.Kmeans``, two threads): ``C ~ sqrt(nlist)``
        coarse centroids on the whole sample, then inside each coarse cell a number of fine
        centroids (the lists) proportional to its share of the sample.

        Args:
            sample: Training vectors (at most ``nlist_for(rows) * TRAIN_SAMPLE`` are needed).
            rows: Rows the index is trained for (sets ``nlist``).
            expect: Identity stored with the index (what :meth:`load` must match).
            seed: k-means seed (training is deterministic for a given sample and seed).
        """
        x = np.ascontiguousarray(sample, dtype=np.float32)
        nlist = min(nlist_for(rows), len(x))
        n_coarse = min(2 ** math.ceil(math.log2(max(nlist, 1)) / 2), len(x))
        fine: list[NDArray[np.float32]] = []
        coarse: list[NDArray[np.float32]] = []
        parent: list[NDArray[np.int64]] = []
        with _omp_threads(_BUILD_THREADS) as faiss:
            top = _kmeans(faiss, x, n_coarse, seed)
            _, cell = faiss.knn(x, top, 1, metric=faiss.METRIC_INNER_PRODUCT)
            counts = np.bincount(cell[:, 0], minlength=n_coarse)
            # lists per cell in proportion to its sample share (faiss.contrib two_level_clustering)
            bounds = np.cumsum(counts) * nlist // len(x)
            per = np.diff(np.concatenate([[0], bounds]))
            for c in np.flatnonzero(counts).tolist():
                members = np.ascontiguousarray(x[cell[:, 0] == c])
                k = int(min(max(per[c], 1), len(members)))
                fine.append(_kmeans(faiss, members, k, seed + 1 + c))
                parent.append(np.full(k, len(coarse), dtype=np.int64))
                coarse.append(top[c])
        meta = {"expect": expect, "trained_rows": int(rows), "format": _FORMAT}
        empty = np.zeros(0, dtype=np.int64)
        return cls(np.stack(coarse), np.concatenate(fine), np.concatenate(parent), empty, empty.copy(), meta)

    def assign(self, x: NDArray[np.float32]) -> NDArray[np.int64]:
        """The list of each row of ``x`` (float32 ``[k, dims]``), two faiss threads.

        A row's list is its best fine centroid among the children of its ``_ASSIGN_COARSE`` best
        coarse centroids: a faiss ``IndexIVFFlat`` whose quantizer holds the coarse centroids and
        whose inverted lists hold the fine ones under their parent, searched with ``nprobe`` 4.
        """
        out = np.empty(len(x), dtype=np.int64)
        with _omp_threads(_BUILD_THREADS) as faiss:
            if self._assigner is None:
                dims = self.centroids.shape[1]
                quantizer = faiss.IndexFlatIP(dims)
                quantizer.add(self.coarse)
                index = faiss.IndexIVFFlat(quantizer, dims, len(self.coarse), faiss.METRIC_INNER_PRODUCT)
                index.is_trained = True
                ids = np.arange(self.nlist, dtype=np.int64)
                index.add_core(
                    self.nlist,
                    faiss.swig_ptr(self.centroids),
                    faiss.swig_ptr(ids),
                    faiss.swig_ptr(self.parent),
                )
                index.nprobe = min(_ASSIGN_COARSE, len(self.coarse))
                self._assigner = (quantizer, index)  # the IVF does not own its quantizer
            index = self._assigner[1]
            for lo in range(0, len(x), _BLOCK):
                block = np.ascontiguousarray(x[lo : lo + _BLOCK], dtype=np.float32)
                _, labels = index.search(block, 1)
                out[lo : lo + len(block)] = labels[:, 0]
            missing = np.flatnonzero(out < 0)  # no finite score (not unit rows): best list outright
            if len(missing):
                _, best = faiss.knn(
                    np.ascontiguousarray(x[missing], dtype=np.float32),
                    self.centroids,
                    1,
                    metric=faiss.METRIC_INNER_PRODUCT,
                )
                out[missing] = np.maximum(best[:, 0], 0)
        return out

    def add(self, seqs: NDArray[np.int64], vectors: NDArray[np.float32]) -> None:
        """Put row keys ``seqs`` (int64 ``[k]``, ascending, not yet listed) and their vectors in the lists."""
        if len(seqs) == 0:
            return
        lists = self.assign(vectors)
        if len(self.seqs) == 0 or seqs[0] > self.seqs[-1]:
            self.seqs = np.concatenate([self.seqs, seqs])
            self.lists = np.concatenate([self.lists, lists])
        else:
            all_seqs = np.concatenate([self.seqs, seqs])
            order = np.argsort(all_seqs, kind="stable")
            self.seqs, self.lists = all_seqs[order], np.concatenate([self.lists, lists])[order]

    def attach(self, keys: NDArray[np.int64]) -> tuple[AttachedLists, NDArray[np.int64]]:
        """Lists as positions in ``keys`` (an index's ascending row keys); drops keys no longer there.

        Returns:
            The attached lists (covering every position but the returned ones) and the
            positions (int64, ascending) below ``len(keys)`` that the index does not cover.
        """
        pos = np.searchsorted(keys, self.seqs)
        ok = pos < len(keys)
        ok[ok] = keys[pos[ok]] == self.seqs[ok]
        if not ok.all():
            self.seqs, self.lists, pos = self.seqs[ok], self.lists[ok], pos[ok]
        order = np.argsort(self.lists, kind="stable")
        offsets = np.zeros(self.nlist + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.lists, minlength=self.nlist), out=offsets[1:])
        covered = np.zeros(len(keys), dtype=bool)
        covered[pos] = True
        return AttachedLists(pos[order], offsets, len(keys)), np.flatnonzero(~covered)

    def probe(
        self,
        query: NDArray[np.float32],
        lists: AttachedLists,
        mask: NDArray[np.bool_],
        top_n: int,
        nprobe: int = BASE_NPROBE,
    ) -> NDArray[np.int64]:
        """Positions (unsorted) of filter-passing members of the lists nearest ``query``.

        Walks the lists by decreasing centroid score until it holds ``max(top_n, nprobe *
        mean list size)`` passing rows, or every list was probed.

        Args:
            query: float32 ``[dims]``, unit norm.
            lists: From :meth:`attach` for the index ``mask`` refers to.
            mask: Boolean ``[len(index)]``, the rows passing the filter.
            top_n: Neighbours the caller needs.
            nprobe: Unfiltered lists' worth of candidates to examine.
        """
        q = np.ascontiguousarray(query[None, :], dtype=np.float32)
        order = self.ranked_lists(q, _FIRST_RANKED * nprobe)
        mean = max(1.0, len(lists.positions) / max(1, self.nlist))
        want = max(top_n, int(nprobe * mean))
        found: list[NDArray[np.int64]] = []
        seen = examined = i = 0
        step = nprobe
        offsets, positions = lists.offsets, lists.positions
        while i < self.nlist and seen < want:
            if i + step > len(order) < self.nlist:  # the walk goes past the lists ranked so far
                order = self.ranked_lists(q, max(i + step, _FIRST_RANKED * len(order)))
            batch = order[i : i + step]
            i += len(batch)
            members = np.concatenate([positions[offsets[x] : offsets[x + 1]] for x in batch.tolist()])
            examined += len(members)
            members = members[mask[members]]
            found.append(members)
            seen += len(members)
            rate = max(seen / max(examined, 1), 1e-3)  # passing share so far: lists still needed
            step = int(min(self.nlist, max(1, math.ceil(1.2 * (want - seen) / (rate * mean)))))
        return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)

    def ranked_lists(self, query: NDArray[np.float32], count: int) -> NDArray[np.int64]:
        """The first ``count`` (at least) lists of the ranking of every list by centroid score, best first.

        The ranking is faiss ``IndexFlatIP`` over the centroids (one thread). Asked for fewer than
        all lists, faiss searches ``count + 1``; when those scores strictly decrease, the best
        ``count`` are the full ranking's first ``count`` in its order (every other list scores at
        most the last one's, which is below them), so they are returned; a tie or a NaN among
        them asks for the full ranking instead, whose order for tied scores is faiss's own.

        Args:
            query: float32 ``[1, dims]``, C-contiguous.
            count: Lists wanted, >= 1.

        Returns:
            int64 ``[m]`` list numbers, ``count <= m <= nlist`` (``m = nlist`` when ``count`` is
            close to it).
        """
        with _omp_threads(1) as faiss:
            if self._ranker is None:
                self._ranker = faiss.IndexFlatIP(self.centroids.shape[1])
                self._ranker.add(self.centroids)
            if 2 * count < self.nlist:
                scores, ranked = self._ranker.search(query, count + 1)
                if bool(np.all(scores[0, :-1] > scores[0, 1:])):
                    return np.asarray(ranked[0, :count], dtype=np.int64)
            _, ranked = self._ranker.search(query, self.nlist)
        return np.asarray(ranked[0], dtype=np.int64)

    # -- persistence -----------------------------------------------------------------------

    def save(self, path: Path) -> None:
        """Write the index to ``path`` atomically (one ``.npz``-format file, a few MiB at 1M rows)."""

        def write(fh: Any) -> None:
            np.savez(
                fh,
                meta=np.array(json.dumps(self.meta)),
                coarse=self.coarse,
                centroids=self.centroids,
                parent=self.parent,
                seqs=self.seqs,
                lists=self.lists,
            )

        write_atomic(path, write)

    @classmethod
    def load(cls, path: Path, expect: dict[str, Any]) -> IvfIndex | None:
        """The index saved at ``path`` if its metadata matches ``expect`` and it is whole, else ``None``."""
        try:
            with contextlib.ExitStack() as stack:
                data = stack.enter_context(np.load(path, allow_pickle=False))
                meta = json.loads(str(data["meta"]))
                if meta.get("expect") != expect or meta.get("format") != _FORMAT:
                    return None
                arrays = [data[name] for name in ("coarse", "centroids", "parent", "seqs", "lists")]
            coarse, centroids, parent, seqs, lists = arrays
            dims = expect.get("dims", centroids.shape[1])
            if (
                centroids.ndim != 2
                or centroids.shape[1] != dims
                or coarse.shape[1:] != centroids.shape[1:]
                or len(parent) != len(centroids)
                or len(seqs) != len(lists)
                or (len(lists) and (lists.min() < 0 or lists.max() >= len(centroids)))
                or (len(parent) and (parent.min() < 0 or parent.max() >= len(coarse)))
            ):
                return None
            return cls(
                coarse.astype(np.float32),
                centroids.astype(np.float32),
                parent.astype(np.int64),
                seqs.astype(np.int64),
                lists.astype(np.int64),
                meta,
            )
        except (OSError, ValueError, KeyError, TypeError, EOFError) as exc:
            logger.debug("ANN index %s ignored: %s", path, exc)
            return None
