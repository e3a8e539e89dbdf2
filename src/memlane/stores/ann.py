"""Approximate nearest neighbours for large filtered scopes: an inverted file over the index's own rows.

Used by the SQLite store's vector search (:mod:`memlane.stores.sqlite.vectors`) when the filtered
candidate set has more than :data:`ANN_THRESHOLD` rows; below it the search is exact.

The index is an IVF *without its own copy of the vectors*: ``nlist`` unit centroids (spherical
k-means, trained hierarchically: ``C`` coarse centroids, then ``nlist / C`` fine ones inside each)
and, for every covered row key (``seq``), the inverted list it belongs to. A query ranks the
centroids by inner product, walks the lists in that order, keeps the members that pass the
filter mask and stops once it has as many passing candidates as ``nprobe`` unfiltered lists would
hold (so a selective filter probes more lists, never fewer candidates); the caller then computes
exact cosines of those candidates against the one in-memory copy of the vectors (the memory-mapped
sidecar and its appended blocks). Resident memory is therefore the vectors plus ~12 bytes a row
(row key and list id) plus the centroids, and the persisted ``<db>.ivf`` file is 21 MiB at 1M
rows, read in one call on open (no training on the first recall of a store that has one).

Why this and not faiss HNSW or faiss IVF-Flat (measured here, 2 cores, 384-d, 1M vectors):
HNSW at M=16 never reached recall@200 >= 0.98 at 1M (0.80 at ef 200, 0.95 at ef 800), costs
~650 CPU s to build and loses recall under selective filters; faiss IVF-Flat reaches recall 1.0 but
holds a second full copy of the vectors (resident memory ~2x the raw vectors once both the exact
and the ANN path have run). Assignment of a row is hierarchical too (its best fine centroid under
its :data:`_ASSIGN_COARSE` best coarse ones): at 1M (4,096 lists) training and listing every row
took 36 CPU s (87 s wall on the shared machine); recall@200 was 1.0 at ``nprobe`` 24 unfiltered
and under 10-30 % filters, 0.997 at 16 (benchmarks/results/ann.md).

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
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memlane.stores.sidecar import write_atomic

__all__ = ["ANN_THRESHOLD", "BASE_NPROBE", "AttachedLists", "IvfIndex", "nlist_for"]

logger = logging.getLogger(__name__)

ANN_THRESHOLD = 50_000
"""Filtered candidate sets with at most this many rows are searched exactly (2-14 ms here)."""

BASE_NPROBE = 24
"""Unfiltered lists' worth of passing candidates a query examines (tuned in benchmarks/ann.py)."""

_TRAIN_SAMPLE = 32
"""Training vectors per inverted list (k-means sample)."""

_ITERATIONS = 10
_ASSIGN_COARSE = 4
_BLOCK = 32_768
_FORMAT = 1


def nlist_for(n: int) -> int:
    """Inverted lists for ``n`` rows: 16 up to 16,384 rows (tests: every list is probed), then
    ``4 sqrt(n)`` rounded to a power of two (4,096 at 1M)."""
    if n <= 16_384:
        return 16
    return int(max(16, min(65_536, 2 ** round(math.log2(4 * math.sqrt(max(n, 1)))))))


def _argmax_ip(x: NDArray[np.float32], c: NDArray[np.float32]) -> NDArray[np.int64]:
    out = np.empty(len(x), dtype=np.int64)
    for lo in range(0, len(x), _BLOCK):
        out[lo : lo + _BLOCK] = np.argmax(x[lo : lo + _BLOCK] @ c.T, axis=1)
    return out


def _kmeans(x: NDArray[np.float32], k: int, rng: np.random.Generator) -> NDArray[np.float32]:
    """Spherical k-means: ``k`` unit centroids of the unit rows ``x`` (``k <= len(x)``)."""
    c = x[rng.choice(len(x), size=k, replace=False)].copy()
    for _ in range(_ITERATIONS):
        a = _argmax_ip(x, c)
        order = np.argsort(a, kind="stable")
        counts = np.bincount(a, minlength=k)
        present = np.flatnonzero(counts)
        sums = np.add.reduceat(x[order], np.concatenate([[0], np.cumsum(counts)[:-1]])[present], axis=0)
        c[present] = sums
        empty = np.flatnonzero(counts == 0)
        if len(empty):  # re-seed from random rows
            c[empty] = x[rng.choice(len(x), size=len(empty), replace=False)]
        c /= np.maximum(np.linalg.norm(c, axis=1, keepdims=True), 1e-12)
    return c


class AttachedLists:
    """The inverted lists as positions of one :class:`~memlane.stores.vector_index.VectorIndex`.

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
        self._children = [np.flatnonzero(parent == c) for c in range(len(coarse))]

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

        Args:
            sample: Training vectors (at most ``nlist_for(rows) * 32`` are needed).
            rows: Rows the index is trained for (sets ``nlist``).
            expect: Identity stored with the index (what :meth:`load` must match).
            seed: k-means seed.
        """
        rng = np.random.default_rng(seed)
        nlist = min(nlist_for(rows), len(sample))
        n_coarse = min(2 ** math.ceil(math.log2(max(nlist, 1)) / 2), len(sample))
        per = max(1, nlist // n_coarse)
        x = np.ascontiguousarray(sample, dtype=np.float32)
        coarse = _kmeans(x, n_coarse, rng)
        a = _argmax_ip(x, coarse)
        fine, parent = [], []
        for c in range(n_coarse):
            members = x[a == c]
            if len(members) == 0:
                continue
            fine.append(_kmeans(members, min(per, len(members)), rng))
            parent.append(np.full(len(fine[-1]), c, dtype=np.int64))
        meta = {"expect": expect, "trained_rows": int(rows), "format": _FORMAT}
        empty = np.zeros(0, dtype=np.int64)
        return cls(coarse, np.concatenate(fine), np.concatenate(parent), empty, empty.copy(), meta)

    def assign(self, x: NDArray[np.float32]) -> NDArray[np.int64]:
        """The list of each row of ``x`` (float32 ``[k, dims]``).

        A row's list is its best fine centroid among the children of its best coarse centroids.
        """
        out = np.empty(len(x), dtype=np.int64)
        top_c = min(_ASSIGN_COARSE, len(self.coarse))
        for lo in range(0, len(x), _BLOCK):
            block = np.ascontiguousarray(x[lo : lo + _BLOCK], dtype=np.float32)
            scores = block @ self.coarse.T
            top = np.argpartition(-scores, top_c - 1, axis=1)[:, :top_c] if top_c < len(self.coarse) else None
            best = np.full(len(block), -np.inf, dtype=np.float32)
            best_id = np.zeros(len(block), dtype=np.int64)
            for c, children in enumerate(self._children):
                rows = np.arange(len(block)) if top is None else np.flatnonzero((top == c).any(axis=1))
                if len(rows) == 0 or len(children) == 0:
                    continue
                s = block[rows] @ self.centroids[children].T
                j = np.argmax(s, axis=1)
                v = s[np.arange(len(rows)), j]
                better = v > best[rows]
                best[rows[better]] = v[better]
                best_id[rows[better]] = children[j[better]]
            out[lo : lo + len(block)] = best_id
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
        scores = np.einsum("ij,j->i", self.centroids, query)
        order = np.argsort(-scores)
        mean = max(1.0, len(lists.positions) / max(1, self.nlist))
        want = max(top_n, int(nprobe * mean))
        found: list[NDArray[np.int64]] = []
        seen = examined = i = 0
        step = nprobe
        offsets, positions = lists.offsets, lists.positions
        while i < len(order) and seen < want:
            batch = order[i : i + step]
            i += len(batch)
            members = np.concatenate([positions[offsets[x] : offsets[x + 1]] for x in batch.tolist()])
            examined += len(members)
            members = members[mask[members]]
            found.append(members)
            seen += len(members)
            rate = max(seen / max(examined, 1), 1e-3)  # passing share so far: lists still needed
            step = int(min(len(order), max(1, math.ceil(1.2 * (want - seen) / (rate * mean)))))
        return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)

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
