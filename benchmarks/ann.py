"""ANN (faiss IVF-Flat / IVF-SQ8) and vector sidecar figures vs exact search, component level.

Data: 384-d unit vectors around 200 centres (sigma 0.05), like benchmarks/scale.py; queries are
fresh points of the same clusters. Per size: IVF build CPU/wall seconds, file size vs raw vector
bytes, mmap open time, query p50/p95 (ms, one thread), recall@200 against a numpy exact scan, and
the sidecar (``<db>.vectors``) write time and cold open time. Writes benchmarks/results/ann.{json,md}.

Usage: python benchmarks/ann.py [--sizes 100000 1000000] [--queries 50]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from memlane.stores.ann import AnnIndex
from memlane.stores.sidecar import read_index, write_index
from memlane.stores.vector_index import IndexRows, VectorIndex

DIMS = 384
TOP_N = 200
RESULTS = Path(__file__).parent / "results"


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


def _run(n: int, queries: int, quantized: bool, tmp: Path) -> dict[str, object]:
    x, q = _data(n, queries)
    seqs = np.arange(1, n + 1, dtype=np.int64)
    cpu, wall = time.process_time(), time.perf_counter()
    index = AnnIndex.build(seqs, [x], {"bench": 1}, quantized=quantized)
    build_cpu, build_wall = time.process_time() - cpu, time.perf_counter() - wall
    path = tmp / f"ivf-{n}-{int(quantized)}"
    index.save(path)
    t = time.perf_counter()
    loaded = AnnIndex.load(path, {"bench": 1})
    open_s = time.perf_counter() - t
    assert loaded is not None
    allowed = np.ones(n + 1, dtype=bool)
    lat, recall = [], []
    for v in q:
        exact = set((np.argpartition(-np.einsum("ij,j->i", x, v), TOP_N)[:TOP_N] + 1).tolist())
        t = time.perf_counter()
        found = loaded.search(v, TOP_N, allowed, 1.0)
        lat.append((time.perf_counter() - t) * 1e3)
        recall.append(len(exact & set(found.tolist())) / TOP_N)
    return {
        "rows": n,
        "kind": "ivf-sq8" if quantized else "ivf-flat",
        "nlist": loaded.meta["nlist"],
        "build_cpu_s": round(build_cpu, 1),
        "build_wall_s": round(build_wall, 1),
        "file_over_raw": round(os.path.getsize(path) / x.nbytes, 3),
        "mmap_open_s": round(open_s, 3),
        "p50_ms": round(float(np.percentile(lat, 50)), 2),
        "p95_ms": round(float(np.percentile(lat, 95)), 2),
        "recall_at_200_mean": round(float(np.mean(recall)), 4),
        "recall_at_200_min": round(float(np.min(recall)), 4),
    }


def _sidecar(n: int, tmp: Path) -> dict[str, object]:
    x, _ = _data(n, 0)
    index = VectorIndex(DIMS)
    index.append(
        IndexRows(list(range(1, n + 1)), ["t"] * n, ["s"] * n, ["note"] * n, [0] * n, [np.nan] * n, x)
    )
    path = tmp / f"sidecar-{n}.vectors"
    t = time.perf_counter()
    write_index(path, index, {"bench": 1})
    write_s = time.perf_counter() - t
    t = time.perf_counter()
    loaded = read_index(path, {"bench": 1})
    open_s = time.perf_counter() - t
    assert loaded is not None
    t = time.perf_counter()
    loaded.cosine(x[0])
    first_scan_s = time.perf_counter() - t
    return {
        "rows": n,
        "sidecar_write_s": round(write_s, 2),
        "sidecar_open_s": round(open_s, 3),
        "first_full_scan_s": round(first_scan_s, 3),
        "file_over_raw": round(os.path.getsize(path) / x.nbytes, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--no-sq8", action="store_true")
    args = parser.parse_args()
    rows: list[dict[str, object]] = []
    sidecars: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as d:
        for n in args.sizes:
            for quantized in (False,) if args.no_sq8 else (False, True):
                rows.append(_run(n, args.queries, quantized, Path(d)))
                print(rows[-1], flush=True)
            sidecars.append(_sidecar(n, Path(d)))
            print(sidecars[-1], flush=True)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "ann.json").write_text(json.dumps({"ann": rows, "sidecar": sidecars}, indent=2) + "\n")
    lines = [
        "| rows | kind | nlist | build CPU s | file / raw | mmap open s | p50 ms | p95 ms "
        "| recall@200 mean / min |"
    ]
    lines.append("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        lines.append(
            f"| {r['rows']:,} | {r['kind']} | {r['nlist']} | {r['build_cpu_s']} | {r['file_over_raw']} | "
            f"{r['mmap_open_s']} | {r['p50_ms']} | {r['p95_ms']} | "
            f"{r['recall_at_200_mean']} / {r['recall_at_200_min']} |"
        )
    lines += [
        "",
        "| rows | sidecar write s | sidecar open s | first full scan s | file / raw |",
        "|---|---|---|---|---|",
    ]
    for s in sidecars:
        lines.append(
            f"| {s['rows']:,} | {s['sidecar_write_s']} | {s['sidecar_open_s']} | "
            f"{s['first_full_scan_s']} | {s['file_over_raw']} |"
        )
    (RESULTS / "ann.md").write_text("# ANN and sidecar (benchmarks/ann.py)\n\n" + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
