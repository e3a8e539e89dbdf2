"""How fast memlane starts: the CLI, a structured lookup, the servers' handshakes, the first recall.

Every figure is a fresh process (issue #24 item 7), run ``--repeat`` times and reported as the
median and the minimum (the minimum is the least disturbed run on a shared machine):

* ``python -c pass`` (the interpreter alone: the baseline of the ratios); ``import memlane``;
  ``memlane --help`` and a few subcommands' ``--help``; ``memlane recall`` without a query (a structured
  lookup, newest first) over a small database; ``memlane recall QUERY`` (embeds the query: the
  model loads);
* ``memlane mcp`` over stdio: from the process start to the ``initialize`` answer;
* ``memlane mcp --transport streamable-http``: to the first answered ``initialize`` POST, and to
  the first answered ``tools/list`` (which needs the SDK and the store: the whole load);
* ``memlane serve``: to the first answered ``GET /health``, and to the first ``GET /v1/episodes``
  (the whole load);
* in Python: the first ``recall_episodes(query)`` of a fresh process (the bundled model loads) and
  the second one;
* the first vector search of a fresh process over a store just bulk-loaded with ``--bulk-rows``
  random 384-d vectors (above the 50,000-row ANN threshold; no ``<db>.vectors``/``<db>.ivf`` yet),
  and, where the tree has it, ``store.optimize()`` followed by the first search of another process.

Wall seconds, and CPU seconds (user + system of the child) where the child exits by itself.
With ``--baseline-src DIR`` (e.g. the main branch's ``src``) every figure is also measured with
that source tree first on ``PYTHONPATH``, interleaved run by run with this one, so the two are
compared under the same load. Nothing is asserted. Writes ``--out`` (JSON) and a Markdown table
next to it.

Usage::

    .venv/bin/python benchmarks/starts.py [--repeat 7] [--baseline-src ../../main/src]
        [--out benchmarks/results/starts.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from _results import write_results

from memlane import __version__
from memlane.config.file import hash_api_key

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "starts.json"
KEY = "mlk_starts-benchmark-0123456789abcdef"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "starts", "version": "0"},
    },
}
FIRST_RECALL = """
import json, sys, time
from memlane import EpisodicMemory
with EpisodicMemory.open(sys.argv[1], tenant_id="bench", session_id="s") as memory:
    t0 = time.perf_counter(); memory.recall_episodes("where does the user like to sit?")
    t1 = time.perf_counter(); memory.recall_episodes("which invoice was paid?")
    t2 = time.perf_counter()
print(json.dumps({"first_recall_s": t1 - t0, "second_recall_s": t2 - t1}))
"""

BULK_RECALL = """
import json, sys, time
import numpy as np
from memlane.stores.base import EpisodeFilter
from memlane.stores.sqlite import SQLiteStore
query = np.random.default_rng(1).normal(size=384).astype(np.float32)
query /= np.linalg.norm(query)
out = {}
store = SQLiteStore(sys.argv[1])
if sys.argv[2] == "optimize":
    if not hasattr(store, "optimize"):
        print(json.dumps(out)); raise SystemExit
    t0 = time.perf_counter(); store.optimize(); out["optimize_s"] = time.perf_counter() - t0
    store.close(); store = SQLiteStore(sys.argv[1])
t0 = time.perf_counter(); store.vector_candidates(EpisodeFilter(), query, 100)
t1 = time.perf_counter(); store.vector_candidates(EpisodeFilter(), query, 100)
out.update(first_search_s=t1 - t0, second_search_s=time.perf_counter() - t1)
print(json.dumps(out))
"""

Measure = Callable[[dict[str, str], Path], dict[str, float]]


BYTECODE = Path(tempfile.gettempdir()) / "memlane-starts-pycache"
"""Where the children write and read their bytecode (``PYTHONPYCACHEPREFIX``): every tree runs from
compiled files, as an installed package does, even where the environment sets
``PYTHONDONTWRITEBYTECODE`` (which would compile every module on every start), and no tree's
source directory is written to."""


def env_for(src: str | None) -> dict[str, str]:
    """The child's environment: ``src`` first on ``PYTHONPATH`` (the baseline), no MEMLANE_* variables,
    bytecode cached under :data:`BYTECODE`."""
    dropped = {"PYTHONPATH", "PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX"}
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLANE_") and k not in dropped}
    env["PYTHONPYCACHEPREFIX"] = str(BYTECODE)
    if src is not None:
        env["PYTHONPATH"] = src
    return env


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(args: list[str], env: dict[str, str], cwd: Path) -> dict[str, float]:
    """Wall and CPU seconds of one child run to its exit."""
    cpu, start = _children_cpu(), time.perf_counter()
    subprocess.run(args, env=env, cwd=cwd, capture_output=True, check=True)
    return {"wall_s": time.perf_counter() - start, "cpu_s": _children_cpu() - cpu}


def cli(*args: str) -> Measure:
    return lambda env, work: run_once([sys.executable, "-m", "memlane", "--db", "bench.db", *args], env, work)


def python(code: str) -> Measure:
    """``python -c code``: ``pass`` is the ratio baseline (the interpreter's own start)."""
    return lambda env, work: run_once([sys.executable, "-c", code], env, work)


def _process_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def mcp_stdio(env: dict[str, str], work: Path) -> dict[str, float]:
    """Seconds from starting ``memlane mcp`` (stdio) to its ``initialize`` answer."""
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "memlane", "--db", "bench.db", "mcp"],
        env=env,
        cwd=work,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write((json.dumps(INITIALIZE) + "\n").encode())
    process.stdin.flush()
    answer = process.stdout.readline()
    wall = time.perf_counter() - start
    cpu = _process_cpu(process.pid)
    process.stdin.close()
    process.wait(30)
    if b'"result"' not in answer:
        raise RuntimeError(f"memlane mcp answered {answer[:200]!r}")
    return {"wall_s": wall, "cpu_s": cpu}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _until_answered(
    args: list[str], env: dict[str, str], work: Path, request: Callable[[int], bool]
) -> dict[str, float]:
    """Start a server on a free port; seconds until ``request(port)`` is true (polled every 10 ms)."""
    port = _free_port()
    start = time.perf_counter()
    process = subprocess.Popen(
        [*args, "--port", str(port)], env=env, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        while time.perf_counter() - start < 120:
            try:
                if request(port):
                    return {"wall_s": time.perf_counter() - start, "cpu_s": _process_cpu(process.pid)}
            except httpx.TransportError:
                pass
            if process.poll() is not None:
                raise RuntimeError(f"{args} exited with {process.returncode}")
            time.sleep(0.01)
        raise RuntimeError(f"{args} did not answer")
    finally:
        process.terminate()
        process.wait(30)


def http_get(path: str) -> Measure:
    """Seconds from starting ``memlane serve`` to its first ``GET path`` 200 (with the API key)."""
    args = [sys.executable, "-m", "memlane", "--config", "memlane.yaml", "serve", "--log-level", "warning"]
    headers = {"Authorization": f"Bearer {KEY}"}

    def answered(port: int) -> bool:
        return httpx.get(f"http://127.0.0.1:{port}{path}", headers=headers, timeout=60).status_code == 200

    return lambda env, work: _until_answered(args, env, work, answered)


MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
TOOLS_LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


def mcp_http(request: dict[str, Any], headers: dict[str, str]) -> Measure:
    """Seconds from starting ``memlane mcp --transport streamable-http`` to an answered ``request``."""
    args = [sys.executable, "-m", "memlane", "--db", "bench.db", "mcp", "--transport", "streamable-http"]

    def answered(port: int) -> bool:
        url = f"http://127.0.0.1:{port}/mcp"
        reply = httpx.post(url, json=request, headers={**MCP_HEADERS, **headers}, timeout=60)
        return reply.status_code == 200 and '"result"' in reply.text

    return lambda env, work: _until_answered(args, env, work, answered)


def in_process(script: str, *args: str, fresh_bulk: bool = False) -> Measure:
    """A case that runs ``script`` in a child and reads the figures it prints as JSON."""

    def run(env: dict[str, str], work: Path) -> dict[str, float]:
        if fresh_bulk:  # the state right after a bulk load: no sidecar, no ANN lists
            for suffix in (".vectors", ".ivf", ".vectors.lock", ".ivf.lock"):
                (work / f"bulk.db{suffix}").unlink(missing_ok=True)
        done = subprocess.run(
            [sys.executable, "-c", script, *args],
            env=env,
            cwd=work,
            capture_output=True,
            text=True,
            check=True,
        )
        figures: dict[str, float] = json.loads(done.stdout)
        return figures

    return run


CASES: dict[str, Measure] = {
    "python -c pass (baseline)": python("pass"),
    "import memlane": python("import memlane"),
    "memlane --help": cli("--help"),
    "memlane recall --help": cli("recall", "--help"),
    "memlane sessions search --help": cli("sessions", "search", "--help"),
    "memlane facts add --help": cli("facts", "add", "--help"),
    "memlane eval --help": cli("eval", "--help"),
    "memlane recall (no query)": cli("recall", "--limit", "5"),
    "memlane recall QUERY": cli("recall", "window seats", "--limit", "5"),
    "memlane mcp: initialize (stdio)": mcp_stdio,
    "memlane mcp: initialize (streamable HTTP)": mcp_http(INITIALIZE, {}),
    "memlane mcp: first tools/list (streamable HTTP)": mcp_http(
        TOOLS_LIST, {"MCP-Protocol-Version": "2025-06-18"}
    ),
    "memlane serve: GET /health": http_get("/health"),
    "memlane serve: first GET /v1/episodes": http_get("/v1/episodes"),
    "first recall_episodes in a process": in_process(FIRST_RECALL, "bench.db"),
    "first vector search after a bulk load": in_process(BULK_RECALL, "bulk.db", "search", fresh_bulk=True),
    "optimize() after a bulk load, then a search": in_process(
        BULK_RECALL, "bulk.db", "optimize", fresh_bulk=True
    ),
}


def bulk_load(work: Path, rows: int) -> None:
    """``bulk.db``: ``rows`` episodes with random unit 384-d vectors, inserted in batches of 5,000."""
    from datetime import UTC, datetime, timedelta

    import numpy as np

    from memlane.models import Episode
    from memlane.stores.sqlite import SQLiteStore

    rng = np.random.default_rng(0)
    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    store = SQLiteStore(work / "bulk.db", vector_sidecar=False)
    store.bind_embedding_model("random-384", 384)
    for first in range(0, rows, 5000):
        n = min(5000, rows - first)
        vectors = rng.normal(size=(n, 384)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        at = [t0 + timedelta(seconds=first + i) for i in range(n)]
        episodes = [
            Episode(
                id=f"{first + i:032x}",
                tenant_id="bench",
                session_id=f"s{(first + i) % 50}",
                event_type="turn",
                content=f"turn {first + i}",
                tags=(),
                importance=None,
                created_at=at[i],
                valid_from=at[i],
                recorded_at=at[i],
            )
            for i in range(n)
        ]
        store.insert(episodes, vectors)
    store.close()


def prepare(work: Path) -> None:
    """A small database made with the bundled model, and a server configuration with one key."""
    (work / "memlane.yaml").write_text(
        "memory:\n  path: bench.db\nserver:\n  host: 127.0.0.1\n"
        f"  api_keys:\n    '{hash_api_key(KEY)}': bench\n",
        encoding="utf-8",
    )
    for content in (
        "User prefers window seats",
        "Invoice 4471 was paid on Monday",
        "Deploys go out on Fridays",
    ):
        subprocess.run(
            [
                sys.executable,
                "-m",
                "memlane",
                "--db",
                "bench.db",
                "--tenant",
                "bench",
                "remember",
                "note",
                content,
            ],
            env=env_for(None),
            cwd=work,
            capture_output=True,
            check=True,
        )


def summarise(runs: list[dict[str, float]]) -> dict[str, dict[str, float]]:
    return {
        key: {"median": statistics.median(r[key] for r in runs), "min": min(r[key] for r in runs)}
        for key in runs[0]
    }


def measure(repeat: int, baseline_src: str | None, only: list[str] | None, bulk_rows: int) -> dict[str, Any]:
    """Run every case ``repeat`` times per source tree, interleaved; the summary per case and tree."""
    trees = {"this": None} if baseline_src is None else {"baseline": baseline_src, "this": None}
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="memlane-starts-") as tmp:
        work = Path(tmp)
        prepare(work)
        if not only or any("bulk" in o for o in only):
            bulk_load(work, bulk_rows)
        for name, case in CASES.items():
            if only and not any(o in name for o in only):
                continue
            runs: dict[str, list[dict[str, float]]] = {tree: [] for tree in trees}
            case(env_for(None), work)  # warm the file cache
            for i in range(repeat):
                order = list(trees) if i % 2 == 0 else list(reversed(trees))
                for tree in order:
                    runs[tree].append(case(env_for(trees[tree]), work))
            results[name] = {tree: summarise(r) for tree, r in runs.items() if r and r[0]}
            print(name, json.dumps(results[name]), flush=True)
    return results


PASS = "python -c pass (baseline)"


def _cell(figures: dict[str, dict[str, float]], interpreter: float | None) -> str:
    """``wall 0.170 (0.160), 4.1x pass; cpu ...``: median (min), the wall median over ``python -c pass``."""
    parts = []
    for key, value in figures.items():
        text = f"{key.removesuffix('_s').replace('_', ' ')} {value['median']:.3f} ({value['min']:.3f})"
        if key == "wall_s" and interpreter:
            text += f", {value['median'] / interpreter:.1f}x pass"
        parts.append(text)
    return "; ".join(parts)


def to_markdown(document: dict[str, Any]) -> str:
    trees = document["trees"]
    results = document["results"]
    interpreter = {
        tree: results.get(PASS, {}).get(tree, {}).get("wall_s", {}).get("median") for tree in trees
    }
    compared = len(trees) == 2
    lines = [
        "# Starts (benchmarks/starts.py)",
        "",
        f"Fresh processes, {document['repeat']} runs each, the trees interleaved run by run; median (min) "
        f"seconds. {document['machine']}; load average at start {document['load_average']} (other work on "
        f"the machine). Command: `{document['command']}`.",
        "",
        "| case | " + " | ".join(trees) + (" | this / baseline (wall median) |" if compared else " |"),
        "|---|" + "---|" * (len(trees) + compared),
    ]
    for name, per_tree in results.items():
        cells = [_cell(per_tree.get(tree, {}), interpreter[tree]) or "(not in this tree)" for tree in trees]
        if compared:
            walls = [per_tree.get(tree, {}).get("wall_s", {}).get("median") for tree in trees]
            cells.append(f"{walls[1] / walls[0]:.2f}" if walls[0] and walls[1] else "")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "wall = from the process start to its exit, or to the answer (servers); cpu = user + system seconds "
        "of the child by then; `Nx pass` = the wall median over `python -c pass` in the same run and tree. "
        "In-process figures (first recall, bulk cases) are timed inside the child. "
        "`baseline` is the source tree given by `--baseline-src`, measured in the same run.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument(
        "--baseline-src", default=None, help="a source tree to compare with (its src/ directory)"
    )
    parser.add_argument(
        "--only", nargs="*", default=None, help="run only cases whose name contains one of these"
    )
    parser.add_argument("--bulk-rows", type=int, default=60_000, help="rows of the bulk-load cases")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    results = measure(args.repeat, args.baseline_src, args.only, args.bulk_rows)
    document = {
        "command": " ".join(["benchmarks/starts.py", *sys.argv[1:]]),
        "memlane": __version__,
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "repeat": args.repeat,
        "trees": ["baseline", "this"] if args.baseline_src else ["this"],
        "results": results,
    }
    write_results(args.out, document, to_markdown(document))
    print(to_markdown(document))


if __name__ == "__main__":
    main()
