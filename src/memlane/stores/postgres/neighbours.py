"""Stored neighbours of candidate rows (:meth:`~memlane.stores.base.Store.neighbours`) in one statement.

The neighbours of a key are the ``radius`` rows before and after it in its (tenant, session) by
``seq``. Two ways to find them, chosen per session in the statement itself:

* **a window** over the session's rows from the ``radius``-th row before its first key to the
  ``radius``-th after its last one (an index range of ``ix_memlane_episodes_session_seq``, then
  ``lag``/``lead``), when that ``seq`` range is at most :data:`RANGE_PER_KEY` rows per key and
  neighbour: many keys close together, as a recall's pool of a scope usually is;
* **probes** otherwise: per key ``2 * radius`` index probes (``ORDER BY seq LIMIT 1 OFFSET k``),
  whose cost never grows with the session.

Either way the result is the same rows: the window sees every row of the range in ``seq`` order.
"""

from __future__ import annotations

from psycopg import sql

__all__ = ["RANGE_PER_KEY", "neighbours_statement"]

RANGE_PER_KEY = 64
"""Session rows (``seq`` span) per key and neighbour up to which the window is read instead of probing."""

_MAX_SEQ = 2**63 - 1


def neighbours_statement(table: sql.Composable, radius: int) -> sql.Composed:
    """The statement: ``(key, session_id, tags, before_radius .. before_1, after_1 .. after_radius)`` rows.

    Parameters: ``%(keys)s`` (``int8[]``). Rows are ordered by key; a missing neighbour is NULL.
    """
    same = sql.SQL(
        "x.tenant_id OPERATOR(pg_catalog.=) {g}.tenant_id "
        "AND x.session_id OPERATOR(pg_catalog.=) {g}.session_id"
    )
    window_cols = sql.SQL(", ").join(
        [sql.SQL("lag(x.seq, {k}) OVER p AS b{k}").format(k=sql.Literal(k)) for k in range(radius, 0, -1)]
        + [sql.SQL("lead(x.seq, {k}) OVER p AS a{k}").format(k=sql.Literal(k)) for k in range(1, radius + 1)]
    )
    window_refs = sql.SQL(", ").join(
        [sql.SQL("w.b{k}").format(k=sql.Literal(k)) for k in range(radius, 0, -1)]
        + [sql.SQL("w.a{k}").format(k=sql.Literal(k)) for k in range(1, radius + 1)]
    )
    before = sql.SQL(
        "(SELECT x.seq FROM {t} AS x WHERE {same} AND x.seq OPERATOR(pg_catalog.<) c.seq "
        "ORDER BY x.seq DESC LIMIT 1 OFFSET {k})"
    )
    after = sql.SQL(
        "(SELECT x.seq FROM {t} AS x WHERE {same} AND x.seq OPERATOR(pg_catalog.>) c.seq "
        "ORDER BY x.seq LIMIT 1 OFFSET {k})"
    )
    same_c = same.format(g=sql.Identifier("c"))
    probes = sql.SQL(", ").join(
        [before.format(t=table, same=same_c, k=sql.Literal(k - 1)) for k in range(radius, 0, -1)]
        + [after.format(t=table, same=same_c, k=sql.Literal(k - 1)) for k in range(1, radius + 1)]
    )
    same_g = same.format(g=sql.Identifier("g"))
    span = sql.SQL("g.hi - g.lo + 1 OPERATOR(pg_catalog.<=) {per} * {width} * g.n").format(
        per=sql.Literal(RANGE_PER_KEY), width=sql.Literal(2 * radius)
    )
    return sql.SQL(
        "WITH c AS (SELECT seq, tenant_id, session_id, tags FROM {t} "
        "WHERE seq OPERATOR(pg_catalog.=) ANY(%(keys)s::int8[])), "
        "g AS (SELECT tenant_id, session_id, min(seq) AS lo, max(seq) AS hi, count(*) AS n "
        "FROM c GROUP BY tenant_id, session_id), "
        "w AS (SELECT e.* FROM g CROSS JOIN LATERAL "
        "(SELECT x.seq, {window_cols} FROM {t} AS x WHERE {same_g} "
        "AND x.seq OPERATOR(pg_catalog.>=) coalesce((SELECT x.seq FROM {t} AS x WHERE {same_g} "
        "AND x.seq OPERATOR(pg_catalog.<) g.lo ORDER BY x.seq DESC LIMIT 1 OFFSET {r1}), 0) "
        "AND x.seq OPERATOR(pg_catalog.<=) coalesce((SELECT x.seq FROM {t} AS x WHERE {same_g} "
        "AND x.seq OPERATOR(pg_catalog.>) g.hi ORDER BY x.seq LIMIT 1 OFFSET {r1}), {max}) "
        "WINDOW p AS (ORDER BY x.seq)) AS e "
        "WHERE {span}) "
        "SELECT c.seq, c.session_id, c.tags, {window_refs} FROM c "
        "JOIN w ON w.seq OPERATOR(pg_catalog.=) c.seq "
        "UNION ALL "
        "SELECT c.seq, c.session_id, c.tags, {probes} FROM c JOIN g "
        "ON g.tenant_id OPERATOR(pg_catalog.=) c.tenant_id "
        "AND g.session_id OPERATOR(pg_catalog.=) c.session_id "
        "WHERE NOT ({span}) "
        "ORDER BY 1"
    ).format(
        t=table,
        window_cols=window_cols,
        window_refs=window_refs,
        same_g=same_g,
        r1=sql.Literal(radius - 1),
        max=sql.Literal(_MAX_SEQ),
        span=span,
        probes=probes,
    )
