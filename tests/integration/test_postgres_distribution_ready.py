"""The PostgreSQL schema is ready for a tenant-sharded cluster (Citus distributes tables by a column).

Citus requires every primary key and unique constraint of a distributed table to include the
distribution column; memlane's would be ``tenant_id``. This test reads the catalog
(``pg_index``) of a freshly migrated schema and lists every unique index of a per-tenant table
that does not cover ``tenant_id``. ``memlane_meta`` and ``memlane_schema_migrations`` are global
(Citus reference tables) and exempt. Migration 9 re-keys an existing store in place (checked on
rows written at version 8), and lookups by ``id`` or row key alone keep their b-tree indexes.
"""

from __future__ import annotations

from datetime import timedelta

import psycopg
import pytest
from psycopg import sql

from memlane.errors import DuplicateEpisodeError
from memlane.models import Episode
from memlane.stores.postgres import PostgresStore
from memlane.stores.postgres import migrations as pg_migrations
from tests.backends import open_store, postgres_db
from tests.conftest import T0
from tests.pg_server import schema_at_version

GLOBAL_TABLES = {"memlane_meta", "memlane_schema_migrations"}
"""Store-wide tables: replicated to every node (reference tables), not distributed by tenant."""

_UNIQUE_INDEXES = """
SELECT c.relname, i.relname, array_agg(a.attname ORDER BY a.attname)
FROM pg_index x
JOIN pg_class i ON i.oid = x.indexrelid
JOIN pg_class c ON c.oid = x.indrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = ANY(x.indkey)
WHERE n.nspname = %s AND x.indisunique
GROUP BY c.relname, i.relname
ORDER BY 1, 2
"""


def _unique_indexes(url: str, schema: str) -> list[tuple[str, str, list[str]]]:
    with psycopg.connect(url, autocommit=True) as conn:
        return [
            (str(t), str(i), list(cols)) for t, i, cols in conn.execute(_UNIQUE_INDEXES, (schema,)).fetchall()
        ]


def test_every_unique_index_of_a_tenant_table_includes_tenant_id(pg_url: str, pg_schema: str) -> None:
    db = postgres_db(pg_url, pg_schema)
    open_store(db.kind, db.location).close()  # migrates the schema
    indexes = _unique_indexes(pg_url, pg_schema)
    assert any(t == "memlane_episodes" for t, _, _ in indexes)  # the catalog query sees the schema
    missing = [(t, i, cols) for t, i, cols in indexes if t not in GLOBAL_TABLES and "tenant_id" not in cols]
    assert missing == []


# -- migration 9 on a store that already holds rows ---------------------------------------------------


def test_migration_9_keys_existing_rows_by_tenant_without_losing_any(pg_url: str, pg_schema: str) -> None:
    schema = sql.Identifier(pg_schema)
    schema_at_version(pg_url, schema, 8)
    with psycopg.connect(pg_url, autocommit=True) as conn, conn.transaction():
        for i, tenant in enumerate(("acme", "globex")):
            conn.execute(
                sql.SQL(
                    "INSERT INTO {}.memlane_episodes (id, tenant_id, session_id, event_type, content, "
                    "created_at, valid_from, recorded_at, terms, token_count) "
                    "VALUES (%s, %s, 's', 'note', %s, %s, %s, %s, %s, 2)"
                ).format(schema),
                (f"e{i}", tenant, f"hello {tenant}", T0, T0, T0, f"hello {tenant}"),
            )
        seq = conn.execute(
            sql.SQL(
                "INSERT INTO {}.memlane_sessions (tenant_id, session_id, agent_id, user_id, started_at, "
                "ended_at, message_count, turn_count) VALUES ('globex', 's1', 'a', 'u', %s, %s, 2, 1) "
                "RETURNING seq"
            ).format(schema),
            (T0, T0),
        ).fetchone()
        assert seq is not None
        conn.execute(
            sql.SQL(
                "INSERT INTO {}.memlane_session_messages (session_seq, position, message) "
                "VALUES (%s, 0, '\"hi\"'), (%s, 1, '\"there\"')"
            ).format(schema),
            (seq[0], seq[0]),
        )
        window = conn.execute(
            sql.SQL(
                "INSERT INTO {}.memlane_session_windows (session_seq, turn, first_position, last_position, "
                "created_at, text, embedding, embedding_model) "
                "VALUES (%s, 0, 0, 1, %s, 'hi there', '[1,0]', 'old') RETURNING seq"
            ).format(schema),
            (seq[0], T0),
        ).fetchone()
        assert window is not None
        episode = conn.execute(
            sql.SQL("SELECT seq FROM {}.memlane_episodes WHERE id = 'e1'").format(schema)
        ).fetchone()
        assert episode is not None
        conn.execute(  # one staged vector per table, plus one whose episode has been deleted since
            sql.SQL(
                "INSERT INTO {}.memlane_reembed_staging (seq, embedding, embedding_model) "
                "VALUES (%s, '[1,0]', 'new'), (999999, '[0,1]', 'new')"
            ).format(schema),
            (episode[0],),
        )
        conn.execute(
            sql.SQL(
                "INSERT INTO {}.memlane_reembed_window_staging (seq, embedding, embedding_model) "
                "VALUES (%s, '[1,0]', 'new')"
            ).format(schema),
            (window[0],),
        )

    store = PostgresStore(pg_url, schema=pg_schema, max_size=2)
    try:
        assert store.schema_version == len(pg_migrations.MIGRATIONS)
        first, second = store.get("e0"), store.get("e1")
        assert first is not None and (first.tenant_id, first.content) == ("acme", "hello acme")
        assert second is not None and (second.tenant_id, second.content) == ("globex", "hello globex")
        header = store.session_store.get_session("globex", "s1")
        assert header is not None
        assert store.session_store.session_messages(header.key) == ['"hi"', '"there"']
        assert store.session_store.turn_spans(header.key, 0, 0) == {0: (0, 1)}
        staged = _fetch(
            pg_url, sql.SQL("SELECT tenant_id, seq FROM {}.memlane_reembed_staging").format(schema)
        )
        assert staged == [("globex", episode[0])]  # the orphan is gone, the other row keeps its tenant
        windows = _fetch(
            pg_url, sql.SQL("SELECT tenant_id, seq FROM {}.memlane_reembed_window_staging").format(schema)
        )
        assert windows == [("globex", window[0])]
        # The id stays unique across tenants on one server, although the constraint is per tenant.
        taken = Episode(
            id="e1",
            tenant_id="acme",
            session_id="s",
            event_type="note",
            content="x",
            tags=(),
            importance=None,
            created_at=T0,
        )
        with pytest.raises(DuplicateEpisodeError):
            store.insert([taken], None)
        assert store.session_store.delete_session("globex", "s1")  # cascades over the new foreign keys
        assert _fetch(pg_url, sql.SQL("SELECT count(*) FROM {}.memlane_session_messages").format(schema)) == [
            (0,)
        ]
    finally:
        store.close()


def test_lookups_by_id_or_row_key_alone_stay_index_scans(pg_url: str, pg_schema: str) -> None:
    store = PostgresStore(pg_url, schema=pg_schema, max_size=2)
    try:
        store.insert(
            [
                Episode(
                    id=f"ep-{i:05d}",
                    tenant_id=f"t{i % 7}",
                    session_id="s",
                    event_type="note",
                    content=f"row {i}",
                    tags=(),
                    importance=None,
                    created_at=T0 - timedelta(seconds=i),
                )
                for i in range(3_000)
            ],
            None,
        )
        table = sql.SQL("{}.memlane_episodes").format(sql.Identifier(pg_schema))
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(sql.SQL("ANALYZE {}").format(table))
        by_id = _plan(pg_url, sql.SQL("EXPLAIN SELECT * FROM {} WHERE id = %s").format(table), ("ep-00042",))
        assert "ix_memlane_episodes_id" in by_id and "Seq Scan" not in by_id
        by_key = _plan(
            pg_url,
            sql.SQL("EXPLAIN SELECT * FROM {} WHERE seq = ANY(%s::bigint[])").format(table),
            ([1, 2, 3],),
        )
        assert "ix_memlane_episodes_seq" in by_key and "Seq Scan" not in by_key
        assert (found := store.get("ep-00042")) is not None and found.tenant_id == "t0"
    finally:
        store.close()


def _fetch(url: str, query: sql.Composable) -> list[tuple[object, ...]]:
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(query).fetchall()


def _plan(url: str, query: sql.Composable, params: tuple[object, ...]) -> str:
    with psycopg.connect(url, autocommit=True) as conn:
        return " ".join(str(r[0]) for r in conn.execute(query, params).fetchall())
