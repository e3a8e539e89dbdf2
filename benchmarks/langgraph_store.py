"""MemlaneStore against LangGraph's own ``SqliteStore``, in the same run, on this machine.

Three measurements, each on a fresh store of every kind:

1. **LangGraph's ``test_large_batches`` workload**: the 6,000 operations of that test
   (``langgraph-checkpoint-postgres`` ``tests/test_async_store.py``: for 10 x 100 keys a put, a
   get, a ``list_namespaces(max_depth=m+1)``, a search of ``("test",)``, a put again and a
   delete) submitted to 10 threads; wall time in seconds.
2. **Filtered search** at ``--items`` items (default 10,000) in 100 namespaces: ``search(prefix,
   filter=...)`` without a query, one filter that matches ~1 % of the prefix and one that matches
   nothing; p50/p95 in ms over ``--repeats`` calls.
3. **``list_namespaces``** over the same items (no prefix; a prefix; ``max_depth=2``): p50/p95 ms.

Stores: ``SqliteStore`` on a file and in ``:memory:`` (no ``index``: LangGraph embeds nothing
then); ``MemlaneStore`` on a SQLite file with memlane's ``HashingEmbedder`` (a cheap,
deterministic embedder: what the store costs without a model) and, for the batch workload, with
the bundled model (all-MiniLM-L6-v2: every put is embedded); for the lookups also ``MemlaneStore``
on PostgreSQL (``MEMLANE_BENCH_POSTGRES_URL``, else an embedded server as in ``scale.py``; skip it
with ``--no-postgres``). Figures depend on the machine and
its load (recorded); they go to ``benchmarks/results/langgraph_store.{json,md}`` and are never
asserted in tests.

Usage::

    .venv/bin/python benchmarks/langgraph_store.py [--items 10000] [--repeats 200]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import scale
from langgraph.store.base import BaseStore, PutOp
from langgraph.store.sqlite import SqliteStore

from memlane import EpisodicMemory, LocalEmbedder, SQLiteStore
from memlane.embeddings import Embedder
from memlane.embeddings.fake import HashingEmbedder
from memlane.integrations.langgraph import MemlaneStore

RESULTS = Path(__file__).resolve().parent / "results" / "langgraph_store.json"
Factory = Callable[[Path], Any]


@contextmanager
def sqlite_store(directory: Path, *, memory: bool = False) -> Iterator[BaseStore]:
    """LangGraph's SqliteStore on a file in ``directory`` (or in memory), set up."""
    with SqliteStore.from_conn_string(":memory:" if memory else str(directory / "lg.db")) as store:
        store.setup()
        yield store


@contextmanager
def memlane_store(directory: Path, embedder: Embedder) -> Iterator[BaseStore]:
    """MemlaneStore on a SQLite file in ``directory``."""
    memory = EpisodicMemory(SQLiteStore(directory / "memlane.db"), embedder, tenant_id="lg")
    with MemlaneStore(memory, owns_memory=True) as store:
        yield store


@contextmanager
def memlane_postgres_store(directory: Path, embedder: Embedder) -> Iterator[BaseStore]:
    """MemlaneStore on a fresh PostgreSQL schema (named after ``directory``)."""
    memory = EpisodicMemory(scale.open_postgres_store(directory), embedder, tenant_id="lg")
    with MemlaneStore(memory, owns_memory=True) as store:
        yield store


def large_batches(store: BaseStore, n: int = 100, m: int = 10) -> float:
    """LangGraph's ``test_large_batches`` operations from 10 threads; seconds."""
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=10) as pool:
        futures = []
        for j in range(m):
            namespace = ("test", "foo", "bar", "baz", str(j % 2))
            for i in range(n):
                futures += [
                    pool.submit(store.put, namespace, f"key{i}", value={"foo": f"bar{i}"}),
                    pool.submit(store.get, namespace, f"key{i}"),
                    pool.submit(store.list_namespaces, prefix=None, max_depth=j + 1),
                    pool.submit(store.search, ("test",)),
                    pool.submit(store.put, namespace, f"key{i}", value={"foo": f"bar{i}"}),
                    pool.submit(store.put, namespace, f"key{i}", None),
                ]
        for future in futures:
            future.result()
    return time.perf_counter() - start


def fill(store: BaseStore, items: int) -> float:
    """``items`` items in 100 namespaces ``("org", "o<k % 10>", "u<k % 100>")``; seconds (batches of 500)."""
    start = time.perf_counter()
    for first in range(0, items, 500):
        ops = [
            PutOp(
                ("org", f"o{k % 10}", f"u{k % 100}"),
                f"item{k}",
                {"text": f"note number {k}", "kind": "rare" if k % 100 == 7 else "common", "n": k},
            )
            for k in range(first, min(first + 500, items))
        ]
        store.batch(ops)
    return time.perf_counter() - start


def percentiles(call: Callable[[], object], repeats: int) -> dict[str, float]:
    """p50/p95 of ``call`` in ms."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return {
        "p50_ms": round(statistics.median(times), 3),
        "p95_ms": round(times[int(0.95 * len(times)) - 1], 3),
    }


def lookups(store: BaseStore, repeats: int) -> dict[str, dict[str, float]]:
    """Filtered searches and namespace listings on a filled store."""
    return {
        "search org/o3, kind=rare (1 %)": percentiles(
            lambda: store.search(("org", "o3"), filter={"kind": "rare"}, limit=10), repeats
        ),
        "search org, kind=absent (0 hits)": percentiles(
            lambda: store.search(("org",), filter={"kind": "absent"}, limit=10), repeats
        ),
        "search org, n > 9990 ($gt)": percentiles(
            lambda: store.search(("org",), filter={"n": {"$gt": 9990}}, limit=10), repeats
        ),
        "list_namespaces()": percentiles(lambda: store.list_namespaces(limit=1000), repeats),
        "list_namespaces(prefix=org/o3)": percentiles(
            lambda: store.list_namespaces(prefix=("org", "o3"), limit=1000), repeats
        ),
        "list_namespaces(max_depth=2)": percentiles(lambda: store.list_namespaces(max_depth=2), repeats),
    }


POSTGRES = "MemlaneStore (PostgreSQL, HashingEmbedder)"


def run(items: int, repeats: int, postgres: bool = True) -> dict[str, Any]:
    """Every measurement, every store; the report (PostgreSQL: the lookups only)."""
    hashing = HashingEmbedder(64)
    kinds: dict[str, Callable[[Path], Any]] = {
        "SqliteStore (file)": sqlite_store,
        "SqliteStore (:memory:)": lambda d: sqlite_store(d, memory=True),
        "MemlaneStore (file, HashingEmbedder)": lambda d: memlane_store(d, hashing),
    }
    if postgres:
        kinds[POSTGRES] = lambda d: memlane_postgres_store(d, hashing)
    batches: dict[str, float] = {}
    scans: dict[str, dict[str, Any]] = {}
    try:
        for name, factory in kinds.items():
            if name != POSTGRES:
                with tempfile.TemporaryDirectory() as tmp, factory(Path(tmp)) as store:
                    batches[name] = round(large_batches(store), 3)
            with tempfile.TemporaryDirectory() as tmp, factory(Path(tmp)) as store:
                filled = fill(store, items)
                scans[name] = {"fill_s": round(filled, 3), **lookups(store, repeats)}
    finally:
        scale._POSTGRES.stop()  # the embedded server, if one was started
    with tempfile.TemporaryDirectory() as tmp, memlane_store(Path(tmp), LocalEmbedder()) as store:
        batches["MemlaneStore (file, bundled model)"] = round(large_batches(store), 3)
    return {
        "items": items,
        "repeats": repeats,
        "large_batches_s": batches,
        "lookups": scans,
        "machine": {
            "cpus": os.cpu_count(),
            "load_1min_before": round(os.getloadavg()[0], 2),
            "python": platform.python_version(),
        },
    }


def markdown(report: dict[str, Any]) -> str:
    """The report as the results page."""
    machine = report["machine"]
    lines = [
        "# MemlaneStore vs LangGraph's SqliteStore",
        "",
        f"Machine: {machine['cpus']} CPUs (1-min load average {machine['load_1min_before']} before the run), "
        f"Python {machine['python']}. Produced by `benchmarks/langgraph_store.py` "
        f"(`--items {report['items']} --repeats {report['repeats']}`), all stores in the same run.",
        "",
        "## LangGraph's `test_large_batches` workload (6,000 ops, 10 threads)",
        "",
        "| store | seconds | x SqliteStore (file) | x SqliteStore (:memory:) |",
        "| --- | ---: | ---: | ---: |",
    ]
    batches = report["large_batches_s"]
    for name, seconds in batches.items():
        file_ratio = seconds / batches["SqliteStore (file)"]
        mem_ratio = seconds / batches["SqliteStore (:memory:)"]
        lines.append(f"| {name} | {seconds} | {file_ratio:.2f} | {mem_ratio:.2f} |")
    lines += ["", f"## Lookups at {report['items']:,} items (100 namespaces), p50 / p95 ms", ""]
    names = list(report["lookups"])
    lines.append("| lookup | " + " | ".join(names) + " |")
    lines.append("| --- |" + " ---: |" * len(names))
    for lookup in next(iter(report["lookups"].values())):
        if lookup == "fill_s":
            continue
        cells = [
            f"{report['lookups'][n][lookup]['p50_ms']} / {report['lookups'][n][lookup]['p95_ms']}"
            for n in names
        ]
        lines.append(f"| {lookup} | " + " | ".join(cells) + " |")
    lines.append(
        "| fill (s, batches of 500 puts) | "
        + " | ".join(str(report["lookups"][n]["fill_s"]) for n in names)
        + " |"
    )
    lines += [
        "",
        "Reading: SqliteStore on a file commits each put with a synchronous journal write, so its",
        "batch time is disk-bound; in memory it is the floor. MemlaneStore lists namespaces from an",
        "index (`Store.facet_values`, schema migration 13: one probe per namespace). Its filters run",
        "in SQL (`EpisodeFilter.metadata`); a condition on an item's value (equality, `$gt`...) is a",
        "range of the value index (`VALUE_INDEX_ROOTS`: SQLite migration 15, PostgreSQL 18), which",
        "SQLite reads the rows from when it is the rarest condition and PostgreSQL's planner joins, so",
        "`kind=absent` and `n > 9990` over the whole 10,000-item prefix read 0 and 9 index entries",
        "instead of every item's JSON (SqliteStore's scan). The rare items (k % 100 == 7) all live in",
        "org/o7, so `org/o3, kind=rare` finds none: 100 index entries, each refused by the prefix tag.",
        "On PostgreSQL each call is a pooled connection's round trip: its p50 is about",
        "list_namespaces' (an index probe too), the filtered plans themselves run in under 1 ms",
        "(EXPLAIN ANALYZE). p95 on 2 cores follows the load average (in the header): the other",
        "lookups, index probes all, show the same tail. With the bundled model every put is also",
        "embedded (concurrent single puts are grouped into one embedder call), which is most of its",
        "batch time.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--no-postgres", action="store_true", help="skip MemlaneStore on PostgreSQL")
    args = parser.parse_args()
    report = run(args.items, args.repeats, postgres=not args.no_postgres)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    args.out.with_suffix(".md").write_text(markdown(report), encoding="utf-8")
    print(markdown(report))


if __name__ == "__main__":
    main()
