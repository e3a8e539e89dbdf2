"""Stored neighbours of candidate rows (:meth:`~memlane.stores.base.Store.neighbours`) in one statement.

The neighbours of a key are the ``radius`` rows before and after it in its (tenant, session) by
``seq``. Sessions are mostly written in runs (a conversation's turns in one batch, or one turn
after the other), so the ``k``-th row before a key is usually the row ``seq - k`` itself. The
statement therefore finds them in two steps:

1. **adjacent rows**: one index scan of the primary ``seq`` b-tree for the ``2 * radius`` numbers
   ``seq ± 1 .. radius`` around every key (a sorted ``= ANY`` array: one pass for all keys, no
   per-key descent). The ``k``-th neighbour before a key *is* ``seq - k`` when the rows
   ``seq - 1 .. seq - k`` all exist in the key's (tenant, session): ``seq`` values are unique
   integers, so no other row of the session can lie between them (likewise after);
2. **probes** for the rest: where that run is broken (a deleted row, another session written in
   between, the start or end of a session), the neighbour is an index probe of
   ``ix_memlane_episodes_session_seq`` (``ORDER BY seq LIMIT 1 OFFSET k-1``), in the ``ELSE`` of a
   ``CASE``, so PostgreSQL runs it only for those keys; its cost never grows with the session.

Either way the answer is the same rows (:func:`neighbours_statement` with ``adjacent=False``
builds the probes-only statement, the plain path the equality test compares against). It
replaced a window over each session's ``seq`` range, which read a whole 100,000-row session for
1,000 keys spread over it (about 0.55 s; this statement: about 25 ms, both with the machine's
load about 9).
"""

from __future__ import annotations

from psycopg import sql

__all__ = ["neighbours_statement"]

_EQ = sql.SQL("OPERATOR(pg_catalog.=)")


def _same_scope(a: str, b: str) -> sql.Composed:
    """``a`` and ``b`` (table aliases) are rows of the same tenant and session."""
    return sql.SQL("{a}.tenant_id {eq} {b}.tenant_id AND {a}.session_id {eq} {b}.session_id").format(
        a=sql.Identifier(a), b=sql.Identifier(b), eq=_EQ
    )


def _shifted(d: int) -> sql.Composed:
    """``c.seq + d`` (parenthesised: ``OPERATOR()`` binds looser than comparisons)."""
    return sql.SQL("(c.seq OPERATOR(pg_catalog.+) {d})").format(d=sql.Literal(d))


def _alias(d: int) -> str:
    """The alias of the adjacent row ``c.seq + d``: ``b2`` for ``d = -2``, ``a1`` for ``d = 1``."""
    return f"{'b' if d < 0 else 'a'}{abs(d)}"


def _probe(table: sql.Composable, d: int) -> sql.Composed:
    """The ``|d|``-th row before (``d < 0``) or after the key in its session: one index probe."""
    before = d < 0
    return sql.SQL(
        "(SELECT x.seq FROM {t} AS x WHERE {same} AND x.seq OPERATOR(pg_catalog.{cmp}) c.seq "
        "ORDER BY x.seq{desc} LIMIT 1 OFFSET {k})"
    ).format(
        t=table,
        same=_same_scope("x", "c"),
        cmp=sql.SQL("<" if before else ">"),
        desc=sql.SQL(" DESC" if before else ""),
        k=sql.Literal(abs(d) - 1),
    )


def _neighbour(table: sql.Composable, d: int, *, adjacent: bool) -> sql.Composed:
    """Neighbour ``d``'s column: ``c.seq + d`` when the run of rows up to it is unbroken, else a probe."""
    if not adjacent:
        return _probe(table, d)
    step = -1 if d < 0 else 1
    run = sql.SQL(" AND ").join(
        sql.SQL("{} IS NOT NULL").format(sql.Identifier(_alias(k), "seq"))
        for k in range(step, d + step, step)
    )
    return sql.SQL("CASE WHEN {run} THEN {seq} ELSE {probe} END").format(
        run=run, seq=_shifted(d), probe=_probe(table, d)
    )


def neighbours_statement(table: sql.Composable, radius: int, *, adjacent: bool = True) -> sql.Composed:
    """The statement: ``(key, session_id, tags, before_radius .. before_1, after_1 .. after_radius)`` rows.

    Args:
        table: The schema-qualified ``memlane_episodes``.
        radius: Neighbours on each side (>= 1).
        adjacent: Take the adjacent rows where the run is unbroken (step 1 of the module
            docstring); ``False``: probe every neighbour (the plain path, same rows).

    Parameters: ``%(keys)s`` (``int8[]``). Rows are ordered by key; a missing neighbour is NULL;
    unknown keys have no row.
    """
    offsets = [-k for k in range(radius, 0, -1)] + list(range(1, radius + 1))
    columns = sql.SQL(", ").join(_neighbour(table, d, adjacent=adjacent) for d in offsets)
    near: sql.Composable = sql.SQL("")
    joins: sql.Composable = sql.SQL("")
    if adjacent:
        near = sql.SQL(
            ", near AS (SELECT x.seq, x.tenant_id, x.session_id FROM {t} AS x WHERE x.seq {eq} ANY(ARRAY("
            "SELECT (c.seq OPERATOR(pg_catalog.+) d.d) FROM c CROSS JOIN unnest({offsets}::int8[]) AS d(d))))"
        ).format(t=table, eq=_EQ, offsets=sql.Literal(offsets))
        joins = sql.SQL("").join(
            sql.SQL(" LEFT JOIN near AS {n} ON {n}.seq {eq} {seq} AND {same}").format(
                n=sql.Identifier(_alias(d)), eq=_EQ, seq=_shifted(d), same=_same_scope(_alias(d), "c")
            )
            for d in offsets
        )
    return sql.SQL(
        "WITH c AS (SELECT seq, tenant_id, session_id, tags FROM {t} "
        "WHERE seq {eq} ANY(%(keys)s::int8[])){near} "
        "SELECT c.seq, c.session_id, c.tags, {columns} FROM c{joins} ORDER BY c.seq"
    ).format(t=table, eq=_EQ, near=near, columns=columns, joins=joins)
