"""An :class:`~memlane.stores.base.EpisodeFilter` as a WHERE clause over ``memlane_episodes``.

Tags are a ``text[]`` column with a GIN index, so an AND filter is one ``tags @> %s`` test;
times are ``timestamptz`` compared with bound ``datetime`` values.
"""

from __future__ import annotations

from typing import Any

from psycopg import sql

from memlane.stores.base import EpisodeFilter, MetadataCondition, value_indexed
from memlane.stores.common import SQL_OPERATORS

__all__ = ["metadata_sql", "value_sql", "where"]

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


def where(
    flt: EpisodeFilter, *extra: str, values: sql.Composable | None = None
) -> tuple[sql.Composed, list[Any]]:
    """The WHERE clause of ``flt`` over ``memlane_episodes``, and its parameters.

    Args:
        flt: The filter (see :class:`~memlane.stores.base.EpisodeFilter` for what each field means).
        *extra: Fixed SQL conditions ANDed to it (never user input).
        values: The schema's value index table (``memlane_episode_metadata_values``): metadata
            conditions on it (:func:`~memlane.stores.base.value_indexed`) read it
            (:func:`value_sql`), the others test the JSON; ``None``: every one tests the JSON.
            Either way the same rows pass.

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
        clause, bound = _metadata_clause(meta, values)
        clauses.append(clause)
        params.extend(bound)
    clauses.extend(sql.SQL(e) for e in extra)
    if not clauses:
        return sql.Composed([]), params
    return sql.SQL(" WHERE ") + sql.SQL(" AND ").join(clauses), params


def _metadata_clause(
    condition: MetadataCondition, values: sql.Composable | None
) -> tuple[sql.Composable, list[Any]]:
    """``condition`` from the value index ``values`` when it is on it, else its JSON test."""
    if values is not None and value_indexed(condition):
        return value_sql(condition, values)
    text, bound = metadata_sql(condition)
    return sql.SQL(text), bound  # fixed text: only the operator varies, from SQL_OPERATORS


def value_sql(condition: MetadataCondition, values: sql.Composable) -> tuple[sql.Composed, list[Any]]:
    """A :func:`~memlane.stores.base.value_indexed` ``condition`` as a probe of the value index ``values``.

    Schema migration 18 keeps a row ``(seq, path, kind, value_text | value_num)`` for every string,
    number and boolean leaf under :data:`~memlane.stores.base.VALUE_INDEX_ROOTS`: numbers in
    ``value_num`` (``numeric``), strings and booleans (``'true'``/``'false'``) in ``value_text``
    (``COLLATE "C"``), each column with its ``(path, ..., seq)`` index, so the condition is one
    index range, the rows of :func:`metadata_sql`'s JSON test. Fixed SQL text, bound values.
    """
    operator = SQL_OPERATORS[condition.op]
    path = list(condition.path)
    if condition.kind == "number":
        test, params = f"value_num {operator} %s::numeric", [path, condition.value]
    else:
        operand = condition.value if condition.kind == "string" else "true" if condition.value else "false"
        test, params = f"kind = %s AND value_text {operator} %s", [path, condition.kind, operand]
    probe = sql.SQL("seq IN (SELECT seq FROM {values} WHERE path = %s::text[] AND " + test + ")")
    return probe.format(values=values), params


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
