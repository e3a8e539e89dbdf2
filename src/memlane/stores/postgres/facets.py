"""Distinct values of a facet path (:data:`~memlane.stores.base.FACET_PATHS`) from its partial index.

Schema migration 13 indexes ``(event_type, tenant_id, (metadata #> '<path>')::text)`` over the active
rows (``invalidated_at`` and ``archived_at`` null) that hold the path. :func:`facet_values` walks it as
a loose index scan: a recursive query whose every step is one ``ORDER BY ... LIMIT 1`` probe past the
last value (and, for every tenant, past the last tenant), so it costs one probe per distinct value
whatever the number of rows. The query repeats the index's expression and condition, as PostgreSQL
needs to use a partial expression index; the path is a fixed constant, never input.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql

from memlane.stores.common import check_facet_path, decoded_distinct

__all__ = ["facet_values"]


def _query(table: sql.Composable, path: tuple[str, ...], every_tenant: bool) -> sql.Composed:
    literal = sql.Literal("{" + ",".join(path) + "}")
    at = sql.SQL("(metadata #> {}::text[])").format(literal)
    value = sql.SQL("({}::text)").format(at)
    rows = sql.SQL(
        "FROM {t} WHERE event_type = %(event_type)s AND invalidated_at IS NULL "
        "AND archived_at IS NULL AND {at} IS NOT NULL"
    ).format(t=table, at=at)
    tenants: sql.Composable = sql.SQL("SELECT %(tenant_id)s::text")
    if every_tenant:
        tenants = sql.SQL(
            "(SELECT tenant_id {rows} ORDER BY tenant_id LIMIT 1) UNION ALL "
            "SELECT (SELECT tenant_id {rows} AND tenant_id > tenants.t ORDER BY tenant_id LIMIT 1) "
            "FROM tenants WHERE t IS NOT NULL"
        ).format(rows=rows)
    return sql.SQL(
        "WITH RECURSIVE tenants(t) AS ({tenants}), "
        "walk(t, v) AS (SELECT t, (SELECT {value} {rows} AND tenant_id = tenants.t ORDER BY {value} LIMIT 1) "
        "FROM tenants WHERE t IS NOT NULL UNION ALL "
        "SELECT t, (SELECT {value} {rows} AND tenant_id = walk.t AND {value} > walk.v "
        "ORDER BY {value} LIMIT 1) FROM walk WHERE v IS NOT NULL) "
        "SELECT DISTINCT v FROM walk WHERE v IS NOT NULL"
    ).format(tenants=tenants, value=value, rows=rows)


def facet_values(
    cur: psycopg.Cursor[Any],
    table: sql.Composable,
    tenant_id: str | None,
    event_type: str,
    path: tuple[str, ...],
) -> list[Any]:
    """See :meth:`memlane.stores.base.Store.facet_values` (one recursive statement).

    Raises:
        ValidationError: ``path`` is not one of :data:`~memlane.stores.base.FACET_PATHS`.
    """
    path = check_facet_path(path)
    query = _query(table, path, tenant_id is None)
    rows = cur.execute(query, {"event_type": event_type, "tenant_id": tenant_id}).fetchall()
    return decoded_distinct((r[0] for r in rows), 2**31 - 1)
