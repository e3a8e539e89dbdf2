"""Pure BM25 scoring of matching rows (a leaf: no memlane import, no I/O).

BM25 (Robertson & Zaragoza 2009, *The Probabilistic Relevance Framework: BM25 and Beyond*) with
the Lucene IDF ``ln(1 + (N - df + 0.5) / (df + 0.5))`` (always > 0)::

    bm25(row) = sum over query terms t in row of  idf(t) * f * (k1 + 1) / (f + k1 * (1 - b + b * len / avgdl))

``k1 = 1.2`` and ``b = 0.3`` (turns of a conversation are short; their length says little about
topicality: +0.008 R@10 over 0.75 on LoCoMo conversations 0-4). The statistics (``N``, ``df``,
``avgdl``) are chosen by the caller: the stores use those of the recall's scope
(:mod:`memlane.stores.common_terms`). These numbers have one home, :data:`DEFAULT_BM25`, which the
ranking profile names (:attr:`memlane.config.profile.RankingProfile.bm25`) and the stores score with.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # numpy stays unimported for the CLI's help and structured lookups
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["DEFAULT_BM25", "Bm25Params", "ScoredRow", "contribution", "idf", "length_norm", "score_matches"]

Values = TypeVar("Values", float, "NDArray[np.float64]")
"""One number or an array of them: the formulas below run on either, operation by operation alike."""


@dataclass(frozen=True, slots=True)
class Bm25Params:
    """The BM25 constants.

    Every match of the recall's scope is scored (exact BM25 top-k): the SQLite store from its
    in-memory postings (:mod:`memlane.stores.keyword_postings`), the FTS5 path and PostgreSQL
    by :func:`score_matches` over every matching row.

    Attributes:
        k1: Term-frequency saturation, > 0 (1.2).
        b: Length normalisation, in [0, 1] (0.3).
    """

    k1: float = 1.2
    b: float = 0.3


DEFAULT_BM25 = Bm25Params()
"""The BM25 constants every store scores with."""

ScoredRow = tuple[int, float, Any, Any]
"""``(key, bm25, created_at_seconds, importance_or_None)`` of one scored row."""


def idf(df: int, n_rows: int) -> float:
    """The Lucene IDF ``ln(1 + (N - df + 0.5) / (df + 0.5))`` of a term in ``df`` of ``n_rows`` rows (> 0)."""
    return math.log1p((n_rows - df + 0.5) / (df + 0.5))


def length_norm(length: Values, k1: float, b: float, avgdl: float) -> Values:
    """BM25's length normalisation ``k1 * ((1 - b) + b * length / avgdl)`` (``avgdl`` > 0, already clamped).

    Elementwise on an array: the same float for a row as on its length alone.
    """
    return k1 * ((1.0 - b) + b * length / avgdl)


def contribution(weight: float, f: Values, norm: Values, k1: float) -> Values:
    """One term's BM25 in a row: ``weight * f * (k1 + 1) / (f + norm)`` (evaluated left to right).

    ``weight`` is the term's :func:`idf`, ``f`` its count in the row (>= 1), ``norm`` the
    row's :func:`length_norm`. Elementwise on arrays, the same float as on scalars.
    """
    return weight * f * (k1 + 1.0) / (f + norm)


def score_matches(
    rows: Sequence[Sequence[Any]],
    df: dict[str, int],
    n_rows: int,
    avgdl: float,
    top_n: int,
    params: Bm25Params = DEFAULT_BM25,
) -> list[ScoredRow]:
    """BM25 of matching rows; the best ``top_n``.

    Args:
        rows: ``(key, terms, token_count, created_at_seconds, importance_or_None)`` of rows that
            contain at least one of ``df``'s terms; ``terms`` is the space-joined analysed text.
        df: Query term -> its document frequency in the statistics' rows (only the terms searched for).
        n_rows: ``N``, rows the statistics cover (>= 1).
        avgdl: Mean ``token_count`` over those rows (> 0; clamped to 1e-9).
        top_n: Rows to return (>= 1).
        params: ``k1`` and ``b``.

    Returns:
        Up to ``top_n`` :data:`ScoredRow`, best BM25 first (ties: lower key first); rows whose
        score is 0 (none of ``df``'s terms) are left out.
    """
    scored = _score(_parse(rows, df), df, n_rows, avgdl, params)
    scored.sort(key=lambda r: (-r[1], r[0]))
    return scored[: max(1, int(top_n))]


_Parsed = list[tuple[Sequence[Any], list[str], frozenset[str]]]


def _parse(rows: Sequence[Sequence[Any]], terms: Iterable[str]) -> _Parsed:
    """Each row containing any of ``terms``, with its tokens and the terms it contains."""
    wanted = frozenset(terms)
    parsed: _Parsed = []
    for row in rows:
        tokens = str(row[1]).split()
        hit = wanted.intersection(tokens)
        if hit:
            parsed.append((row, tokens, hit))
    return parsed


def _score(
    parsed: _Parsed, df: dict[str, int], n_rows: int, avgdl: float, params: Bm25Params
) -> list[ScoredRow]:
    """BM25 of parsed rows (see :func:`score_matches`), unsorted.

    A row's terms are summed in ``df``'s order (the query's term order), so the float score
    depends only on the row and the query, and an index that adds each term's contributions in
    turn (:mod:`memlane.stores.keyword_postings`) computes the same number.
    """
    k1, b = params.k1, params.b
    weights = {t: idf(d, n_rows) for t, d in df.items()}
    avg = max(float(avgdl), 1e-9)
    scored: list[ScoredRow] = []
    for (key, _, token_count, created, importance), tokens, hit in parsed:
        present = [t for t in weights if t in hit]
        if not present:
            continue
        norm = length_norm(float(token_count), k1, b, avg)
        score = sum(contribution(weights[t], float(tokens.count(t)), norm, k1) for t in present)
        scored.append((int(key), score, created, importance))
    return scored
