"""Event-loop lag while ``AsyncEpisodicMemory`` works, against the duration of one store call.

The async API's promise: the event loop is never blocked for longer than it takes to hand a
call to the worker pool, whatever the calls cost. Measured here, on one SQLite file with the
real bundled embedder (all-MiniLM-L6-v2 int8) and ``--seed-episodes`` episodes (default
2,000) already stored:

1. **One call, sync**: the duration of ``recall_episodes(query)`` and ``remember_episode``
   called one at a time (p50/p99/max, ms): what a blocked loop would wait per call.
2. **Async**: ``--tasks`` coroutines at once (default 200: half remember, half recall) on one
   ``AsyncEpisodicMemory(max_workers=N)`` for each N of ``--workers`` (default 1, 2, 4),
   while a ticker coroutine sleeps 1 ms in a loop and
   records how late each wake-up is (the loop lag: p50/p99/max, ms).
3. **Control, blocking**: the same calls made directly from a coroutine with the sync API
   (what an async app gets by calling ``EpisodicMemory`` from a handler), ticker running.

Lag that remains in (2) comes from the GIL (Python code of other threads runs in between)
and the scheduler, not from a store call on the loop; (3) shows lag of the order of a call.
Figures depend on the machine: they are written to ``benchmarks/results/async_loop.{json,md}``
and never asserted in tests (the structural check, no store call on the loop thread, is
``tests/aio/test_loop_thread.py``).

Usage::

    .venv/bin/python benchmarks/async_loop.py [--seed-episodes 2000] [--tasks 200] [--workers 1,2,4]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import numpy as np
from _results import write_results

from memlane import (
    AsyncEpisodicMemory,
    EpisodeInput,
    EpisodicMemory,
    LocalEmbedder,
    MemoryConfig,
    SQLiteStore,
)

RESULTS = Path(__file__).resolve().parent / "results"
TICK_S = 0.001
TOPICS = (
    "flight",
    "hotel",
    "invoice",
    "meeting",
    "deploy",
    "refund",
    "vendor",
    "password",
    "laptop",
    "lunch",
)
VERBS = ("booked", "cancelled", "asked about", "reported", "approved", "moved", "forgot", "renewed")


def _text(rng: random.Random, i: int) -> str:
    return f"Customer {i % 97} {rng.choice(VERBS)} the {rng.choice(TOPICS)} #{i} on day {rng.randint(1, 365)}"


def _ms(values: list[float]) -> dict[str, float]:
    arr = np.asarray(values) * 1000.0
    return {
        "n": len(values),
        "p50_ms": round(float(np.percentile(arr, 50)), 3),
        "p99_ms": round(float(np.percentile(arr, 99)), 3),
        "max_ms": round(float(arr.max()), 3),
    }


async def _with_ticker(work: Callable[[], Awaitable[None]]) -> tuple[list[float], float]:
    """Run ``work`` while a ticker records each 1 ms sleep's lateness; return (lags, wall seconds)."""
    lags: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        while not done.is_set():
            start = time.perf_counter()
            await asyncio.sleep(TICK_S)
            lags.append(max(0.0, time.perf_counter() - start - TICK_S))

    tick = asyncio.create_task(ticker())
    await asyncio.sleep(0.05)  # the ticker is running before the work starts
    start = time.perf_counter()
    await work()
    wall = time.perf_counter() - start
    done.set()
    await tick
    return lags, wall


def run(seed_episodes: int, tasks: int, workers: list[int], seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    load_before = round(os.getloadavg()[0], 2)
    embedder = LocalEmbedder()
    embedder.embed(["warm up"])
    with tempfile.TemporaryDirectory() as scratch:
        memory = EpisodicMemory(
            SQLiteStore(Path(scratch) / "bench.db"),
            embedder,
            tenant_id="bench",
            config=MemoryConfig(scope="tenant", default_limit=10),
        )
        for start in range(0, seed_episodes, 500):
            memory.remember_episodes(
                [EpisodeInput("note", _text(rng, i)) for i in range(start, min(start + 500, seed_episodes))]
            )
        queries = [
            f"what did customer {rng.randint(0, 96)} do with the {rng.choice(TOPICS)}?" for _ in range(tasks)
        ]

        recall_s, remember_s = [], []
        for i in range(50):
            t0 = time.perf_counter()
            memory.recall_episodes(queries[i % len(queries)])
            recall_s.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            memory.remember_episode("note", _text(rng, seed_episodes + i))
            remember_s.append(time.perf_counter() - t0)

        def async_work(twin: AsyncEpisodicMemory, round_: int) -> Callable[[], Awaitable[None]]:
            async def work() -> None:
                calls: list[Awaitable[Any]] = []
                for i in range(tasks):
                    if i % 2:
                        calls.append(twin.recall_episodes(queries[i]))
                    else:
                        calls.append(
                            twin.remember_episode("note", _text(rng, (10 + round_) * seed_episodes + i))
                        )
                await asyncio.gather(*calls)

            return work

        async def blocking_work() -> None:
            for i in range(tasks // 4):  # fewer calls: the loop is blocked for all of them
                if i % 2:
                    memory.recall_episodes(queries[i])
                else:
                    memory.remember_episode("note", _text(rng, 20 * seed_episodes + i))
                await asyncio.sleep(0)

        async def sweep() -> tuple[dict[int, tuple[list[float], float]], tuple[list[float], float]]:
            by_workers = {}
            for round_, n in enumerate(workers):
                twin = AsyncEpisodicMemory(memory, max_workers=n, owns_memory=False)
                by_workers[n] = await _with_ticker(async_work(twin, round_))
                await twin.close()
            return by_workers, await _with_ticker(blocking_work)

        by_workers, (block_lags, block_wall) = asyncio.run(sweep())
        memory.close()

    return {
        "benchmark": "async_loop",
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "load_average_1min_before": load_before,
        },
        "setup": {
            "store": "SQLite file",
            "embedder": embedder.model_id,
            "seed_episodes": seed_episodes,
            "tasks": tasks,
            "workers": workers,
            "tick_ms": TICK_S * 1000,
            "seed": seed,
        },
        "single_call_sync": {"recall_episodes": _ms(recall_s), "remember_episode": _ms(remember_s)},
        "async": [
            {
                "workers": n,
                "loop_lag": _ms(lags),
                "wall_s": round(wall, 3),
                "calls_per_s": round(tasks / wall, 1),
            }
            for n, (lags, wall) in by_workers.items()
        ],
        "blocking_control": {
            "calls": tasks // 4,
            "loop_lag": _ms(block_lags),
            "wall_s": round(block_wall, 3),
        },
    }


def markdown(report: dict[str, Any]) -> str:
    s, b = report["setup"], report["blocking_control"]
    one = report["single_call_sync"]
    rows = [
        ("one `recall_episodes(query)`, sync", one["recall_episodes"]),
        ("one `remember_episode`, sync", one["remember_episode"]),
        *(
            (f"loop lag, async API, {a['workers']} worker(s), {s['tasks']} tasks", a["loop_lag"])
            for a in report["async"]
        ),
        (f"loop lag, sync API called on the loop ({b['calls']} calls)", b["loop_lag"]),
    ]
    lines = [
        "# Event-loop lag with AsyncEpisodicMemory",
        "",
        f"SQLite file, {s['embedder']}, {s['seed_episodes']} episodes stored first; a ticker sleeps "
        f"{s['tick_ms']:g} ms in a loop and records how late it wakes. Machine: "
        f"{report['machine']['cpus']} CPUs (1-min load average "
        f"{report['machine']['load_average_1min_before']} before the run), "
        f"Python {report['machine']['python']}. "
        "Produced by `benchmarks/async_loop.py`.",
        "",
        "| what | n | p50 ms | p99 ms | max ms |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    lines += [f"| {name} | {v['n']} | {v['p50_ms']} | {v['p99_ms']} | {v['max_ms']} |" for name, v in rows]
    lines += [
        "",
        "Async throughput: "
        + ", ".join(f"{a['calls_per_s']} calls/s with {a['workers']} worker(s)" for a in report["async"])
        + ".",
        "",
        "Reading: no store or embedder call runs on the loop with the async API (checked structurally",
        "in tests/aio/test_loop_thread.py); the lag that remains is the loop waiting for the GIL and a",
        "CPU while worker threads run Python code (ranking, row decoding), so it grows with the number",
        "of workers per core and with the machine's load. Calling the sync API from a coroutine",
        "delays the loop by whole calls.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed-episodes", type=int, default=2000)
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--workers", default="1,2,4", help="comma-separated pool sizes to measure")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=RESULTS / "async_loop.json")
    args = parser.parse_args()
    workers = [int(w) for w in args.workers.split(",")]
    report = run(args.seed_episodes, args.tasks, workers, args.seed)
    write_results(args.out, report, markdown(report))
    print(markdown(report))


if __name__ == "__main__":
    main()
