"""Overhead of retrieval bookkeeping on ranked recall: tracking on vs off, same process, same store.

``MemoryConfig(track_retrievals=True)`` (the default) makes every ranked recall add 1 to
``retrieve_count`` and set ``last_retrieved_at`` on the hits it returns, in one batched
``UPDATE``. This benchmark ingests the synthetic corpus of :mod:`scale` (precomputed
384-dim vectors, so no model runs) into one store and times ``recall_episodes(query,
limit=10)`` through two memories over that store, one with tracking on and one with it off,
**interleaved** query by query (the order alternates) so drift and background load hit both
alike. It reports p50/p95 of each and the ratio ``on / off``. Nothing is asserted.

Usage::

    .venv/bin/python benchmarks/retrieval_tracking.py [--sizes 10000,100000] [--queries 300]
        [--backend sqlite,postgres] [--out benchmarks/results/retrieval_tracking.json]
"""

from __future__ import annotations

import argparse
import gc
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _results import write_results
from scale import (
    _POSTGRES,
    BACKENDS,
    DEFAULT_SEED,
    LIMIT,
    NOW,
    SESSION_ID,
    TENANT_ID,
    WARMUP,
    PrecomputedEmbedder,
    ingest,
    latency_stats,
    machine_info,
    make_dataset,
    parse_backends,
    parse_sizes,
)

from memlane import EpisodicMemory, FrozenClock, MemoryConfig

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "retrieval_tracking.json"


def run_size(backend: str, n: int, n_queries: int, seed: int, workdir: Path) -> dict[str, Any]:
    """Ingest ``n`` episodes, then time ranked recall with tracking on and off, interleaved."""
    data = make_dataset(n, WARMUP + n_queries, seed)
    embedder = PrecomputedEmbedder()
    embedder.add(data.texts, data.vectors)
    embedder.add(data.query_texts, data.query_vectors)
    on = EpisodicMemory(
        BACKENDS[backend](workdir),
        embedder,
        clock=FrozenClock(NOW),
        tenant_id=TENANT_ID,
        session_id=SESSION_ID,
    )
    off = on.with_context(config=MemoryConfig(track_retrievals=False))
    try:
        ingest(on, data)
        for j in range(WARMUP):
            on.recall_episodes(data.query_texts[j], limit=LIMIT)
            off.recall_episodes(data.query_texts[j], limit=LIMIT)
        gc.collect()
        samples: dict[str, list[int]] = {"on": [], "off": []}
        for j in range(WARMUP, WARMUP + n_queries):
            order = (("on", on), ("off", off)) if j % 2 else (("off", off), ("on", on))
            for name, memory in order:
                t0 = time.perf_counter_ns()
                memory.recall_episodes(data.query_texts[j], limit=LIMIT)
                samples[name].append(time.perf_counter_ns() - t0)
        counted = sum(ep.retrieve_count for ep in on.iter_episodes())
    finally:
        off.close()
        on.close()
        shutil.rmtree(workdir, ignore_errors=True)
    stats = {name: latency_stats(values) for name, values in samples.items()}
    return {
        "episodes": n,
        "tracking_on": stats["on"],
        "tracking_off": stats["off"],
        "p50_ratio_on_over_off": stats["on"]["p50_ms"] / stats["off"]["p50_ms"],
        "p95_ratio_on_over_off": stats["on"]["p95_ms"] / stats["off"]["p95_ms"],
        "mean_ratio_on_over_off": stats["on"]["mean_ms"] / stats["off"]["mean_ms"],
        "retrievals_counted": counted,
    }


def render_markdown(report: dict[str, Any]) -> str:
    """One table row per (backend, size)."""
    lines = [
        "# Retrieval bookkeeping overhead (ranked recall, limit 10)",
        "",
        f"{report['config']['queries']} interleaved queries per size after {WARMUP} warm-up calls; "
        "query embedding excluded (precomputed vectors). Ratio = tracking on / tracking off, "
        "same process, same store.",
        "",
        "| backend | episodes | off p50 / p95 ms | on p50 / p95 ms | p50 ratio | p95 ratio | mean ratio |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for run in report["runs"]:
        off, on = run["tracking_off"], run["tracking_on"]
        lines.append(
            f"| {run['backend']} | {run['episodes']:,} | {off['p50_ms']:.2f} / {off['p95_ms']:.2f} | "
            f"{on['p50_ms']:.2f} / {on['p95_ms']:.2f} | {run['p50_ratio_on_over_off']:.2f}x | "
            f"{run['p95_ratio_on_over_off']:.2f}x | {run['mean_ratio_on_over_off']:.2f}x |"
        )
    machine = report["machine"]
    lines += ["", f"Machine: {machine.get('cpu_count')} CPU(s), {machine.get('cpu_model')}.", ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run, write JSON and Markdown next to it, print the Markdown. Returns 0."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("--sizes", type=parse_sizes, default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--backend", type=parse_backends, default=["sqlite"])
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    runs: list[dict[str, Any]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="memlane-tracking-") as tmp:
            for backend in args.backend:
                for n in args.sizes:
                    print(f"[{time.perf_counter() - started:6.1f}s] {backend} n={n:,}", file=sys.stderr)
                    result = run_size(backend, n, args.queries, args.seed, Path(tmp) / f"{backend}-{n}")
                    runs.append({"backend": backend, **result})
    finally:
        _POSTGRES.stop()
    report = {
        "benchmark": "retrieval_tracking",
        "machine": machine_info(),
        "config": {"sizes": args.sizes, "queries": args.queries, "limit": LIMIT, "seed": args.seed},
        "runs": runs,
        "total_seconds": time.perf_counter() - started,
    }
    markdown = render_markdown(report)
    write_results(args.out, report, markdown)
    print(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
