"""Cost of the knowledge graph's facts in the context block (issue #21), with the bundled model.

One SQLite file with ``--episodes`` short episodes about ten people (default 300) and two
current facts per person; ``--queries`` questions (default 60), each naming one person. Each
round times ``build_context_block`` (token budget 800, the default relevance floor) three ways in
the same process, interleaved so the machine's load hits them alike:

* ``before``: the block as it was built before facts (``include_facts=False``) with the query
  embedded once per search (:meth:`memlane.context.MemoryContext.one_query` disabled);
* ``events_only``: ``include_facts=False`` with the query embedded once for the whole block;
* ``with_facts``: the default (``include_facts=True``): one more embedder call, for the facts.

It reports the median and p95 of each round's mean per query (ms) and the ratios to ``before``,
and how many blocks held a facts item. Timings depend on the machine (2 shared cores here).

Usage::

    .venv/bin/python benchmarks/context_facts.py [--rounds 5] [--out benchmarks/results/context_facts.json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from memlane import EpisodicMemory, LocalEmbedder
from memlane.context import MemoryContext

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "results" / "context_facts.json"
NAMES = ("Ana", "Bruno", "Carla", "Dario", "Elena", "Felix", "Greta", "Hugo", "Ines", "Jonas")
CITIES = ("Lisbon", "Berlin", "Oslo", "Rome", "Porto")


def build(memory: EpisodicMemory, episodes: int, rng: random.Random) -> None:
    """Episodes about pairs of people, and where each person lives and works."""
    for i in range(episodes):
        a, b = rng.sample(NAMES, 2)
        memory.remember_episode("note", f"{a} met {b} in {rng.choice(CITIES)} to talk about project {i}")
    for name in NAMES:
        memory.remember_fact(name, "lives_in", rng.choice(CITIES))
        memory.remember_fact(name, "works_at", rng.choice(("Acme", "Globex", "Initech")))


def _mean_ms(memory: EpisodicMemory, queries: list[str], include_facts: bool) -> tuple[float, int]:
    with_facts = 0
    start = time.perf_counter()
    for query in queries:
        block = memory.sessions.build_context_block(
            query, agent_id="bench", user_id="bench", token_budget=800, include_facts=include_facts
        )
        with_facts += any(item.kind == "facts" for item in block.items)
    return (time.perf_counter() - start) / len(queries) * 1000, with_facts


def _without_memo() -> contextlib.AbstractContextManager[None]:
    return contextlib.nullcontext()


def rounds(memory: EpisodicMemory, queries: list[str], count: int) -> dict[str, Any]:
    """``count`` interleaved rounds of the three variants (module docstring)."""
    real = MemoryContext.__dict__["one_query"]
    samples: dict[str, list[float]] = {"before": [], "events_only": [], "with_facts": []}
    blocks_with_facts = 0
    _mean_ms(memory, queries[:5], True)  # warm the model and the file
    for _ in range(count):
        setattr(MemoryContext, "one_query", lambda self: _without_memo())  # noqa: B010
        samples["before"].append(_mean_ms(memory, queries, False)[0])
        setattr(MemoryContext, "one_query", real)  # noqa: B010
        samples["events_only"].append(_mean_ms(memory, queries, False)[0])
        took, blocks_with_facts = _mean_ms(memory, queries, True)
        samples["with_facts"].append(took)
    stats = {
        name: {"median_ms": round(statistics.median(v), 1), "max_ms": round(max(v), 1)}
        for name, v in samples.items()
    }
    base = stats["before"]["median_ms"]
    for name in stats:
        stats[name]["ratio_to_before"] = round(stats[name]["median_ms"] / base, 2)
    return {"variants": stats, "blocks_with_facts": blocks_with_facts}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=300)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    rng = random.Random(21)
    queries = [
        f"What did {rng.choice(NAMES)} say about the project in {rng.choice(CITIES)}?"
        for _ in range(args.queries)
    ]
    with tempfile.TemporaryDirectory() as tmp:
        memory = EpisodicMemory.open(Path(tmp) / "context.db", embedder=LocalEmbedder(), tenant_id="bench")
        build(memory, args.episodes, rng)
        load = round(os.getloadavg()[0], 1)
        found = rounds(memory, queries, args.rounds)
        memory.close()
    report = {
        "episodes": args.episodes,
        "queries": args.queries,
        "rounds": args.rounds,
        "load_average_1m": load,
        **found,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    md = [
        "# Facts in the context block: cost (SQLite, bundled model)",
        "",
        f"`benchmarks/context_facts.py`: {args.episodes} episodes about ten people, two current facts each, "
        f"{args.queries} questions naming one person each; {args.rounds} interleaved rounds in one process, "
        f"the median of the rounds' mean per block. This machine: 2 cores shared by other jobs (load average "
        f"{load} at the start). {found['blocks_with_facts']} of {args.queries} blocks held a facts item.",
        "",
        "| variant | median ms | slowest round ms | ratio to before |",
        "|---|---:|---:|---:|",
    ]
    for name, row in found["variants"].items():
        md.append(f"| `{name}` | {row['median_ms']} | {row['max_ms']} | {row['ratio_to_before']} |")
    md += [
        "",
        "`before`: no facts, the query embedded by each search (the block before this change); "
        "`events_only`: no facts, the query embedded once per block; `with_facts`: the default, one more "
        "embedder call for the facts of the named entities.",
    ]
    args.out.with_suffix(".md").write_text("\n".join(md) + "\n", encoding="utf-8")
    print(json.dumps(report))


if __name__ == "__main__":
    main()
