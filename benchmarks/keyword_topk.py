"""Exact keyword top-k at 100k: today's exhaustive numpy scoring vs a numpy MaxScore prototype vs tantivy.

Issue #24 asks to choose the keyword top-k engine by measurement. Three ways to get the best
``top_n + 32`` (532 for a ``limit=10`` recall: the pool of 500 plus the filter's first slack)
BM25 rows of a scope, timed query by query, interleaved (same machine load), on both text regimes
of :mod:`scale` (the same data and queries):

- ``exhaustive``: :meth:`memlane.stores.keyword_postings.KeywordPostings.score` of every match,
  then :func:`~memlane.stores.keyword_postings.best_first` (what the SQLite store runs).
- ``maxscore``: :class:`MaxScorePostings`, a vectorised MaxScore prototype: the rarest terms' rows
  scored exactly give a lower bound ``theta`` of the 532nd best score; per-term upper bounds (max
  ``tf`` over the shortest row, widened for rounding) rule out every row whose terms cannot sum to
  ``theta``; only the rest is scored (binary search of each term's ``tf``). Its answer is checked
  to equal the exhaustive one (keys, floats, tie order) on every query.
- ``tantivy`` (when installed): tantivy's own BM25 top-532 of the same kept terms (OR), whitespace
  tokenizer over the analysed terms: a reference floor only, its scores are not memlane's.

Run: ``python benchmarks/keyword_topk.py`` (100k, both regimes: writes
``benchmarks/results/keyword_topk.{json,md}``); any other ``--size``/``--queries`` writes to
``benchmarks/results/partial/``.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import scale
from _results import write_results
from numpy.typing import NDArray

from memlane.analysis import index_terms_batch, query_terms
from memlane.bm25 import DEFAULT_BM25, Bm25Params, contribution, idf, length_norm
from memlane.stores.common_terms import CommonTermFilter
from memlane.stores.keyword_postings import KeywordPostings, PostingRows, TermPostings, best_first

FULL_SIZE = 100_000
FULL_QUERIES = 200
COUNT = 532
"""Rows asked for: a ``limit=10`` recall's pool (500) plus the first filter slack (32)."""
OUT = Path(__file__).resolve().parent / "results" / "keyword_topk.json"
PARTIAL = Path(__file__).resolve().parent / "results" / "partial" / "keyword_topk.json"
SCOPE = ("t", "s")

_MAX_REST_TERMS = 6
"""The prototype enumerates the sets of the non-seed terms (at most ``2 ** 6``), else scores all."""
_BOUND_MARGIN = 1.0 + 1e-9
"""A term's bound is widened by this factor: far above the few ulps of rounding of any contribution."""
_SEED_FACTOR = 1.5
"""The seed holds about ``1.5 * count`` postings (a tighter ``theta`` than just ``count``)."""
_LOOKUP_COST = 4
"""A looked-up row (binary searches) costs about as much as this many scattered postings."""


Postings = dict[str, TermPostings]
"""Per query term, its rows in the scope and its count in each (:meth:`KeywordPostings.scope_postings`)."""


class MaxScorePostings(KeywordPostings):
    """:class:`KeywordPostings` with the MaxScore prototype :meth:`top` (benchmark only)."""

    def top(
        self,
        postings: Postings,
        df: dict[str, int],
        n_rows: int,
        avgdl: float,
        params: Bm25Params,
        count: int,
    ) -> tuple[NDArray[np.int64], NDArray[np.float64], bool]:
        """A part of :meth:`~KeywordPostings.score`'s answer holding its best ``count`` rows (MaxScore).

        The rarest terms' rows (the *seed*, at least ``count`` rows) are scored exactly; the
        ``count``-th best of them, ``theta``, is a lower bound of the ``count``-th best score of
        the scope. Every other term gets an upper bound of its contribution (its highest
        ``tf`` over the index's shortest row, :func:`~memlane.bm25.contribution`, widened by
        :data:`_BOUND_MARGIN` to cover rounding); a row holding no seed term can only reach
        ``theta`` if the terms it holds have bounds summing (in ``df``'s order) to at least
        ``theta``, so only the rows holding all terms of such a set are scored too. Every row
        left out scores strictly below ``theta``: :func:`best_first` of the answer's best
        ``count`` is the same as over :meth:`score`'s (same rows, floats and tie order).

        Arguments as for :meth:`score`, plus ``count`` (>= 1), the best rows to keep.

        Returns:
            ``(positions, scores, complete)``: positions (increasing) of the scored rows, their
            scores (the floats :meth:`score` gives them) and whether they are every match
            (:meth:`score` itself answered: few postings, or pruning would not pay).
        """
        sizes = {t: len(postings[t].rows) for t in df}
        budget = int(count * _SEED_FACTOR)
        if sum(sizes.values()) <= _LOOKUP_COST * budget:  # few postings: scoring them all is as cheap
            return (*self.score(postings, df, n_rows, avgdl, params), True)
        rarest = sorted(df, key=sizes.__getitem__)
        seed, covered = 0, 0
        while seed < len(rarest) and covered + sizes[rarest[seed]] <= budget:  # whole terms that fit
            covered += sizes[rarest[seed]]
            seed += 1
        rest = rarest[seed:]
        if not rest or len(rest) > _MAX_REST_TERMS:
            return (*self.score(postings, df, n_rows, avgdl, params), True)
        k1, b, avg = params.k1, params.b, max(float(avgdl), 1e-9)
        weights = {t: idf(d, n_rows) for t, d in df.items()}
        # Any real rows give a lower bound of the count-th best: the next term's first rows fill the seed.
        seeded = _union(
            [postings[t].rows for t in rarest[:seed]] + [postings[rest[0]].rows[: budget - covered]]
        )
        if len(seeded) < count:
            return (*self.score(postings, df, n_rows, avgdl, params), True)
        seed_scores = self._looked_up(seeded, postings, weights, (k1, b, avg))
        theta = float(np.partition(seed_scores, len(seeded) - count)[len(seeded) - count])
        shortest = length_norm(float(self.lengths.min()), k1, b, avg)
        bound = {
            t: float(contribution(weights[t], float(postings[t].tf.max()), shortest, k1)) * _BOUND_MARGIN
            for t in df
            if t in rest
        }
        needed = _sufficient_sets(list(bound.values()), theta)
        if not needed:
            return seeded, seed_scores, False
        terms = list(bound)
        sets = [[postings[terms[i]].rows for i in range(len(terms)) if mask >> i & 1] for mask in needed]
        if sum(min(len(r) for r in rows) for rows in sets) * _LOOKUP_COST > sum(
            len(postings[t].rows) for t in df
        ):
            return (*self.score(postings, df, n_rows, avgdl, params), True)
        rows = _union([seeded, *(_intersection(r) for r in sets)])
        return rows, self._looked_up(rows, postings, weights, (k1, b, avg)), False

    def _looked_up(
        self,
        rows: NDArray[np.int64],
        postings: Postings,
        weights: dict[str, float],
        norm_args: tuple[float, float, float],
    ) -> NDArray[np.float64]:
        """BM25 of ``rows`` (increasing positions): each term's ``tf`` found by binary search.

        Terms are added in ``weights``' order (``df``'s), each row's contribution by the same
        expression as in :meth:`score`, so every row gets :meth:`score`'s float.
        """
        k1, b, avg = norm_args
        norm = length_norm(self.lengths[rows], k1, b, avg)
        scores = np.zeros(len(rows), dtype=np.float64)
        for term, weight in weights.items():
            held, f = postings[term].rows, postings[term].tf
            if not len(held):
                continue
            at = np.minimum(np.searchsorted(held, rows), len(held) - 1)
            hit = held[at] == rows
            scores[hit] += contribution(weight, f[at[hit]], norm[hit], k1)
        return scores


def _sufficient_sets(bounds: Sequence[float], theta: float) -> list[int]:
    """The minimal sets of terms (bit masks over ``bounds``) whose bounds sum to at least ``theta``.

    Sums are taken in the order of ``bounds`` (float addition in the order a score sums, so a
    row holding only the terms of a set scores at most the set's sum); a row whose terms hold
    no set of the answer scores below ``theta``.
    """
    found: list[int] = []
    for mask in sorted(range(1, 1 << len(bounds)), key=int.bit_count):
        if any(mask & m == m for m in found):
            continue
        total = 0.0
        for i, bound in enumerate(bounds):
            if mask >> i & 1:
                total += bound
        if total >= theta:
            found.append(mask)
    return found


def _intersection(rows: Sequence[NDArray[np.int64]]) -> NDArray[np.int64]:
    """The positions in every one of ``rows`` (each increasing), increasing."""
    ordered = sorted(rows, key=len)
    common = ordered[0]
    for other in ordered[1:]:
        if not len(common) or not len(other):
            return np.zeros(0, dtype=np.int64)
        at = np.minimum(np.searchsorted(other, common), len(other) - 1)
        common = common[other[at] == common]
    return common


def _union(rows: Sequence[NDArray[np.int64]]) -> NDArray[np.int64]:
    """The positions in any of ``rows``, increasing and distinct."""
    if len(rows) == 1:
        return rows[0]
    every = np.sort(np.concatenate(rows))
    first = np.ones(len(every), dtype=bool)
    first[1:] = every[1:] != every[:-1]
    return every[first]


def build(texts: Sequence[str]) -> MaxScorePostings:
    """The postings of ``texts`` (analysed as the store does), one tenant and session."""
    analysed = index_terms_batch(texts)
    index = MaxScorePostings()
    n = len(texts)
    index.append(
        PostingRows(
            list(range(1, n + 1)),
            [SCOPE[0]] * n,
            [SCOPE[1]] * n,
            [a[0] for a in analysed],
            [a[1] for a in analysed],
            [0] * n,
            [None] * n,
            ["[]"] * n,
        )
    )
    return index


def tantivy_search(texts: Sequence[str], queries: Sequence[Sequence[str]]) -> Callable[[int], object] | None:
    """tantivy's BM25 top-:data:`COUNT` of query ``j`` (its kept terms ORed), or ``None`` if not installed."""
    try:
        import tantivy
    except ImportError:
        return None
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("body", stored=False, tokenizer_name="whitespace")
    index = tantivy.Index(builder.build())
    writer = index.writer(heap_size=200_000_000, num_threads=1)
    for text in texts:
        writer.add_document(tantivy.Document(body=text))
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    searcher = index.searcher()
    parsed = [index.parse_query(" OR ".join(q), ["body"]) for q in queries]
    return lambda j: searcher.search(parsed[j], COUNT).hits


def stats(samples_ns: Sequence[float]) -> dict[str, float]:
    """p50 / p95 of ``samples_ns`` in ms."""
    a = np.asarray(samples_ns, dtype=np.float64) / 1e6
    return {"p50_ms": float(np.percentile(a, 50)), "p95_ms": float(np.percentile(a, 95))}


def run_regime(regime: str, size: int, n_queries: int) -> dict[str, Any]:
    """Time the three engines on one regime, query by query interleaved (order alternating)."""
    data = scale.make_dataset(size, n_queries, 7, regime)
    index = build(data.texts)
    terms_text = [t for t, _ in index_terms_batch(data.texts)]
    n, avgdl = len(index), float(index.lengths.mean())
    rule = CommonTermFilter()
    queries: list[tuple[Postings, dict[str, int]]] = []
    for text in data.query_texts:
        found = index.scope_postings(query_terms(text), SCOPE)
        queries.append((found, rule.kept({t: len(r) for t, (r, _) in found.items()}, n)))
    kept = [list(df) or ["-"] for _, df in queries]
    floor = tantivy_search(terms_text, kept)

    def exhaustive(j: int) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        rows, scores = index.score(*queries[j], n, avgdl, DEFAULT_BM25)
        keys = index.seqs[rows]
        best = best_first(keys, scores, COUNT)
        return keys[best], scores[best]

    def maxscore(j: int) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        rows, scores, _ = index.top(*queries[j], n, avgdl, DEFAULT_BM25, COUNT)
        keys = index.seqs[rows]
        best = best_first(keys, scores, COUNT)
        return keys[best], scores[best]

    engines: dict[str, Callable[[int], object]] = {"exhaustive": exhaustive, "maxscore": maxscore}
    if floor is not None:
        engines["tantivy"] = floor
    samples: dict[str, list[float]] = {name: [] for name in engines}
    mismatches = 0
    for j in range(len(queries)):
        order = list(engines) if j % 2 == 0 else list(engines)[::-1]
        answers: dict[str, Any] = {}
        for name in order:
            t0 = time.perf_counter_ns()
            answers[name] = engines[name](j)
            samples[name].append(time.perf_counter_ns() - t0)
        a, b = answers["exhaustive"], answers["maxscore"]
        mismatches += not (np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]))
    base = np.asarray(samples["exhaustive"])
    result: dict[str, Any] = {
        "regime": regime,
        "episodes": size,
        "queries": len(queries),
        "mean_matches": float(np.mean([sum(len(f[t][0]) for t in df) for f, df in queries])),
        "maxscore_mismatches": mismatches,
        "load_average_end": list(os.getloadavg()),
    }
    for name, s in samples.items():
        result[name] = stats(s)
        ratio = np.asarray(s) / base
        result[name]["ratio_to_exhaustive_p50"] = float(np.percentile(ratio, 50))
    return result


def markdown(doc: dict[str, Any]) -> str:
    """The results as a Markdown table."""
    lines = [
        "# Exact keyword top-k engines (issue #24)",
        "",
        f"{doc['machine']} · {COUNT} best rows per query, one scope, queries interleaved across engines "
        "(order alternating). Ratios are per query against the exhaustive scorer in the same run. "
        "tantivy scores with its own BM25 (a floor, not memlane's answer).",
        "",
        "| regime | episodes | matches/query | exhaustive p50 / p95 ms | maxscore p50 / p95 ms (ratio p50) "
        "| tantivy p50 / p95 ms (ratio p50) | maxscore == exhaustive | load (end) |",
        "|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for r in doc["runs"]:
        cells = []
        for name in ("maxscore", "tantivy"):
            e = r.get(name)
            cells.append(
                f"{e['p50_ms']:.2f} / {e['p95_ms']:.2f} ({e['ratio_to_exhaustive_p50']:.2f}x)"
                if e
                else "not installed"
            )
        ex = r["exhaustive"]
        same = "yes" if r["maxscore_mismatches"] == 0 else f"NO ({r['maxscore_mismatches']})"
        load = " / ".join(f"{x:.1f}" for x in r["load_average_end"])
        lines.append(
            f"| {r['regime']} | {r['episodes']:,} | {r['mean_matches']:,.0f} "
            f"| {ex['p50_ms']:.2f} / {ex['p95_ms']:.2f} "
            f"| {cells[0]} | {cells[1]} | {same} | {load} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Run both regimes; write the results (partial unless the full size and query count)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=FULL_SIZE)
    parser.add_argument("--queries", type=int, default=FULL_QUERIES)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    full = args.size == FULL_SIZE and args.queries == FULL_QUERIES
    out = args.out or (OUT if full else PARTIAL)
    doc: dict[str, Any] = {
        "machine": f"{os.cpu_count()} CPUs · Python {platform.python_version()} · numpy {np.__version__}",
        "count": COUNT,
        "runs": [run_regime(regime, args.size, args.queries) for regime in scale.REGIMES],
    }
    write_results(out, doc, markdown(doc))
    print(markdown(doc))
    return 0 if all(r["maxscore_mismatches"] == 0 for r in doc["runs"]) else 1


if __name__ == "__main__":
    sys.exit(main())
