"""The bundled model's speed under onnxruntime thread policies, idle and with a core busy (issue #24 item 6).

Texts: the turns of LoCoMo conversations 0-1 (``"<speaker>: <text>"``, the form the LoCoMo
benchmark stores; ``--locomo``, default :func:`memlane.evaluation.locomo.default_locomo_path`), the
first ``--texts`` of them. For each policy, interleaved round by round:

* **batch**: ``embed(texts)`` in one call (sorted by length, ``batch_size`` a run), texts/s;
* **two calls at once**: two threads each embedding half of the texts in one call, texts/s;
* **single**: ``embed([text])`` for the 20 shortest texts one by one, the median milliseconds;
* **ingest** (the policy a user gets and the old default only): ``remember_episodes`` of the same
  turns in batches of 64 into a fresh SQLite file through :class:`memlane.EpisodicMemory` (embedding,
  validation, storage), episodes/s.

Each condition is measured twice: as the machine is, and with one extra busy process (a shell
loop this script starts and stops) keeping a core busy. Vectors are identical under every policy
(checked here on 64 of the texts: the largest absolute difference is printed). Nothing is
asserted; figures go to ``--out`` (JSON) and a Markdown table next to it.

Usage::

    .venv/bin/python benchmarks/embedder.py [--texts 512] [--rounds 3]
        [--out benchmarks/results/embedder.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from _results import write_results

from memlane import EpisodeInput, EpisodicMemory, LocalEmbedder, __version__
from memlane.evaluation.locomo import default_locomo_path, load_locomo

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "embedder.json"
LOCOMO = Path("/work/shared/datasets/locomo/locomo10.json")

POLICIES: dict[str, dict[str, Any]] = {
    "before: onnxruntime's threads, spinning, batch 32": {
        "batch_size": 32,
        "intra_op_threads": 0,
        "spinning": True,
    },
    "1 thread, spinning, batch 32": {"batch_size": 32, "intra_op_threads": 1, "spinning": True},
    "1 thread, no spinning, batch 32": {"batch_size": 32, "intra_op_threads": 1, "spinning": False},
    "1 thread, no spinning, batch 16 (the previous default)": {"batch_size": 16, "intra_op_threads": 1},
    "2 threads, no spinning, batch 16": {"batch_size": 16, "intra_op_threads": 2, "spinning": False},
    "now: adaptive (the cores shared by the calls in flight), no spinning, batch 16 (default)": {},
}
BEFORE, NOW = next(iter(POLICIES)), list(POLICIES)[-1]


def locomo_turns(path: Path, limit: int) -> list[str]:
    """The first ``limit`` turns of LoCoMo conversations 0-1."""
    conversations = load_locomo(path)[0][:2]
    texts = [f"{turn.speaker}: {turn.text}" for conv in conversations for turn in conv.turns]
    return texts[:limit]


@contextmanager
def busy_core(on: bool) -> Iterator[None]:
    """One process spinning on a core while the block runs (nothing when ``on`` is false)."""
    process = subprocess.Popen(["sh", "-c", "while :; do :; done"]) if on else None
    try:
        yield
    finally:
        if process is not None:
            process.kill()
            process.wait()


def batch_rate(embedder: LocalEmbedder, texts: list[str]) -> float:
    start = time.perf_counter()
    embedder.embed(texts)
    return len(texts) / (time.perf_counter() - start)


def pair_rate(embedder: LocalEmbedder, texts: list[str]) -> float:
    """Texts/s of two concurrent calls (threads), each embedding half of ``texts``."""
    halves = [texts[: len(texts) // 2], texts[len(texts) // 2 :]]
    workers = [threading.Thread(target=embedder.embed, args=(half,)) for half in halves]
    start = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return len(texts) / (time.perf_counter() - start)


def single_ms(embedder: LocalEmbedder, texts: list[str]) -> float:
    times = []
    for text in sorted(texts, key=len)[:20]:
        start = time.perf_counter()
        embedder.embed([text])
        times.append(1000 * (time.perf_counter() - start))
    return statistics.median(times)


def ingest_rate(embedder: LocalEmbedder, texts: list[str], workdir: Path) -> float:
    path = workdir / f"ingest-{time.monotonic_ns()}.db"
    created = datetime(2024, 1, 1, tzinfo=UTC)
    items = [EpisodeInput("turn", text, created_at=created) for text in texts]
    with EpisodicMemory.open(path, embedder=embedder, tenant_id="bench") as memory:
        start = time.perf_counter()
        for first in range(0, len(items), 64):
            memory.remember_episodes(items[first : first + 64])
        rate = len(items) / (time.perf_counter() - start)
    path.unlink()
    return rate


def measure(texts: list[str], rounds: int, workdir: Path) -> dict[str, Any]:
    """Every policy under both conditions, ``rounds`` rounds, policies interleaved within a round."""
    embedders = {name: LocalEmbedder(**options) for name, options in POLICIES.items()}
    reference = embedders[BEFORE].embed(texts[:64])
    largest_difference = max(float(np.abs(e.embed(texts[:64]) - reference).max()) for e in embedders.values())
    results: dict[str, Any] = {}
    for condition, busy in (("as is", False), ("one core busy", True)):
        runs: dict[str, dict[str, list[float]]] = {
            name: {"batch": [], "pair": [], "single": [], "ingest": []} for name in POLICIES
        }
        with busy_core(busy):
            for round_ in range(rounds):
                names = list(POLICIES) if round_ % 2 == 0 else list(reversed(POLICIES))
                for name in names:
                    runs[name]["batch"].append(batch_rate(embedders[name], texts))
                    runs[name]["pair"].append(pair_rate(embedders[name], texts))
                    runs[name]["single"].append(single_ms(embedders[name], texts))
                    if name in (BEFORE, NOW):
                        runs[name]["ingest"].append(ingest_rate(embedders[name], texts, workdir))
        results[condition] = {
            name: {key: statistics.median(values) for key, values in figures.items() if values}
            for name, figures in runs.items()
        }
        print(condition, json.dumps(results[condition], indent=1), flush=True)
    return {"largest_vector_difference": largest_difference, "conditions": results}


def to_markdown(document: dict[str, Any]) -> str:
    lines = [
        "# The bundled model's speed by thread policy (benchmarks/embedder.py)",
        "",
        f"{document['texts']} LoCoMo turns (conversations 0-1), {document['rounds']} rounds, medians; "
        f"{document['machine']}; load average at start {document['load_average']} "
        "(other work on the machine). "
        f"Command: `{document['command']}`. Largest difference between the policies' vectors: "
        f"{document['largest_vector_difference']}.",
        "",
        "| condition | policy | batch texts/s | two calls at once, texts/s | single text ms "
        "| ingest episodes/s |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for condition, per_policy in document["conditions"].items():
        for name, figures in per_policy.items():
            ingest = f"{figures['ingest']:.1f}" if "ingest" in figures else ""
            lines.append(
                f"| {condition} | {name} | {figures['batch']:.1f} | {figures['pair']:.1f} "
                f"| {figures['single']:.1f} | {ingest} |"
            )
    for condition, per_policy in document["conditions"].items():
        before, now = per_policy[BEFORE], per_policy[NOW]
        lines.append(
            f"\n{condition}: the default now embeds {now['batch'] / before['batch']:.2f}x the texts/s of "
            f"before ({now['pair'] / before['pair']:.2f}x with two calls at once), ingests "
            f"{now['ingest'] / before['ingest']:.2f}x the episodes/s, and a single text "
            f"costs {now['single'] / before['single']:.2f}x the time."
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--texts", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--locomo", type=Path, default=default_locomo_path() or LOCOMO, help="locomo10.json")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    texts = locomo_turns(args.locomo, args.texts)
    with tempfile.TemporaryDirectory(prefix="memlane-embedder-") as tmp:
        figures = measure(texts, args.rounds, Path(tmp))
    document = {
        "command": " ".join(["benchmarks/embedder.py", *sys.argv[1:]]),
        "memlane": __version__,
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "texts": len(texts),
        "rounds": args.rounds,
        "policies": POLICIES,
        **figures,
    }
    write_results(args.out, document, to_markdown(document))
    print(to_markdown(document))


if __name__ == "__main__":
    main()
