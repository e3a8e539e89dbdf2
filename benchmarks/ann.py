"""The SQLite store's vector side at 100k and 1M episodes: ANN recall, latency, cold start, memory.

Data: 384-d unit vectors around 200 centres (per-dimension noise 0.05, as benchmarks/scale.py),
written through ``SQLiteStore.insert`` with precomputed vectors; 80 % of the rows in tenant ``t0``
and 20 % in ``t1``; event type ``fact`` for 30 %; tag ``common`` on 10 % and ``rare`` on 1 %;
one row a second. Queries are fresh points of the same clusters.

Per size and per vector storage (float32 default, int8 ``quantized_vectors``), in this order:

1. *build* (this process): the first search of a new store reads every row from SQLite and writes
   the sidecar ``<db>.vectors``; the first search above the ANN threshold trains the IVF and
   writes ``<db>.ivf`` (CPU and wall seconds of each).
2. *cold* (a fresh subprocess): RSS after imports, ``SQLiteStore(db)`` then one unfiltered
   ``vector_candidates`` (top 200) = cold start; the structural probes must show no row read from
   SQLite and no IVF training. Then for each filter, ``queries`` searches through the store
   (p50/p95 ms, single thread), RSS after them (resident = RSS delta over raw float32 vector
   bytes), then, query by query, a numpy exact scan of the float32 vectors under the same filter
   (a separate ``.npy``, touched only after the RSS reading) gives the truth: recall@200 of the
   store's top 200 by cosine, and the ratio of the store's p50 to the numpy scan's p50.

Filters: none; scope ``tenant t1`` (20 %); ``event type fact`` (30 %); ``tag common`` (10 %);
``time`` (last 25 %); ``t0 + fact + last 50 %`` (12 %); ``tag rare`` (1 %, exact by threshold).

Usage: ``python benchmarks/ann.py`` (100k) or ``python benchmarks/ann.py --million`` (100k and
1M; <= 30 min here). Only a complete ``--million`` run writes benchmarks/results/ann.{md,json};
any other run writes to ``--out`` (default: a ``memlane-ann`` directory under the temp dir).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

DIMS = 384
TOP_N = 200
RESULTS = Path(__file__).parent / "results"
T0 = datetime(2025, 1, 1, tzinfo=UTC)
FILTERS = ["none", "scope t1", "type fact", "tag common", "time last 25%", "t0+fact+last 50%", "tag rare"]


def _rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _data(n: int, queries: int, seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(200, DIMS)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    out = np.empty((n + queries, DIMS), dtype=np.float32)
    for lo in range(0, n + queries, 100_000):
        k = min(100_000, n + queries - lo)
        x = centres[rng.integers(0, 200, k)] + 0.05 * rng.normal(size=(k, DIMS)).astype(np.float32)
        out[lo : lo + k] = x / np.linalg.norm(x, axis=1, keepdims=True)
    return out[:n], out[n:]


def _attributes(n: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(11)
    return {
        "t1": rng.random(n) < 0.2,
        "fact": rng.random(n) < 0.3,
        "common": rng.random(n) < 0.1,
        "rare": rng.random(n) < 0.01,
    }


def _filters(n: int) -> dict[str, tuple[Any, np.ndarray]]:
    from memlane.stores.base import EpisodeFilter

    a = _attributes(n)
    created = np.arange(n)
    late, half = int(n * 0.75), int(n * 0.5)
    return {
        "none": (EpisodeFilter(), np.ones(n, dtype=bool)),
        "scope t1": (EpisodeFilter(tenant_id="t1"), a["t1"]),
        "type fact": (EpisodeFilter(event_type="fact"), a["fact"]),
        "tag common": (EpisodeFilter(tags=("common",)), a["common"]),
        "time last 25%": (EpisodeFilter(created_after=T0 + timedelta(seconds=late)), created >= late),
        "t0+fact+last 50%": (
            EpisodeFilter(tenant_id="t0", event_type="fact", created_after=T0 + timedelta(seconds=half)),
            ~a["t1"] & a["fact"] & (created >= half),
        ),
        "tag rare": (EpisodeFilter(tags=("rare",)), a["rare"]),
    }


def _ingest(db: Path, x: np.ndarray) -> float:
    from memlane.models import Episode
    from memlane.stores.sqlite import SQLiteStore

    n = len(x)
    a = _attributes(n)
    store = SQLiteStore(db, ann_threshold=None)
    store.bind_embedding_model("bench", DIMS)
    t = time.perf_counter()
    for lo in range(0, n, 10_000):
        batch = [
            Episode(
                id=f"e{i}",
                tenant_id="t1" if a["t1"][i] else "t0",
                session_id=f"s{i % 50}",
                event_type="fact" if a["fact"][i] else "note",
                content=f"episode {i}",
                tags=tuple(t for t in ("common", "rare") if a[t][i]),
                importance=None,
                created_at=T0 + timedelta(seconds=i),
                valid_from=T0 + timedelta(seconds=i),
                recorded_at=T0 + timedelta(seconds=i),
            )
            for i in range(lo, min(n, lo + 10_000))
        ]
        store.insert(batch, x[lo : lo + len(batch)])
    store.close()
    return time.perf_counter() - t


def _build(db: Path, quantized: bool) -> dict[str, float]:
    """A fresh process without sidecar: a first search (reads SQLite, writes the sidecar), then optimize."""
    from memlane.stores.base import EpisodeFilter
    from memlane.stores.sqlite import SQLiteStore

    store = SQLiteStore(db, quantized_vectors=quantized)
    q = np.zeros(DIMS, dtype=np.float32)
    q[0] = 1.0
    cpu, wall = time.process_time(), time.perf_counter()
    store.vector_candidates(EpisodeFilter(tags=("rare",)), q, TOP_N)  # exact: refresh + sidecar only
    sidecar = (time.process_time() - cpu, time.perf_counter() - wall)
    cpu, wall = time.process_time(), time.perf_counter()
    store.optimize()  # above the threshold: the IVF lists (trained if no <db>.ivf; a search never trains)
    store.vector_candidates(EpisodeFilter(), q, TOP_N)
    ivf = (time.process_time() - cpu, time.perf_counter() - wall)
    trainings = store._vector_search.ann_trainings
    store.close()
    return {
        "sidecar_cpu_s": round(sidecar[0], 1),
        "sidecar_wall_s": round(sidecar[1], 1),
        "ivf_cpu_s": round(ivf[0], 1),
        "ivf_wall_s": round(ivf[1], 1),
        "ivf_trained": trainings,
    }


def cold(db: str, npy: str, quantized: bool, queries: int) -> dict[str, Any]:
    """Run in a fresh subprocess: cold start, latency per filter, RSS, then recall vs numpy."""
    from memlane.stores.sqlite import SQLiteStore

    x_all = np.load(npy, mmap_mode="r")
    n = len(x_all) - queries
    qs = np.array(x_all[n:])
    flts = _filters(n)
    rss0 = _rss_mb()
    t = time.perf_counter()
    store = SQLiteStore(db, quantized_vectors=quantized)
    store.vector_candidates(flts["none"][0], qs[0], TOP_N)
    cold_s = time.perf_counter() - t
    vs = store._vector_search
    probes = {"rows_read_from_sqlite": vs.cache.rows_read, "ivf_trainings": vs.ann_trainings}
    got: dict[str, list[np.ndarray]] = {}
    lat: dict[str, list[float]] = {}
    for name, (flt, _) in flts.items():
        got[name], lat[name] = [], []
        for q in qs:
            t = time.perf_counter()
            c = store.vector_candidates(flt, q, TOP_N)
            lat[name].append((time.perf_counter() - t) * 1e3)
            top = np.argsort(-np.asarray(c.cosine))[:TOP_N]
            got[name].append(np.asarray(c.keys)[top] - 1)  # seq = row + 1 (inserted in order)
    rss1 = _rss_mb()
    x = x_all[:n]
    rows: list[dict[str, Any]] = []
    for name, (_, mask) in flts.items():
        exact_ms, recall = [], []
        sel = np.flatnonzero(mask)
        for q, found in zip(qs, got[name], strict=True):
            t = time.perf_counter()
            s = np.einsum("ij,j->i", x, q) if len(sel) == n else np.einsum("ij,j->i", x[sel], q)
            best = np.argpartition(-s, TOP_N - 1)[:TOP_N]
            exact_ms.append((time.perf_counter() - t) * 1e3)
            truth = set((best if len(sel) == n else sel[best]).tolist())
            recall.append(len(truth & set(found.tolist())) / TOP_N)
        p50, p95 = float(np.percentile(lat[name], 50)), float(np.percentile(lat[name], 95))
        e50 = float(np.percentile(exact_ms, 50))
        rows.append(
            {
                "filter": name,
                "share": round(float(mask.mean()), 3),
                "p50_ms": round(p50, 2),
                "p95_ms": round(p95, 2),
                "numpy_exact_p50_ms": round(e50, 2),
                "ratio_p50": round(p50 / e50, 3),
                "recall_at_200_mean": round(float(np.mean(recall)), 4),
                "recall_at_200_min": round(float(np.min(recall)), 4),
            }
        )
    store.close()
    raw_mb = n * DIMS * 4 / 2**20
    return {
        "rows": n,
        "vectors": "int8" if quantized else "float32",
        "cold_start_s": round(cold_s, 3),
        **probes,
        "rss_delta_mb": round(rss1 - rss0, 1),
        "raw_vector_mb": round(raw_mb, 1),
        "resident_over_raw": round((rss1 - rss0) / raw_mb, 3),
        "sidecar_over_raw": round(os.path.getsize(db + ".vectors") / 2**20 / raw_mb, 3),
        "ivf_file_mb": round(os.path.getsize(db + ".ivf") / 2**20, 1),
        "filters": rows,
    }


def _size(n: int, queries: int, tmp: Path) -> list[dict[str, Any]]:
    x, q = _data(n, queries)
    db = tmp / f"ann-{n}.db"
    npy = tmp / f"vectors-{n}.npy"
    np.save(npy, np.concatenate([x, q]))
    ingest_s = _ingest(db, x)
    print(f"{n}: ingest {ingest_s:.0f} s ({n / ingest_s:.0f}/s)", flush=True)
    out = []
    for quantized in (False, True):
        build = _build(db, quantized)
        print(n, "quantized" if quantized else "float32", build, flush=True)
        args = [sys.executable, __file__, "--cold", str(db), str(npy), str(int(quantized)), str(queries)]
        res = subprocess.run(args, check=True, capture_output=True, text=True)
        result = {
            **json.loads(res.stdout.strip().splitlines()[-1]),
            **build,
            "ingest_per_s": round(n / ingest_s),
        }
        print(json.dumps(result), flush=True)
        out.append(result)
    for path in tmp.glob(f"ann-{n}.db*"):
        path.unlink()
    npy.unlink()
    return out


def _markdown(results: list[dict[str, Any]]) -> str:
    lines = [
        "# SQLite vector side: ANN, cold start, memory (benchmarks/ann.py)",
        "",
        "2 shared cores, 384-d clustered vectors, top 200 (the recall pipeline's top_n), one thread a",
        "query; cold = fresh process, `SQLiteStore(db)` + first `vector_candidates`; resident = RSS delta",
        "after the queries over raw float32 vector bytes; ratio = store p50 / numpy exact scan p50 under",
        "the same filter. The resident figure includes the faiss shared libraries (faiss, OpenBLAS, libgomp:",
        "~22 MB RSS here, whatever the size), loaded by the first ANN query (IVF training, assignment and",
        "centroid ranking are faiss calls; the inverted lists of row keys are memlane's, over the one",
        "vector copy).",
        "",
        "| rows | vectors | cold start s | rows read / IVF trainings on open | resident / raw "
        "| sidecar / raw | .ivf MB | sidecar build s (wall) | IVF build s (wall) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['rows']:,} | {r['vectors']} | {r['cold_start_s']} | {r['rows_read_from_sqlite']} / "
            f"{r['ivf_trainings']} | {r['resident_over_raw']} | {r['sidecar_over_raw']} | "
            f"{r['ivf_file_mb']} | "
            f"{r['sidecar_wall_s']} | {r['ivf_wall_s'] if r['ivf_trained'] else 'reused'} |"
        )
    lines += [
        "",
        "| rows | vectors | filter | share | p50 ms | p95 ms | numpy exact p50 ms | ratio "
        "| recall@200 mean / min |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        for f in r["filters"]:
            lines.append(
                f"| {r['rows']:,} | {r['vectors']} | {f['filter']} | {f['share']} | {f['p50_ms']} | "
                f"{f['p95_ms']} | {f['numpy_exact_p50_ms']} | {f['ratio_p50']} | "
                f"{f['recall_at_200_mean']} / {f['recall_at_200_min']} |"
            )
    return "\n".join(lines) + "\n"


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--cold":
        db, npy, quantized, queries = sys.argv[2:6]
        print(json.dumps(cold(db, npy, quantized == "1", int(queries))))
        return
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--million", action="store_true", help="also 1M rows (the complete run)")
    parser.add_argument("--sizes", type=int, nargs="+", help="exploratory sizes (not a complete run)")
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "memlane-ann")
    args = parser.parse_args()
    sizes = args.sizes or ([100_000, 1_000_000] if args.million else [100_000])
    complete = args.million and not args.sizes
    started = time.perf_counter()
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as d:
        for n in sizes:
            results += _size(n, args.queries, Path(d))
    out = RESULTS if complete else args.out
    out.mkdir(parents=True, exist_ok=True)
    total = round(time.perf_counter() - started)
    (out / "ann.json").write_text(json.dumps({"total_s": total, "results": results}, indent=2) + "\n")
    (out / "ann.md").write_text(_markdown(results) + f"\nWhole run: {total} s.\n")
    print("wrote", out / "ann.md")


if __name__ == "__main__":
    main()
