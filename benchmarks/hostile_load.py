"""Hostile load on ``memlane serve`` (issue #22): do well-behaved clients keep their latency?

Starts ``memlane serve`` like ``benchmarks/http_load.py`` (a subprocess on loopback, a fresh
SQLite file, the hashing embedder unless ``--embedder local``), then runs two phases:

1. **Baseline** (``--baseline-seconds``, default 10): ``--good`` well-behaved clients (default
   10) alone, each in a loop: remember a unique episode (its id kept), a short ranked recall,
   ``GET /health``.
2. **Under attack** (``--seconds``, default 40): the same clients while ``--hostile`` clients
   (default 50) send what issue #22 found, round robin: a 100,000-character recall query with
   dates, a 600-tag filter, ``never_retrieved_older_than_days: 1e300``, an extreme
   ``created_at``, 1,001 messages, a login form with 20 fields, a slow-loris connection
   (headers one byte at a time), a bidi-spoofed session id and an export.

Measured: the well-behaved clients' p50/p95/p99 per phase (and the attack/baseline p95
ratio), their failed requests, the hostile answers per status (a 5xx is a finding), and
whether every episode a well-behaved client stored is still there afterwards (``lost``).
Figures depend on the machine and its other load: they are written to
``benchmarks/results/hostile_load.{json,md}`` and never asserted on timing; the slow test
``tests/reliability/test_hostile_load.py`` runs a short round and asserts only that nothing
was lost, no well-behaved request failed and no hostile request got a 5xx.

Usage::

    .venv/bin/python benchmarks/hostile_load.py [--good 10] [--hostile 50] [--seconds 40]
        [--baseline-seconds 10] [--embedder hashing|local] [--out benchmarks/results/hostile_load.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import select
import signal
import socket
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import write_results
from http_load import KEY, _percentile, start_server

from memlane import __version__

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "hostile_load.json"
LONG_QUERY = ("what did we decide in May 2023 about the deploy window last week " * 1600)[:100_000]


@dataclass
class Good:
    """What the well-behaved clients saw in one phase."""

    latencies_ms: list[float] = field(default_factory=list)
    failed: int = 0
    stored: list[str] = field(default_factory=list)


def _good_client(url: str, client_id: int, stop_at: float, figures: Good, lock: threading.Lock) -> None:
    with httpx.Client(base_url=url, headers={"X-API-Key": KEY}, timeout=60) as client:
        n = 0
        while time.monotonic() < stop_at:
            n += 1
            calls: list[tuple[str, str, Any, int]] = [
                (
                    "POST",
                    "/v1/episodes",
                    {"event_type": "note", "content": f"good {client_id}-{n} deploy"},
                    201,
                ),
                ("POST", "/v1/recall", {"query": "deploy window", "limit": 5}, 200),
                ("GET", "/health", None, 200),
            ]
            for method, path, body, expect in calls:
                t0 = time.perf_counter()
                try:
                    response = client.request(method, path, json=body)
                    ok = response.status_code == expect
                    stored = response.json().get("id") if ok and expect == 201 else None
                except (httpx.HTTPError, ValueError):
                    ok, stored = False, None
                elapsed = (time.perf_counter() - t0) * 1000
                with lock:
                    figures.latencies_ms.append(elapsed)
                    figures.failed += not ok
                    if stored:
                        figures.stored.append(stored)


def _slow_loris(url: str, stop_at: float) -> int:
    """Send a request's headers one byte a second; return the status line's code (0: closed)."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 80), timeout=60) as sock:
        for byte in b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 200:
            if time.monotonic() >= stop_at:
                return -1
            try:
                sock.sendall(bytes([byte]))
                readable, _, _ = select.select([sock], [], [], 1.0)  # (a second between bytes)
                if readable and not sock.recv(1024):
                    return 0  # the server closed it (the header deadline)
            except OSError:
                return 0
    return -1


def _hostile_requests(n: int) -> tuple[str, str, dict[str, Any]]:
    many = [{"role": "user", "content": f"m{i}"} for i in range(1001)]
    options: list[tuple[str, str, dict[str, Any]]] = [
        ("POST", "/v1/recall", {"json": {"query": LONG_QUERY}}),
        ("GET", "/v1/episodes", {"params": {"tag": [f"t{i}" for i in range(600)]}}),
        ("POST", "/v1/admin/compact", {"json": {"dry_run": True, "never_retrieved_older_than_days": 1e300}}),
        (
            "POST",
            "/v1/episodes",
            {"json": {"event_type": "n", "content": "c", "created_at": "0001-01-01T00:00:00+14:00"}},
        ),
        ("POST", "/v1/sessions", {"json": {"session_id": "flood", "messages": many}}),
        ("POST", "/inspect/login", {"data": {f"f{i}": "x" for i in range(20)}}),
        (
            "POST",
            "/v1/sessions",
            {"json": {"session_id": f"user-\u202enimda\u202c{n}", "messages": many[:2]}},
        ),
        ("GET", "/v1/export", {}),
    ]
    return options[n % len(options)]


def _hostile_client(
    url: str, client_id: int, stop_at: float, statuses: Counter[str], lock: threading.Lock
) -> None:
    if client_id % 10 == 9:  # every tenth hostile client holds slow connections instead
        while time.monotonic() < stop_at:
            code = _slow_loris(url, stop_at)
            with lock:
                statuses["slow-loris closed" if code == 0 else "slow-loris open at the end"] += 1
        return
    n = client_id
    with httpx.Client(base_url=url, headers={"X-API-Key": KEY, "Origin": url}, timeout=120) as client:
        while time.monotonic() < stop_at:
            method, path, options = _hostile_requests(n)
            n += 1
            try:
                status = str(client.request(method, path, **options).status_code)
            except httpx.HTTPError as exc:
                status = type(exc).__name__
            with lock:
                statuses[status] += 1


def _phase(url: str, good: int, hostile: int, seconds: float) -> tuple[Good, Counter[str]]:
    figures, statuses, lock = Good(), Counter[str](), threading.Lock()
    stop_at = time.monotonic() + seconds
    threads = [
        threading.Thread(target=_hostile_client, args=(url, c, stop_at, statuses, lock))
        for c in range(hostile)
    ]
    threads += [
        threading.Thread(target=_good_client, args=(url, c, stop_at, figures, lock)) for c in range(good)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return figures, statuses


def _summary(figures: Good) -> dict[str, Any]:
    values = figures.latencies_ms
    return {
        "requests": len(values),
        "failed": figures.failed,
        "p50_ms": round(_percentile(values, 50), 2),
        "p95_ms": round(_percentile(values, 95), 2),
        "p99_ms": round(_percentile(values, 99), 2),
    }


def _lost(url: str, ids: list[str]) -> int:
    with httpx.Client(base_url=url, headers={"X-API-Key": KEY}, timeout=60) as client:
        return sum(client.get(f"/v1/episodes/{i}").status_code != 200 for i in ids)


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Both phases against a fresh server; the result document."""
    with tempfile.TemporaryDirectory(prefix="memlane-hostile-load-") as tmp:
        process, url = start_server(Path(tmp), "sqlite", None, args.embedder)
        try:
            baseline, _ = _phase(url, args.good, 0, args.baseline_seconds)
            attacked, statuses = _phase(url, args.good, args.hostile, args.seconds)
            lost = _lost(url, baseline.stored + attacked.stored)
        finally:
            process.send_signal(signal.SIGINT)
            process.wait(timeout=60)
    base, under = _summary(baseline), _summary(attacked)
    return {
        "benchmark": "hostile_load",
        "memlane": __version__,
        "date": datetime.now(UTC).date().isoformat(),
        "machine": {"cpus": __import__("os").cpu_count(), "python": platform.python_version()},
        "settings": {
            "good": args.good,
            "hostile": args.hostile,
            "seconds": args.seconds,
            "baseline_seconds": args.baseline_seconds,
            "embedder": args.embedder,
        },
        "baseline": base,
        "under_attack": under,
        "p95_ratio": round(under["p95_ms"] / base["p95_ms"], 2) if base["p95_ms"] else None,
        "hostile_statuses": dict(sorted(statuses.items())),
        "stored": len(baseline.stored) + len(attacked.stored),
        "lost": lost,
    }


def _markdown(result: dict[str, Any]) -> str:
    s = result["settings"]
    rows = "\n".join(
        f"| {name} | {r['requests']} | {r['failed']} | {r['p50_ms']} | {r['p95_ms']} | {r['p99_ms']} |"
        for name, r in (
            ("baseline (good alone)", result["baseline"]),
            ("under attack", result["under_attack"]),
        )
    )
    statuses = ", ".join(f"{k}: {v}" for k, v in result["hostile_statuses"].items())
    return (
        "# Hostile load (loopback, `memlane serve`, issue #22)\n\n"
        f"{s['good']} well-behaved clients (remember, recall, health in a loop), "
        f"{s['baseline_seconds']} s alone, "
        f"then {s['seconds']} s with {s['hostile']} hostile clients; sqlite store, {s['embedder']} embedder. "
        "Client and server share the machine.\n\n"
        "| well-behaved | requests | failed | p50 ms | p95 ms | p99 ms |\n|---|---:|---:|---:|---:|---:|\n"
        f"{rows}\n\n"
        f"p95 under attack / baseline: **{result['p95_ratio']}**. Stored by well-behaved clients: "
        f"{result['stored']}, lost: **{result['lost']}**.\n\n"
        f"Hostile answers: {statuses}.\n\n"
        f"Machine: {result['machine']['cpus']} CPU(s), Python {result['machine']['python']}, "
        f"{result['date']}.\n"
    )


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Parse the options, run, write ``--out`` and its Markdown twin (unless ``--no-write``)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--good", type=int, default=10)
    parser.add_argument("--hostile", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--baseline-seconds", type=float, default=10.0)
    parser.add_argument("--embedder", choices=["hashing", "local"], default="hashing")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--no-write", action="store_true", help="Print only (a partial run).")
    args = parser.parse_args(argv)
    result = run(args)
    print(json.dumps(result, indent=2))
    if not args.no_write:
        write_results(args.out, result, _markdown(result))
    return result


if __name__ == "__main__":
    main()
