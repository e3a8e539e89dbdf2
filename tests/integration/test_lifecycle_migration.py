"""Schema migrations 5 and 6 (bi-temporal columns, forgetting columns) on databases with episodes.

Existing rows must come out with ``valid_from = recorded_at = created_at`` (still true, known
since they were created), no end of validity, not retired, not archived, not session-scoped.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from memlane.models import Episode
from memlane.stores.base import EpisodeFilter
from memlane.stores.sqlite import SQLiteStore
from memlane.stores.sqlite import migrations as sqlite_migrations
from memlane.stores.sqlite.base import to_us as _to_us
from tests.conftest import T0

OLD_VERSION = 4  # the schema before the lifecycle columns


def _check(episodes: list[Episode]) -> None:
    (episode,) = episodes
    assert episode.created_at == T0
    assert episode.valid_from == T0 and episode.recorded_at == T0
    assert episode.valid_until is None and episode.invalidated_at is None
    assert episode.superseded_by is None and episode.supersede_reason is None
    assert episode.archived_at is None and episode.session_scoped is False


def test_sqlite_rows_migrate(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    for statements in sqlite_migrations.MIGRATIONS[:OLD_VERSION]:
        for statement in statements:
            conn.execute(statement)
    conn.execute(f"PRAGMA user_version = {OLD_VERSION}")
    conn.execute(
        "INSERT INTO episodes (id, tenant_id, session_id, event_type, content, created_at_us) "
        "VALUES ('e1', 't', 's', 'note', 'hello', ?)",
        (_to_us(T0),),
    )
    conn.close()
    store = SQLiteStore(path)
    try:
        assert store.schema_version == len(sqlite_migrations.MIGRATIONS)
        _check(list(store.iter_episodes(EpisodeFilter())))
        assert store.count(EpisodeFilter(valid_at=T0, current_at=T0, exclude_archived=True)) == 1
    finally:
        store.close()


def test_postgres_rows_migrate(pg_url: str, pg_schema: str) -> None:
    import psycopg
    from psycopg import sql

    from memlane.stores.postgres import PostgresStore
    from memlane.stores.postgres import migrations as pg_migrations

    schema = sql.Identifier(pg_schema)
    with psycopg.connect(pg_url, autocommit=True) as conn, conn.transaction():
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(schema))
        row = conn.execute(
            "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
            "WHERE e.extname = 'vector'"
        ).fetchone()
        assert row is not None
        ext = sql.Identifier(row[0])
        conn.execute(pg_migrations.BOOTSTRAP.format(schema=schema))
        for number, statements in enumerate(pg_migrations.MIGRATIONS[:OLD_VERSION], start=1):
            for statement in statements:
                conn.execute(statement.format(schema=schema, ext=ext))
            conn.execute(
                sql.SQL("INSERT INTO {}.memlane_schema_migrations (version) VALUES (%s)").format(schema),
                (number,),
            )
        conn.execute(
            sql.SQL(
                "INSERT INTO {}.memlane_episodes "
                "(id, tenant_id, session_id, event_type, content, created_at) "
                "VALUES ('e1', 't', 's', 'note', 'hello', %s)"
            ).format(schema),
            (T0,),
        )
    store = PostgresStore(pg_url, schema=pg_schema, max_size=2)
    try:
        assert store.schema_version == len(pg_migrations.MIGRATIONS)
        _check(list(store.iter_episodes(EpisodeFilter())))
        assert store.count(EpisodeFilter(valid_at=T0, current_at=T0, exclude_archived=True)) == 1
    finally:
        store.close()
