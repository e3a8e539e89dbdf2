"""Keyword evidence for session search: per-pool BM25 of the query over session turn windows.

:meth:`memlane.sessions.SessionMemory.search_sessions` ranks turn windows like episode recall
ranks episodes (:func:`memlane.recall.ranking.rank`, hybrid: calibrated dense + saturating
keyword relevance), so an exact phrase finds its session even when the embedder ranks it lower.
The keyword part is computed here, in Python, over the ``pool`` windows with the highest cosine
(``max(20 * top_k, 200)``): their text is analysed with :mod:`memlane.analysis` and scored with
BM25 whose statistics (``N``, ``df``, ``avgdl``) are those of the pool, i.e. of the owner's
best dense candidates, never of another owner's sessions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from memlane.analysis import index_terms, query_terms, terms_column
from memlane.bm25 import score_matches

__all__ = ["window_keyword_scores"]


def window_keyword_scores(
    query: str,
    keys: NDArray[np.int64],
    cosine: NDArray[np.floating],
    pool: int,
    texts_of: Callable[[Sequence[int]], Mapping[int, str]],
) -> NDArray[np.float64]:
    """BM25 of ``query`` for every candidate window (NaN where no query term matches or not pooled).

    Args:
        query: The search text.
        keys: int64 ``[n]`` window keys.
        cosine: ``[n]`` cosine of each window to the query.
        pool: How many windows (highest cosine first) get keyword evidence (>= 1).
        texts_of: ``texts_of(keys) -> {key: window text}`` (one batched store read).

    Returns:
        float64 ``[n]`` BM25 (> 0) or NaN.
    """
    n = len(keys)
    out = np.full(n, np.nan)
    terms = query_terms(query)
    if n == 0 or not terms:
        return out
    chosen = np.argsort(-np.asarray(cosine, dtype=np.float64), kind="stable")[:pool]
    texts = texts_of([int(keys[i]) for i in chosen])
    rows = []
    df: dict[str, int] = dict.fromkeys(terms, 0)
    total = 0
    for i in chosen:
        analysed, length = index_terms(texts.get(int(keys[i]), ""))
        total += length
        for term in set(analysed).intersection(terms):
            df[term] += 1
        rows.append((int(i), terms_column(analysed), length, 0.0, None))
    found = {t: d for t, d in df.items() if d > 0}
    if not found:
        return out
    for key, score, _, _ in score_matches(rows, found, len(rows), total / max(len(rows), 1), len(rows)):
        out[key] = score
    return out
