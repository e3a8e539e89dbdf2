"""Merging a store's dense and keyword candidates into one set of parallel arrays (pure).

The recall pipeline (:mod:`memlane.recall.pipeline`) asks a candidate source (episodes, session
windows) for vector candidates, keyword candidates or both, then hands the merged arrays to
:func:`memlane.recall.ranking.rank`. An item found by both searches appears once, with both
scores; one found by a single search has NaN for the other.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from memlane.stores.base import KeywordCandidates, VectorCandidates

__all__ = ["MergedCandidates", "merge_candidates", "with_extra"]


@dataclass(frozen=True, slots=True)
class MergedCandidates:
    """The union of dense and keyword candidates, as parallel arrays of length ``n``.

    Attributes:
        keys: int64 ``[n]`` store row keys (unique): the dense candidates in their order, then
            keyword-only candidates in theirs.
        cosine: float64 ``[n]`` cosine to the query, NaN where not a dense candidate; ``None``
            when no dense search ran.
        keyword: float64 ``[n]`` keyword score (>= 0), NaN where not a keyword candidate;
            ``None`` when no keyword search ran.
        created_at_seconds: float64 ``[n]``.
        importance: float64 ``[n]``, NaN if unrated.
    """

    keys: NDArray[np.int64]
    cosine: NDArray[np.float64] | None
    keyword: NDArray[np.float64] | None
    created_at_seconds: NDArray[np.float64]
    importance: NDArray[np.float64]

    def __len__(self) -> int:
        return len(self.keys)


def merge_candidates(dense: VectorCandidates | None, keyword: KeywordCandidates | None) -> MergedCandidates:
    """Union ``dense`` and ``keyword`` candidates by row key.

    Args:
        dense: Vector candidates, or ``None`` when the embeddings were not searched.
        keyword: Keyword candidates, or ``None`` when the keyword index was not searched.

    Returns:
        The merged arrays (see :class:`MergedCandidates`); empty when both are ``None``.
    """
    if dense is None and keyword is None:
        empty = np.zeros(0, dtype=np.float64)
        return MergedCandidates(np.zeros(0, dtype=np.int64), None, None, empty, empty)
    if keyword is None:
        assert dense is not None
        return MergedCandidates(
            keys=np.asarray(dense.keys, dtype=np.int64),
            cosine=np.asarray(dense.cosine, dtype=np.float64),
            keyword=None,
            created_at_seconds=np.asarray(dense.created_at_seconds, dtype=np.float64),
            importance=np.asarray(dense.importance, dtype=np.float64),
        )
    if dense is None:
        return MergedCandidates(
            keys=keyword.keys,
            cosine=None,
            keyword=keyword.score,
            created_at_seconds=keyword.created_at_seconds,
            importance=keyword.importance,
        )
    dense_keys = np.asarray(dense.keys, dtype=np.int64)
    n_dense = len(dense_keys)
    # Each keyword key's place among the dense keys (one sort, one binary search: no isin).
    order = np.argsort(dense_keys, kind="stable")
    at = np.minimum(np.searchsorted(dense_keys, keyword.keys, sorter=order), max(n_dense - 1, 0))  # >= 0
    in_dense = dense_keys[order[at]] == keyword.keys if n_dense else np.zeros(len(keyword.keys), dtype=bool)
    extra = ~in_dense
    keys = np.concatenate([dense_keys, keyword.keys[extra]])
    cosine = np.full(len(keys), np.nan)
    cosine[:n_dense] = dense.cosine
    scores = np.full(len(keys), np.nan)
    if in_dense.any():
        scores[order[at[in_dense]]] = keyword.score[in_dense]
    scores[n_dense:] = keyword.score[extra]
    return MergedCandidates(
        keys=keys,
        cosine=cosine,
        keyword=scores,
        created_at_seconds=np.concatenate(
            [np.asarray(dense.created_at_seconds, dtype=np.float64), keyword.created_at_seconds[extra]]
        ),
        importance=np.concatenate(
            [np.asarray(dense.importance, dtype=np.float64), keyword.importance[extra]]
        ),
    )


def with_extra(
    candidates: MergedCandidates,
    keys: NDArray[np.int64],
    cosine: NDArray[np.float64],
    created_at_seconds: NDArray[np.float64],
    importance: NDArray[np.float64],
) -> MergedCandidates:
    """``candidates`` followed by ``k`` further ones found by neither search (e.g. through the graph).

    Args:
        candidates: The merged dense and keyword candidates.
        keys: int64 ``[k]`` row keys not among ``candidates.keys``.
        cosine: ``[k]`` their cosine to the query (NaN: none); dropped when no dense search ran.
        created_at_seconds: ``[k]``. importance: ``[k]``, NaN if unrated.

    Returns:
        The ``n + k`` candidates; the extra ones have no keyword score (NaN).
    """
    if len(keys) == 0:
        return candidates
    nan = np.full(len(keys), np.nan)
    return MergedCandidates(
        keys=np.concatenate([candidates.keys, np.asarray(keys, dtype=np.int64)]),
        cosine=None if candidates.cosine is None else np.concatenate([candidates.cosine, cosine]),
        keyword=None if candidates.keyword is None else np.concatenate([candidates.keyword, nan]),
        created_at_seconds=np.concatenate([candidates.created_at_seconds, created_at_seconds]),
        importance=np.concatenate([candidates.importance, importance]),
    )
