"""Schema migration 13 (the facet index of ``Store.facet_values``) on databases that hold episodes.

A file or schema at version 12 with LangGraph items is opened by the current memlane: the index is
built over the rows already there, ``facet_values`` lists their namespaces, and its query reads the
index (the planner only uses a partial expression index when the query repeats it exactly).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from memlane import EpisodeInput, EpisodicMemory
from memlane.embeddings.fake import HashingEmbedder
from memlane.stores.base import FACET_PATHS, Store
from memlane.stores.sqlite import SQLiteStore
from memlane.stores.sqlite import facets as sqlite_facets
from memlane.stores.sqlite import migrations as sqlite_migrations

PATH = FACET_PATHS[0]
NAMESPACES = [["org", f"o{i % 4}", f"u{i % 10}"] for i in range(40)]


def _fill(store: Store) -> None:
    memory = EpisodicMemory(store, HashingEmbedder(16), tenant_id="t", owns_store=False)
    memory.remember_episodes(
        [
            EpisodeInput("item", f"item {i}", metadata={PATH[0]: {PATH[1]: ns}})
            for i, ns in enumerate(NAMESPACES)
        ]
    )


def _expected() -> list[Any]:
    return sorted({tuple(ns) for ns in NAMESPACES})


def _listed(store: Store, tenant_id: str | None) -> list[Any]:
    return sorted(tuple(v) for v in store.facet_values(tenant_id, "item", PATH))


def test_sqlite_file_at_12_gets_the_facet_index(tmp_path: Path) -> None:
    path = tmp_path / "v12.db"
    store = SQLiteStore(path)
    _fill(store)
    store.close()
    with sqlite3.connect(path, isolation_level=None) as conn:  # back to what version 12 wrote
        conn.execute("DROP INDEX ix_episodes_facet_0")
        conn.execute("PRAGMA user_version = 12")
    store = SQLiteStore(path)
    try:
        assert store.schema_version == len(sqlite_migrations.MIGRATIONS) >= 13
        assert _listed(store, "t") == _expected()
        assert _listed(store, None) == _expected()
        conn = sqlite3.connect(path)
        for every in (False, True):
            sql = sqlite_facets._query(PATH, every)
            plan = " ".join(
                r[3]
                for r in conn.execute("EXPLAIN QUERY PLAN " + sql, {"event_type": "item", "tenant_id": "t"})
            )
            assert "USING INDEX ix_episodes_facet_0" in plan and "SCAN episodes" not in plan
        conn.close()
    finally:
        store.close()


def test_postgres_schema_at_12_gets_the_facet_index(pg_url: str, pg_schema: str) -> None:
    import psycopg
    from psycopg import sql

    from memlane.stores.postgres import PostgresStore
    from memlane.stores.postgres import facets as pg_facets
    from memlane.stores.postgres import migrations as pg_migrations

    schema = sql.Identifier(pg_schema)
    store = PostgresStore(pg_url, schema=pg_schema, max_size=2)
    _fill(store)
    store.close()
    with (
        psycopg.connect(pg_url, autocommit=True) as conn,
        conn.transaction(),
    ):  # back to version 12 (13 and 14 undone)
        conn.execute(sql.SQL("DROP INDEX {}.ix_memlane_episodes_facet_0").format(schema))
        conn.execute(
            sql.SQL("DROP TABLE {}.memlane_term_df, {}.memlane_term_df_pending").format(schema, schema)
        )
        conn.execute(sql.SQL("DELETE FROM {}.memlane_schema_migrations WHERE version >= 13").format(schema))
    store = PostgresStore(pg_url, schema=pg_schema, max_size=2)
    try:
        assert store.schema_version == len(pg_migrations.MIGRATIONS)
        assert _listed(store, "t") == _expected()
        assert _listed(store, None) == _expected()
        table = sql.SQL("{}.memlane_episodes").format(schema)
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("SET enable_seqscan = off")  # a table this small is read whole otherwise
            for every in (False, True):
                query = sql.SQL("EXPLAIN ") + pg_facets._query(table, PATH, every)
                rows = conn.execute(query, {"event_type": "item", "tenant_id": "t"}).fetchall()
                plan = " ".join(r[0] for r in rows)
                assert "ix_memlane_episodes_facet_0" in plan and "Seq Scan" not in plan
    finally:
        store.close()
