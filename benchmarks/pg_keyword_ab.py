#!/usr/bin/env python
"""PostgreSQL keyword search A/B in one process: in-memory postings vs BM25 in the server.

One schema holds ``scale.py``'s episodes (one tenant, one session; its ``natural`` and ``common``
text regimes, each in a schema of its own); two store objects read it: ``PostgresStore()``
(keyword candidates from :mod:`memlane.stores.postgres.postings`) and
``PostgresStore(keyword_index=False)`` (:mod:`memlane.stores.postgres.fts`). Per query both run,
in an order that flips every query, so both see the same machine load: keyword candidates alone
(``keyword_candidates``, top 50), a keyword-only ``recall_episodes(query, limit=10,
retrieval="keyword")`` and a hybrid ``recall_episodes(query, limit=10)``. Every query's
keyword hits (keys and scores) and recall hits must be equal on both sides, or the run fails.
The steady figures are the per-query ratios (postings / server), reported as their median.

Usage::

    python benchmarks/pg_keyword_ab.py [--sizes 10000] [--queries 100] \
        [--out benchmarks/results/pg_keyword_ab.json]

Uses ``MEMLANE_BENCH_POSTGRES_URL`` if set, else starts an embedded PostgreSQL (as ``scale.py``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import scale
from _results import write_results

from memlane.analysis import query_terms
from memlane.stores.base import EpisodeFilter

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "pg_keyword_ab.json"
TOP_N = 50
MODES = ("candidates", "keyword recall", "hybrid recall")


def _timed(call: Any) -> tuple[int, Any]:
    t0 = time.perf_counter_ns()
    result = call()
    return time.perf_counter_ns() - t0, result


def run_regime(n: int, n_queries: int, regime: str, seed: int) -> dict[str, Any]:
    """Fill one schema with ``n`` episodes of ``regime``; time both sides per query, interleaved."""
    from memlane.stores.postgres import PostgresStore

    data = scale.make_dataset(n, n_queries, seed, regime)
    embedder = scale.PrecomputedEmbedder()
    embedder.add(data.texts, data.vectors)
    embedder.add(data.query_texts, data.query_vectors)
    schema = f"bench_pgk_{regime}_{n}_{os.getpid()}"
    url = scale._POSTGRES.url()
    stores = {
        "postings": PostgresStore(url, schema=schema),
        "server": PostgresStore(url, schema=schema, keyword_index=False),
    }
    memories = {name: scale._memory(store, embedder) for name, store in stores.items()}
    for sl in scale._batches(n, scale.BATCH_SIZE):
        memories["server"].remember_episodes(scale.batch_inputs(data, sl))
    stores["server"].optimize()
    flt = EpisodeFilter(tenant_id=scale.TENANT_ID, session_id=scale.SESSION_ID)
    times: dict[str, dict[str, list[int]]] = {m: {s: [] for s in stores} for m in MODES}
    for warm in range(2):  # the first pass builds the postings and warms both sides (not timed)
        for q, text in enumerate(data.query_texts):
            terms = query_terms(text)
            order = list(stores) if q % 2 == 0 else list(reversed(stores))
            found: dict[str, Any] = {}
            for name in order:
                timed = _one_side(stores[name], memories[name], flt, text, terms)
                found[name] = _outcome([result for _, result in timed])
                for mode, (ns, _) in zip(MODES, timed, strict=True):
                    if warm:
                        times[mode][name].append(ns)
            if found["postings"] != found["server"]:
                raise SystemExit(f"{regime} query {q}: the postings and the server-side path differ")
    for memory in memories.values():
        memory.close()
    return {mode: _summary(side) for mode, side in times.items()}


def _one_side(
    store: Any, memory: Any, flt: EpisodeFilter, text: str, terms: Sequence[str]
) -> list[tuple[int, Any]]:
    """``(ns, result)`` of each of :data:`MODES` on one side, in order."""
    return [
        _timed(lambda: store.keyword_candidates(flt, terms, TOP_N)),
        _timed(lambda: memory.recall_episodes(text, limit=10, retrieval="keyword")),
        _timed(lambda: memory.recall_episodes(text, limit=10)),
    ]


def _outcome(results: list[Any]) -> tuple[Any, ...]:
    """What must be equal on both sides: the candidates' keys and scores, the recalls' ids and scores."""
    hits, keyword, hybrid = results
    return hits.keys.tolist(), hits.score.tolist(), [(h.episode.id, h.score) for h in (*keyword, *hybrid)]


def _summary(side: dict[str, list[int]]) -> dict[str, float]:
    ratios = [a / b for a, b in zip(side["postings"], side["server"], strict=True)]
    return {
        "postings_p50_ms": statistics.median(side["postings"]) / 1e6,
        "server_p50_ms": statistics.median(side["server"]) / 1e6,
        "median_ratio": statistics.median(ratios),
    }


def main(argv: list[str] | None = None) -> int:
    """Run the A/B, write JSON and Markdown, print the Markdown."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("--sizes", type=scale.parse_sizes, default=[10_000])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--seed", type=int, default=scale.DEFAULT_SEED)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    results: dict[str, Any] = {}
    try:
        for n in args.sizes:
            for regime in ("natural", "common"):
                results[f"{regime}/{n}"] = run_regime(n, args.queries, regime, args.seed)
    finally:
        scale._POSTGRES.stop()
    load = os.getloadavg()
    lines = [
        "# PostgreSQL keyword search: in-memory postings vs BM25 in the server (interleaved, one process)",
        "",
        f"{args.queries} queries per size and regime after one warm-up pass; "
        f"candidates = `keyword_candidates` top {TOP_N}, recalls `limit=10` (keyword-only, hybrid); "
        "identical hits checked per query. "
        f"Load average at the end {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on {os.cpu_count()} CPUs.",
        "",
        "| regime / size | mode | postings p50 (ms) | server p50 (ms) | median ratio postings / server |",
        "|---|---|---:|---:|---:|",
    ]
    for key, modes in results.items():
        for mode, s in modes.items():
            figures = f"{s['postings_p50_ms']:.2f} | {s['server_p50_ms']:.2f} | {s['median_ratio']:.3f}"
            lines.append(f"| {key} | {mode} | {figures} |")
    markdown = "\n".join(lines) + "\n"
    write_results(
        args.out,
        {"load_average": load, "queries": args.queries, "results": results, "machine": scale.machine_info()},
        markdown,
    )
    print(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
