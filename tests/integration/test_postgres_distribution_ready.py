"""The PostgreSQL schema is ready for a tenant-sharded cluster (Citus distributes tables by a column).

Citus requires every primary key and unique constraint of a distributed table to include the
distribution column; memlane's would be ``tenant_id``. This test reads the catalog
(``pg_index``) of a freshly migrated schema and lists every unique index of a per-tenant table
that does not cover ``tenant_id``. ``memlane_meta`` and ``memlane_schema_migrations`` are global
(Citus reference tables) and exempt.
"""

from __future__ import annotations

import psycopg
import pytest

from tests.backends import open_store, postgres_db

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


@pytest.mark.xfail(
    strict=True,
    reason="open (issue 12): episodes/sessions key on seq alone and id is unique across tenants; session "
    "messages/windows and re-embedding staging have no tenant_id column yet (needs a migration)",
)
def test_every_unique_index_of_a_tenant_table_includes_tenant_id(pg_url: str, pg_schema: str) -> None:
    db = postgres_db(pg_url, pg_schema)
    open_store(db.kind, db.location).close()  # migrates the schema
    indexes = _unique_indexes(pg_url, pg_schema)
    assert any(t == "memlane_episodes" for t, _, _ in indexes)  # the catalog query sees the schema
    missing = [(t, i, cols) for t, i, cols in indexes if t not in GLOBAL_TABLES and "tenant_id" not in cols]
    assert missing == []
