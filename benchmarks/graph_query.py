"""Speed of a fact query for one entity in a knowledge graph of 100k facts (SQLite; issue #21 target).

Builds one SQLite file with ``--facts`` facts (default 100,000) over ``--entities`` subject
entities (default 5,000: 20 facts each, a quarter of them retired by a later value of a
single-valued predicate, the objects drawn from 2,000 shared entities), written in bulk through
the store's ``GraphStore`` (``write_entities``/``insert_facts``), then times through the public
facade, on a warm file:

* ``query_facts(entity)`` (current facts, subject or object),
* ``query_facts(entity, as_of=...)`` (valid time, retired rows included),
* ``neighbours(entity, depth=2)`` (a recursive CTE),

each for ``--queries`` random entities (default 1,000), reporting p50/p95/p99 in milliseconds.
Target: p95 <= 5 ms for the first. Timings depend on the machine (2 shared cores here).

Usage::

    .venv/bin/python benchmarks/graph_query.py [--facts 100000] [--out benchmarks/results/graph_query.json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from _results import write_results

from memlane import EpisodicMemory, FrozenClock, MemoryConfig, SQLiteStore
from memlane.embeddings.fake import HashingEmbedder
from memlane.stores.graph_base import EntityWrite, Fact, FactClosure

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "results" / "graph_query.json"
T0 = datetime(2024, 1, 1, tzinfo=UTC)
PREDICATES = ("likes", "knows", "visited", "uses", "member_of", "reads")
SINGLE = ("lives_in", "works_at", "subscription_tier")


def build(store: SQLiteStore, facts: int, entities: int, rng: random.Random) -> None:
    """Write ``facts`` facts over ``entities`` subjects in tenant ``bench`` (bulk, in batches)."""
    graph = store.graph_store
    objects = [f"thing {i}" for i in range(2000)]
    names = [f"customer_{i}" for i in range(entities)] + objects
    graph.write_entities("bench", [EntityWrite(n, n, "thing", n, T0) for n in names])
    per = facts // entities
    batch: list[Fact] = []
    closures: list[FactClosure] = []
    for e in range(entities):
        for k in range(per):
            at = T0 + timedelta(days=k)
            single = k % 4 == 0
            predicate = SINGLE[k % 3] if single else PREDICATES[k % len(PREDICATES)]
            fid = f"f{e:06d}{k:03d}"
            batch.append(
                Fact(
                    fid,
                    "bench",
                    "s",
                    f"customer_{e}",
                    predicate,
                    rng.choice(objects),
                    None,
                    at,
                    None,
                    at,
                    confidence=0.9,
                    method="import",
                    raw_predicate=predicate,
                )
            )
            if single and k >= 12:  # a later value of the same single-valued predicate retires it
                closures.append(FactClosure(f"f{e:06d}{k - 12:03d}", fid, at, at, "bench", "bench"))
        if len(batch) >= 20_000:
            graph.insert_facts(batch)
            graph.insert_facts([], closures)
            batch, closures = [], []
    graph.insert_facts(batch)
    graph.insert_facts([], closures)


def _time(call: Any, entities: list[str]) -> dict[str, float]:
    samples = []
    for entity in entities:
        start = time.perf_counter()
        call(entity)
        samples.append((time.perf_counter() - start) * 1000)
    values = np.asarray(samples)
    return {f"p{q}": round(float(np.percentile(values, q)), 3) for q in (50, 95, 99)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--entities", type=int, default=5_000)
    parser.add_argument("--queries", type=int, default=1_000)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    rng = random.Random(21)
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteStore(str(Path(tmp) / "graph.db"))
        started = time.perf_counter()
        build(store, args.facts, args.entities, rng)
        built = time.perf_counter() - started
        memory = EpisodicMemory(
            store,
            HashingEmbedder(),
            config=MemoryConfig(scope="tenant"),
            clock=FrozenClock(T0 + timedelta(days=60)),
            tenant_id="bench",
        )
        sample = [f"customer_{rng.randrange(args.entities)}" for _ in range(args.queries)]
        _time(memory.query_facts, sample[:50])  # warm the file's pages
        report = {
            "load_average_1m": round(os.getloadavg()[0], 1),
            "facts": memory.graph_stats().facts,
            "entities": args.entities,
            "queries": args.queries,
            "build_seconds": round(built, 1),
            "query_facts_ms": _time(memory.query_facts, sample),
            "query_facts_as_of_ms": _time(
                lambda e: memory.query_facts(e, as_of=T0 + timedelta(days=5)), sample
            ),
            "neighbours_depth2_ms": _time(lambda e: memory.neighbours(e, 2), sample[:200]),
            "facts_per_query": round(float(np.mean([len(memory.query_facts(e)) for e in sample[:100]])), 1),
        }
        memory.close()
    q = report["query_facts_ms"]
    md = [
        "# Knowledge graph: fact query speed (SQLite)",
        "",
        f"`benchmarks/graph_query.py`: {report['facts']:,} facts over {args.entities:,} subjects "
        f"(2,000 shared objects), {args.queries:,} random entities, warm file, this machine (2 cores "
        f"shared by other jobs: load average {report['load_average_1m']} at the start of the timings; "
        "p95 and p99 follow it). "
        f"Built in {report['build_seconds']} s through the bulk store API.",
        "",
        "| query | p50 ms | p95 ms | p99 ms |",
        "|---|---:|---:|---:|",
    ]
    for name in ("query_facts_ms", "query_facts_as_of_ms", "neighbours_depth2_ms"):
        r = report[name]
        md.append(f"| `{name[:-3]}` | {r['p50']} | {r['p95']} | {r['p99']} |")
    md += [
        "",
        f"Target p95 <= 5 ms for `query_facts`: **{'met' if q['p95'] <= 5 else 'missed'}** ({q['p95']} ms).",
    ]
    write_results(args.out, report, "\n".join(md) + "\n")
    print(json.dumps(report))


if __name__ == "__main__":
    main()
