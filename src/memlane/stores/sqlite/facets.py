"""Distinct values of a facet path (:data:`~memlane.stores.base.FACET_PATHS`) from its partial index.

Schema migration 13 indexes ``(event_type, tenant_id, metadata -> '<path>')`` over the active rows
(``invalidated_at_us`` and ``archived_at_us`` null) that hold the path. :func:`facet_values` walks it
as a loose index scan: a recursive query whose every step is one ``min()`` probe past the last value
(and, for every tenant, past the last tenant), so it costs one probe per distinct value whatever the
number of rows. The query repeats the index's expression and condition word for word: SQLite uses a
partial expression index only then. The path is a fixed constant, never input.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from memlane.stores.base import FACET_PATHS
from memlane.stores.common import check_facet_path, decoded_distinct
from memlane.stores.sqlite.filters import json_path

__all__ = ["facet_values"]


def _expression(path: tuple[str, ...]) -> str:
    return "(metadata -> '" + json_path(path) + "')"


def _query(path: tuple[str, ...], every_tenant: bool) -> str:
    value = _expression(path)
    active = f"invalidated_at_us IS NULL AND archived_at_us IS NULL AND {value} IS NOT NULL"
    rows = f"FROM episodes WHERE event_type = :event_type AND {active}"
    tenants = (
        f"SELECT min(tenant_id) {rows} UNION ALL "
        f"SELECT (SELECT min(tenant_id) {rows} AND tenant_id > tenants.t) FROM tenants WHERE t IS NOT NULL"
        if every_tenant
        else "SELECT :tenant_id"
    )
    return (
        f"WITH RECURSIVE tenants(t) AS ({tenants}), "
        f"walk(t, v) AS (SELECT t, (SELECT min({value}) {rows} AND tenant_id = tenants.t) "
        "FROM tenants WHERE t IS NOT NULL UNION ALL "
        f"SELECT t, (SELECT min({value}) {rows} AND tenant_id = walk.t AND {value} > walk.v) "
        "FROM walk WHERE v IS NOT NULL) "
        "SELECT DISTINCT v FROM walk WHERE v IS NOT NULL"
    )


_QUERIES = {(path, every): _query(path, every) for path in FACET_PATHS for every in (False, True)}


def facet_values(
    conn: sqlite3.Connection, tenant_id: str | None, event_type: str, path: tuple[str, ...]
) -> list[Any]:
    """See :meth:`memlane.stores.base.Store.facet_values` (one recursive statement).

    Raises:
        ValidationError: ``path`` is not one of :data:`~memlane.stores.base.FACET_PATHS`.
    """
    path = check_facet_path(path)
    sql = _QUERIES[(path, tenant_id is None)]
    params = {"event_type": event_type, "tenant_id": tenant_id}
    return decoded_distinct((r[0] for r in conn.execute(sql, params)), 2**31 - 1)
