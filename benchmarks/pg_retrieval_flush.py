"""One PostgreSQL retrieval flush: the ``UPDATE`` of the episode rows (before) vs the side-table upsert (now).

A flush writes the buffered counts of up to :data:`~memlane.stores.retrievals.FLUSH_EVERY` recalls
(64 x 10 hits = 640 row keys). Before schema migration 20 that was one
``UPDATE memlane_episodes ... FROM unnest(...)``: episode rows are ~2 KB and inline (4 a page), so
a new row version rarely fits its page (not HOT) and goes into every episode index, the partial
HNSW one included. Now it is one upsert into ``memlane_retrievals``
(:func:`memlane.stores.postgres.lifecycle.record_retrievals`).

This script builds a schema of ``n`` episodes per size (copied from an existing memlane schema of
the same server with ``--copy-from``, e.g. one :mod:`scale` filled; the HNSW index folded in by
``optimize``), then times both statements on it, interleaved round by round (the order alternates),
each on 640 random keys in its own transaction (``synchronous_commit = off``, as the store commits a
flush), and counts the HOT updates of the episode table. It also prints the plans of the store's own
``get``/``fetch``/``list_recent``/``iter_episodes`` statements (recorded from the store's cursors and
EXPLAINed). Nothing is asserted; the schemas ``retr_flush_<n>`` are dropped at the end.

Usage::

    .venv/bin/python benchmarks/pg_retrieval_flush.py --url URL --copy-from p100000_natural
        [--sizes 10000,100000] [--rounds 10] [--out /tmp/pg_retrieval_flush.json]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

sys.path.insert(0, str(Path(__file__).resolve().parent))

import psycopg
from _results import write_results
from psycopg import sql
from psycopg_pool import ConnectionPool

from memlane.stores.base import EpisodeFilter
from memlane.stores.postgres import PostgresStore
from memlane.stores.postgres.lifecycle import record_retrievals

KEYS = 640
"""Row keys per flush: FLUSH_EVERY recalls x 10 hits."""

_BEFORE = (
    "UPDATE {t} AS e SET retrieve_count = e.retrieve_count + p.n, "
    "last_retrieved_at = greatest(e.last_retrieved_at, p.at) "
    "FROM unnest(%s::bigint[], %s::bigint[], %s::timestamptz[]) AS p(seq, n, at) WHERE e.seq = p.seq"
)
"""The flush before migration 19 (memlane's lifecycle.record_retrievals until then), the baseline."""

_COPIED = (
    "id, tenant_id, session_id, event_type, content, tags, importance, created_at, metadata, embedding, "
    "embedding_model, valid_from, valid_until, recorded_at, invalidated_at, superseded_by, supersede_reason, "
    "archived_at, session_scoped, retrieve_count, last_retrieved_at, terms, token_count"
)


class _Recording(psycopg.Cursor[Any]):
    """A cursor that keeps every statement it runs (for EXPLAIN)."""

    seen: ClassVar[list[tuple[str, Any]]] = []

    def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
        _Recording.seen.append((query.as_string(self) if hasattr(query, "as_string") else query, params))
        return super().execute(query, params, **kwargs)


def _build(url: str, source: str, n: int) -> tuple[str, list[int]]:
    """Schema ``retr_flush_<n>`` holding the first ``n`` rows of ``source``, indexed and analysed."""
    schema = f"retr_flush_{n}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
        model, dims = conn.execute(
            sql.SQL(
                "SELECT max(value) FILTER (WHERE key = 'embedding_model'), "
                "max(value) FILTER (WHERE key = 'embedding_dims')::int FROM {}.memlane_meta"
            ).format(sql.Identifier(source))
        ).fetchone()  # type: ignore[misc]
    store = PostgresStore(url, schema=schema)
    store.bind_embedding_model(model, dims)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            sql.SQL(
                "INSERT INTO {}.memlane_episodes ({c}) "
                "SELECT {c} FROM {}.memlane_episodes ORDER BY seq LIMIT %s"
            ).format(sql.Identifier(schema), sql.Identifier(source), c=sql.SQL(_COPIED)),
            (n,),
        )
    store.optimize()
    store.close()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("VACUUM ANALYZE {}.memlane_episodes").format(sql.Identifier(schema)))
        seqs = [
            int(r[0])
            for r in conn.execute(
                sql.SQL("SELECT seq FROM {}.memlane_episodes").format(sql.Identifier(schema))
            )
        ]
    return schema, seqs


def _flush(conn: psycopg.Connection[Any], schema: str, how: str, keys: list[int]) -> float:
    """Seconds for one flush of ``keys`` (+1 each, now) the ``how`` way, committed."""
    t = sql.SQL("{}.memlane_episodes").format(sql.Identifier(schema))
    r = sql.SQL("{}.memlane_retrievals").format(sql.Identifier(schema))
    at = datetime.now(UTC)
    started = time.perf_counter()
    with conn.transaction(), conn.cursor() as cur:
        cur.execute("SET LOCAL synchronous_commit = off")
        if how == "before":
            cur.execute(sql.SQL(_BEFORE).format(t=t), (keys, [1] * len(keys), [at] * len(keys)))
        else:
            record_retrievals(cur, (t, r), {k: (1, at) for k in keys})
    return time.perf_counter() - started


def _hot(conn: psycopg.Connection[Any], schema: str) -> tuple[int, int]:
    row = conn.execute(
        "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE schemaname = %s "
        "AND relname = 'memlane_episodes'",
        (schema,),
    ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def _plans(url: str, schema: str, seqs: list[int]) -> dict[str, str]:
    """The EXPLAIN of each episode read the store sends (recorded from its cursors)."""
    pool = ConnectionPool(url, min_size=1, max_size=1, kwargs={"cursor_factory": _Recording}, open=True)
    store = PostgresStore(pool, schema=schema)
    one = store.fetch(seqs[:1])[seqs[0]]
    reads = {
        "get": lambda: store.get("none"),
        "fetch": lambda: store.fetch(seqs[:10]),
        "list_recent": lambda: store.list_recent(EpisodeFilter(tenant_id=one.tenant_id), 10),
        "list_recent (session)": lambda: store.list_recent(
            EpisodeFilter(tenant_id=one.tenant_id, session_id=one.session_id), 10
        ),
        "list_recent (unknown tenant)": lambda: store.list_recent(EpisodeFilter(tenant_id="none"), 10),
        "iter_episodes": lambda: next(store.iter_episodes(EpisodeFilter(), batch_size=100), None),
    }
    plans: dict[str, str] = {}
    with psycopg.connect(url, autocommit=True) as conn:
        for name, read in reads.items():
            _Recording.seen.clear()
            read()
            query, params = next((q, p) for q, p in _Recording.seen if "memlane_retrievals" in str(q))
            rows = conn.execute(f"EXPLAIN {query}", params).fetchall()
            plans[name] = "\n".join(str(r[0]) for r in rows)
    store.close()
    pool.close()
    return plans


def run_size(url: str, source: str, n: int, rounds: int) -> dict[str, Any]:
    """Build the schema of ``n`` rows and time ``rounds`` flushes of each kind, interleaved."""
    schema, seqs = _build(url, source, n)
    rng = random.Random(n)
    times: dict[str, list[float]] = {"before": [], "now": []}
    with psycopg.connect(url, autocommit=True) as conn:
        updates_before = _hot(conn, schema)
        for i in range(rounds):
            for how in ("before", "now") if i % 2 == 0 else ("now", "before"):
                times[how].append(_flush(conn, schema, how, rng.sample(seqs, KEYS)))
        time.sleep(1.0)  # the statistics collector publishes the counts
        updates_after = _hot(conn, schema)
    plans = _plans(url, schema, seqs)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))
    medians = {k: statistics.median(v) for k, v in times.items()}
    return {
        "rows": n,
        "keys": KEYS,
        "rounds": rounds,
        "seconds": times,
        "median_s": medians,
        "ratio_now_over_before": medians["now"] / medians["before"],
        "episode_updates": updates_after[0] - updates_before[0],
        "episode_hot_updates": updates_after[1] - updates_before[1],
        "plans": plans,
        "loadavg": os.getloadavg(),
    }


def render_markdown(results: list[dict[str, Any]]) -> str:
    lines = [
        "# One retrieval flush of 640 keys (PostgreSQL)",
        "",
        "| rows | before (UPDATE episodes) median s | now (upsert memlane_retrievals) median s | now/before "
        "| HOT of the UPDATEs | load |",
        "|---:|---:|---:|---:|---:|---|",
    ]
    return "\n".join([*lines, *(_row(r) for r in results)]) + "\n"


def _row(r: dict[str, Any]) -> str:
    """One size's Markdown table row."""
    cells = [
        str(r["rows"]),
        f"{r['median_s']['before']:.4f}",
        f"{r['median_s']['now']:.4f}",
        f"{r['ratio_now_over_before']:.3f}",
        f"{r['episode_hot_updates']}/{r['episode_updates']}",
        ", ".join(f"{x:.2f}" for x in r["loadavg"]),
    ]
    return "| " + " | ".join(cells) + " |"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument(
        "--copy-from", required=True, help="a memlane schema of the same server to copy rows from"
    )
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--out", type=Path, default=Path("/tmp/pg_retrieval_flush.json"))
    args = parser.parse_args(argv)
    results = []
    for n in (int(s) for s in args.sizes.split(",")):
        result = run_size(args.url, args.copy_from, n, args.rounds)
        print(render_markdown([result]), flush=True)
        for name, plan in result["plans"].items():
            print(f"-- {name}\n{plan}\n", flush=True)
        results.append(result)
    write_results(args.out, {"results": results}, render_markdown(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
