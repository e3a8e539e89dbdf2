"""A short HTTP load test of ``memlane serve`` on loopback: throughput, latency, errors.

Starts ``memlane --config <tmp>/memlane.yaml serve --port 0`` in a subprocess (uvicorn, one
worker, a fresh SQLite file or a PostgreSQL URL), waits for it, then runs ``--clients``
threads, each with its own keep-alive ``httpx.Client``, sending a fixed mix until
``--requests`` requests were sent or ``--seconds`` passed, whichever comes first:

* 50 % ``POST /v1/episodes`` (remember; a tag from 20 and importance 1-10),
* 35 % ``POST /v1/recall`` with a query (ranked recall, limit 10),
* 10 % ``GET /v1/episodes`` (newest first, limit 10),
* 5 % a hostile ``POST /v1/episodes`` (lone surrogate, blank content, ``limit: "5"`` ...)
  that must get a 422 — and must not cost the connection.

Every response is checked (status as expected, JSON body); counted per kind are requests,
errors (unexpected status), p50/p95/p99 latency and reconnects (a request that had to open
a new TCP connection). Embedder: ``hashing`` by default (measures the HTTP and storage path;
``--embedder local`` runs the bundled model on every remember and recall). Loopback only;
nothing is asserted. Writes ``--out`` (JSON) and a Markdown table next to it.

Usage::

    .venv/bin/python benchmarks/http_load.py [--clients 8] [--requests 3000] [--seconds 60]
        [--backend sqlite|postgres --postgres-url URL] [--embedder hashing|local]
        [--out benchmarks/results/http_load.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from _results import write_results

from memlane import __version__
from memlane.config.file import hash_api_key

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "http_load.json"
KEY = "mlk_http-load-benchmark-0123456789"
SEED = 13
HOSTILE = [
    {"event_type": "note", "content": "bad \udc00 text"},
    {"event_type": "note", "content": "\u200b"},
    {"event_type": "note", "content": "ok", "importance": "8"},
    {"event_type": "note", "content": "ok", "tenant_id": "other"},
    {"event_type": "note", "content": "ok", "metadata": {"k\udc00": 1}},
]
WORDS = ["deploy", "rollback", "staging", "window", "seat", "flight", "invoice", "vendor", "ticket", "outage"]


@dataclass
class Kind:
    """Figures of one request kind."""

    latencies_ms: list[float] = field(default_factory=list)
    errors: int = 0
    reconnects: int = 0


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def _git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def _drain(stream: Any) -> None:
    """Read the server's log so it never blocks on a full pipe."""
    for _ in stream:
        pass


def start_server(workdir: Path, backend: str, postgres_url: str | None, embedder: str) -> tuple[Any, str]:
    """Start ``memlane serve`` on a free loopback port; return the process and its base URL."""
    memory = (
        "memory:\n  path: load.db\n"
        if backend == "sqlite"
        else f"memory:\n  type: postgres\n  dsn: {postgres_url}\n  schema: memlane_http_load\n"
    )
    provider = "hashing" if embedder == "hashing" else "local"
    (workdir / "memlane.yaml").write_text(
        f"{memory}episodic_memory:\n  embedding_provider: {provider}\n  scope: tenant\n"
        f"server:\n  host: 127.0.0.1\n  port: 0\n  api_keys:\n    '{hash_api_key(KEY)}': load\n",
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLANE_")}
    process = subprocess.Popen(
        [sys.executable, "-m", "memlane", "--config", "memlane.yaml", "serve", "--log-level", "info"],
        cwd=workdir,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    assert process.stderr is not None
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        if not line:
            break
        match = re.search(r"running on (http://127\.0\.0\.1:\d+)", line)
        if match:
            threading.Thread(target=_drain, args=(process.stderr,), daemon=True).start()
            return process, match.group(1)
    process.kill()
    raise RuntimeError("memlane serve did not start")


def run_client(
    url: str, client_id: int, budget: list[int], lock: threading.Lock, stop_at: float, kinds: dict[str, Kind]
) -> None:
    """Send requests until the shared budget is spent or time is up."""
    rng = random.Random(SEED + client_id)
    ports: set[Any] = set()
    with httpx.Client(base_url=url, headers={"X-API-Key": KEY}, timeout=60) as client:
        while time.monotonic() < stop_at:
            with lock:
                if budget[0] <= 0:
                    return
                budget[0] -= 1
            roll = rng.random()
            words = " ".join(rng.sample(WORDS, 4))
            if roll < 0.50:
                kind, expect = "remember", 201
                request = client.build_request(
                    "POST",
                    "/v1/episodes",
                    json={
                        "event_type": "note",
                        "content": f"client {client_id}: {words}",
                        "tags": [f"t{rng.randrange(20)}"],
                        "importance": rng.randint(1, 10),
                    },
                )
            elif roll < 0.85:
                kind, expect = "recall", 200
                request = client.build_request("POST", "/v1/recall", json={"query": words, "limit": 10})
            elif roll < 0.95:
                kind, expect = "list", 200
                request = client.build_request("GET", "/v1/episodes", params={"limit": 10})
            else:
                kind, expect = "hostile", 422
                body = json.dumps(rng.choice(HOSTILE)).encode("ascii")
                request = client.build_request(
                    "POST", "/v1/episodes", content=body, headers={"content-type": "application/json"}
                )
            t0 = time.perf_counter()
            try:
                response = client.send(request)
                response.json()
                ok = response.status_code == expect
                port = response.extensions["network_stream"].get_extra_info("client_addr")
            except (httpx.HTTPError, ValueError):
                ok, port = False, None
            elapsed = (time.perf_counter() - t0) * 1000
            with lock:
                figures = kinds[kind]
                figures.latencies_ms.append(elapsed)
                figures.errors += not ok
                if port is not None and port not in ports:
                    figures.reconnects += len(ports) > 0  # the first connection is not a reconnect
                    ports.add(port)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--postgres-url", default=None)
    parser.add_argument("--embedder", choices=["hashing", "local"], default="hashing")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    if args.backend == "postgres" and not args.postgres_url:
        parser.error("--backend postgres needs --postgres-url")

    with tempfile.TemporaryDirectory(prefix="memlane-http-load-") as tmp:
        process, url = start_server(Path(tmp), args.backend, args.postgres_url, args.embedder)
        try:
            with httpx.Client(base_url=url, timeout=30) as warm:
                warm.get("/health")
            kinds = {name: Kind() for name in ("remember", "recall", "list", "hostile")}
            budget, lock = [args.requests], threading.Lock()
            t0 = time.perf_counter()
            stop_at = time.monotonic() + args.seconds
            threads = [
                threading.Thread(target=run_client, args=(url, c, budget, lock, stop_at, kinds))
                for c in range(args.clients)
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            wall = time.perf_counter() - t0
        finally:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()

    sent = sum(len(k.latencies_ms) for k in kinds.values())
    result: dict[str, Any] = {
        "config": {
            "clients": args.clients,
            "request_budget": args.requests,
            "time_budget_s": args.seconds,
            "backend": args.backend,
            "embedder": args.embedder,
            "mix": {"remember": 0.50, "recall": 0.35, "list": 0.10, "hostile_422": 0.05},
            "server": "memlane serve (uvicorn, 1 worker), 127.0.0.1",
        },
        "requests": sent,
        "wall_s": round(wall, 3),
        "throughput_rps": round(sent / wall, 1),
        "errors": sum(k.errors for k in kinds.values()),
        "reconnects": sum(k.reconnects for k in kinds.values()),
        "kinds": {
            name: {
                "requests": len(k.latencies_ms),
                "errors": k.errors,
                "reconnects": k.reconnects,
                "p50_ms": round(_percentile(k.latencies_ms, 50), 2),
                "p95_ms": round(_percentile(k.latencies_ms, 95), 2),
                "p99_ms": round(_percentile(k.latencies_ms, 99), 2),
            }
            for name, k in kinds.items()
        },
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "memlane": __version__,
            "commit": _git_commit(),
            "date": time.strftime("%Y-%m-%d"),
        },
    }
    markdown = _markdown(result)
    write_results(args.out, result, markdown)
    print(markdown)
    return result


def _markdown(result: dict[str, Any]) -> str:
    config = result["config"]
    lines = [
        "# HTTP load (loopback, `memlane serve`)",
        "",
        f"{config['clients']} keep-alive clients, budget {config['request_budget']} requests or "
        f"{config['time_budget_s']:g} s, {config['backend']} store, {config['embedder']} embedder; "
        "mix 50 % remember, 35 % ranked recall, 10 % listing, 5 % hostile bodies (must be 422). "
        "Client and server share the machine.",
        "",
        f"**{result['requests']} requests in {result['wall_s']} s = {result['throughput_rps']} req/s**, "
        f"{result['errors']} unexpected statuses, {result['reconnects']} reconnects.",
        "",
        "| kind | requests | errors | reconnects | p50 ms | p95 ms | p99 ms |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, k in result["kinds"].items():
        cells = [name, k["requests"], k["errors"], k["reconnects"], k["p50_ms"], k["p95_ms"], k["p99_ms"]]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    machine = result["machine"]
    lines += ["", f"Machine: {machine['cpus']} CPU(s), Python {machine['python']}, {machine['date']}.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
