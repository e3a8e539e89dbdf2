"""An :class:`~memlane.stores.base.EpisodeFilter` as a WHERE clause over ``memlane_episodes``.

Tags are a ``text[]`` column with a GIN index, so an AND filter is one ``tags @> %s`` test;
times are ``timestamptz`` compared with bound ``datetime`` values.
"""

from __future__ import annotations

from typing import Any

from psycopg import sql

from memlane.stores.base import EpisodeFilter, MetadataCondition
from memlane.stores.common import SQL_OPERATORS

__all__ = ["metadata_sql", "where"]

_AT = "metadata #> %s::text[]"
_TEXT_AT = "(metadata #>> %s::text[])"


_COMPARISONS: tuple[tuple[str, sql.Composable, int], ...] = (
    ("tenant_id", sql.SQL("{} = %s").format(sql.Identifier("tenant_id")), 1),
    ("session_id", sql.SQL("{} = %s").format(sql.Identifier("session_id")), 1),
    ("event_type", sql.SQL("{} = %s").format(sql.Identifier("event_type")), 1),
    ("created_after", sql.SQL("created_at >= %s"), 1),
    ("created_before", sql.SQL("created_at < %s"), 1),
    ("valid_at", sql.SQL("valid_from <= %s AND (valid_until IS NULL OR valid_until > %s)"), 2),
    ("still_valid_at", sql.SQL("(valid_until IS NULL OR valid_until > %s)"), 1),
    ("recorded_by", sql.SQL("recorded_at <= %s"), 1),
    ("current_at", sql.SQL("(invalidated_at IS NULL OR invalidated_at > %s)"), 1),
)
"""``(EpisodeFilter field, condition, times its value is bound)`` for the fields that filter when set."""
_VALID_AS_KNOWN = sql.SQL(
    "valid_from <= %s AND (valid_until IS NULL OR valid_until > %s OR invalidated_at > %s)"
)
"""``valid_at`` and ``current_at`` together, as in :mod:`memlane.stores.sqlite.filters`."""


def where(flt: EpisodeFilter, *extra: str) -> tuple[sql.Composed, list[Any]]:
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
    as_known = flt.valid_at is not None and flt.current_at is not None
    for field, condition, times in _COMPARISONS:
        value = getattr(flt, field)
        if value is None or (as_known and field in ("valid_at", "current_at")):
            continue
        clauses.append(condition)
        params.extend([value] * times)
    if as_known:
        clauses.append(_VALID_AS_KNOWN)
        params.extend([flt.valid_at, flt.valid_at, flt.current_at])
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
    for meta in flt.metadata:
        clause, values = metadata_sql(meta)
        clauses.append(sql.SQL(clause))  # fixed text: only the operator varies, from SQL_OPERATORS
        params.extend(values)
    clauses.extend(sql.SQL(e) for e in extra)
    if not clauses:
        return sql.Composed([]), params
    return sql.SQL(" WHERE ") + sql.SQL(" AND ").join(clauses), params


def metadata_sql(condition: MetadataCondition) -> tuple[str, list[Any]]:
    """One :class:`MetadataCondition` over the ``json`` column ``metadata`` (fixed SQL text, bound values).

    The path is a bound ``text[]``; strings compare in code-point order (``COLLATE "C"``, like
    SQLite's ``BINARY``), numbers as ``numeric``.
    """
    path = list(condition.path)
    params: list[Any]
    kind = condition.kind
    if kind == "null":
        clause, params = f"({_AT} IS NULL OR json_typeof({_AT}) = 'null')", [path, path]
    elif kind == "boolean":
        clause = f"(json_typeof({_AT}) = 'boolean' AND {_TEXT_AT} = %s)"
        params = [path, path, "true" if condition.value else "false"]
    else:
        operator = SQL_OPERATORS[condition.op]
        if kind == "string":
            clause = f"(json_typeof({_AT}) = 'string' AND {_TEXT_AT} COLLATE \"C\" {operator} %s)"
        else:
            clause = (
                f"(CASE WHEN json_typeof({_AT}) = 'number' "
                f"THEN {_TEXT_AT}::numeric {operator} %s::numeric ELSE false END)"
            )
        params = [path, path, condition.value]
    if condition.op == "ne":
        return f"NOT coalesce({clause}, false)", params
    return clause, params
