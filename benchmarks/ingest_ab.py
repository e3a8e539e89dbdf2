#!/usr/bin/env python
"""Interleaved ingest A/B: two memlane source trees remember the same batches, batch by batch.

Each side is a child process that imports memlane from its tree's ``src`` (the data builders,
the precomputed embedder and the raw SQLite floor come from this tree's ``benchmarks/scale.py``)
and remembers ``scale.py``'s natural-turn episodes through ``remember_episodes`` in batches of
1,000 into a fresh SQLite file, each batch followed by the same rows into its own raw SQLite
floor (:class:`scale.RawFloor`). The parent sends batch ``k`` to one side, then to the other,
flipping the order every batch, so both trees see the same machine load; the steady figures
are the ratios (new / old, ingest / floor), not the wall times.

Usage::

    python benchmarks/ingest_ab.py --old /work/main [--new .] [--sizes 10000,100000] \
        [--out /tmp/ingest_ab.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def child(tree: str, n: int, workdir: Path) -> None:
    """One side: prepare the store and data, then remember batch ``k`` for each ``k`` read from stdin.

    Prints ``ready``, then per batch ``<remember ns> <floor ns>``. Memlane must come from ``tree``
    (its ``src`` goes first on the path, after this module's own imports, which are stdlib only).
    """
    sys.path[:0] = [str(Path(tree) / "src"), str(HERE)]
    import scale

    import memlane

    if not Path(memlane.__file__).resolve().is_relative_to(Path(tree).resolve()):
        raise SystemExit(f"memlane came from {memlane.__file__}, not from {tree}")

    data = scale.make_dataset(n, 1, 11, "natural")
    embedder = scale.PrecomputedEmbedder()
    embedder.add(data.texts, data.vectors)
    memory = scale._memory(scale.open_sqlite_store(workdir / "memlane"), embedder)
    floor = scale.RawFloor(workdir / "floor" / "floor.db")
    print("ready", flush=True)
    for line in sys.stdin:
        k = int(line)
        sl = slice(k * scale.BATCH_SIZE, min(n, (k + 1) * scale.BATCH_SIZE))
        items = scale.batch_inputs(data, sl)
        t0 = time.perf_counter_ns()
        batch = memory.remember_episodes(items)
        took = time.perf_counter_ns() - t0
        print(took, floor.insert(scale.RawFloor.rows(batch, data.vectors[sl])), flush=True)
    memory.close()
    floor.close()


def _side(samples: list[tuple[int, int]], n: int) -> dict[str, float]:
    remember_s = sum(a for a, _ in samples) / 1e9
    floor_s = sum(b for _, b in samples) / 1e9
    return {
        "episodes_per_s": n / remember_s,
        "raw_floor_episodes_per_s": n / floor_s,
        "fraction_of_raw_floor": floor_s / remember_s,
        "batch_ms_p50": statistics.median(a for a, _ in samples) / 1e6,
    }


def run(old: str, new: str, n: int, workroot: Path) -> dict[str, Any]:
    """Both trees at ``n`` episodes, interleaved by batch; the figures of each side and new/old ratios."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    kids = {
        side: subprocess.Popen(
            [sys.executable, __file__, "--child", tree, str(n), str(workroot / f"{side}_{n}")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        for side, tree in (("old", old), ("new", new))
    }
    for kid in kids.values():
        assert kid.stdout is not None and kid.stdout.readline().strip() == "ready"
    samples: dict[str, list[tuple[int, int]]] = {side: [] for side in kids}
    load_start = os.getloadavg()
    for k in range(-(-n // 1000)):
        for side in ("old", "new") if k % 2 == 0 else ("new", "old"):
            kid = kids[side]
            assert kid.stdin is not None and kid.stdout is not None
            kid.stdin.write(f"{k}\n")
            kid.stdin.flush()
            took, floor = kid.stdout.readline().split()
            samples[side].append((int(took), int(floor)))
    for kid in kids.values():
        assert kid.stdin is not None
        kid.stdin.close()
        kid.wait()
    figures: dict[str, Any] = {side: _side(s, n) for side, s in samples.items()}
    figures["episodes"] = n
    figures["load_average_start_end"] = [load_start, os.getloadavg()]
    figures["new_over_old_episodes_per_s"] = (
        figures["new"]["episodes_per_s"] / figures["old"]["episodes_per_s"]
    )
    figures["new_over_old_batch_time_p50"] = statistics.median(
        a / b for (a, _), (b, _) in zip(samples["new"], samples["old"], strict=True)
    )
    return figures


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, run every size, print and write the JSON figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", help="the baseline tree (a checkout with src/memlane)")
    parser.add_argument("--new", default=str(HERE.parent), help="the tree under test (default: this one)")
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--out", default=str(Path(tempfile.gettempdir()) / "ingest_ab.json"))
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child[0], int(args.child[1]), Path(args.child[2]))
        return 0
    if not args.old:
        parser.error("--old is required")
    workroot = Path(tempfile.mkdtemp(prefix="ingest_ab_"))
    try:
        results = [run(args.old, args.new, int(size), workroot) for size in args.sizes.split(",")]
    finally:
        shutil.rmtree(workroot, ignore_errors=True)
    text = json.dumps({"old": args.old, "new": args.new, "runs": results}, indent=2)
    Path(args.out).write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
