"""An :class:`~memlane.stores.base.EpisodeFilter` as a WHERE clause over ``memlane_episodes``.

Tags are a ``text[]`` column with a GIN index, so an AND filter is one ``tags @> %s`` test;
times are ``timestamptz`` compared with bound ``datetime`` values.
"""

from __future__ import annotations

from typing import Any

from psycopg import sql

from memlane.stores.base import EpisodeFilter

__all__ = ["where"]


def where(flt: EpisodeFilter, *extra: str) -> tuple[sql.Composed, list[Any]]:  # noqa: C901, PLR0912  (limit debt, #19)
    """The WHERE clause of ``flt`` over ``memlane_episodes``, and its parameters.

    Args:
        flt: The filter (see :class:`~memlane.stores.base.EpisodeFilter` for what each field means).
        *extra: Fixed SQL conditions ANDed to it (never user input).

    Returns:
        ``(" WHERE ...", params)``, or an empty clause and ``[]`` when nothing is filtered.
        Every value is a bound parameter; column names are fixed.
    """
    clauses: list[sql.Composable] = []
    params: list[Any] = []
    for column, value in (
        ("tenant_id", flt.tenant_id),
        ("session_id", flt.session_id),
        ("event_type", flt.event_type),
    ):
        if value is not None:
            clauses.append(sql.SQL("{} = %s").format(sql.Identifier(column)))
            params.append(value)
    if flt.created_after is not None:
        clauses.append(sql.SQL("created_at >= %s"))
        params.append(flt.created_after)
    if flt.created_before is not None:
        clauses.append(sql.SQL("created_at < %s"))
        params.append(flt.created_before)
    if flt.valid_at is not None:
        clauses.append(sql.SQL("valid_from <= %s AND (valid_until IS NULL OR valid_until > %s)"))
        params.extend([flt.valid_at, flt.valid_at])
    if flt.still_valid_at is not None:
        clauses.append(sql.SQL("(valid_until IS NULL OR valid_until > %s)"))
        params.append(flt.still_valid_at)
    if flt.recorded_by is not None:
        clauses.append(sql.SQL("recorded_at <= %s"))
        params.append(flt.recorded_by)
    if flt.current_at is not None:
        clauses.append(sql.SQL("(invalidated_at IS NULL OR invalidated_at > %s)"))
        params.append(flt.current_at)
    if flt.exclude_archived:
        clauses.append(sql.SQL("archived_at IS NULL"))
    if flt.retained_after is not None:
        if flt.never_forget_from is None:
            clauses.append(sql.SQL("created_at >= %s"))
            params.append(flt.retained_after)
        else:
            clauses.append(sql.SQL("(created_at >= %s OR importance >= %s)"))
            params.extend([flt.retained_after, flt.never_forget_from])
    if flt.tags:
        clauses.append(sql.SQL("tags @> %s::text[]"))
        params.append(list(flt.tags))
    clauses.extend(sql.SQL(e) for e in extra)
    if not clauses:
        return sql.Composed([]), params
    return sql.SQL(" WHERE ") + sql.SQL(" AND ").join(clauses), params
