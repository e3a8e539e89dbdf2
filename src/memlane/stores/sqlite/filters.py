"""An :class:`~memlane.stores.base.EpisodeFilter` as a WHERE clause over ``episodes``.

Times are compared as Unix microseconds; tags are looked up in ``episode_tags (tag, seq)``,
so an AND of ``n`` tags is an ``INTERSECT`` of ``n`` index lookups (:func:`tags_sql`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memlane.stores.base import EpisodeFilter, MetadataCondition
from memlane.stores.common import SQL_OPERATORS
from memlane.stores.sqlite.base import to_us

__all__ = ["json_path", "metadata_sql", "tags_sql", "where"]

_JSON_TYPES = {"string": "('text')", "number": "('integer', 'real')"}


_COMPARISONS: tuple[tuple[str, str, int], ...] = (
    ("tenant_id", "tenant_id = ?", 1),
    ("session_id", "session_id = ?", 1),
    ("event_type", "event_type = ?", 1),
    ("created_after", "created_at_us >= ?", 1),
    ("created_before", "created_at_us < ?", 1),
    ("valid_at", "valid_from_us <= ? AND (valid_until_us IS NULL OR valid_until_us > ?)", 2),
    ("still_valid_at", "(valid_until_us IS NULL OR valid_until_us > ?)", 1),
    ("recorded_by", "recorded_at_us <= ?", 1),
    ("current_at", "(invalidated_at_us IS NULL OR invalidated_at_us > ?)", 1),
)
"""``(EpisodeFilter field, condition, times its value is bound)`` for the fields that filter when set."""


def where(flt: EpisodeFilter) -> tuple[str, list[Any]]:
    """The WHERE clause of ``flt`` over ``episodes``, and its parameters.

    Args:
        flt: The filter (see :class:`~memlane.stores.base.EpisodeFilter` for what each field means).

    Returns:
        ``(" WHERE ...", params)``, or ``("", [])`` when nothing is filtered. Column names are
        fixed; every value is a bound parameter.
    """
    clauses: list[str] = []
    params: list[Any] = []
    for field, condition, times in _COMPARISONS:
        value = getattr(flt, field)
        if value is not None:
            clauses.append(condition)
            params.extend([to_us(value) if isinstance(value, datetime) else value] * times)
    if flt.exclude_archived:
        clauses.append("archived_at_us IS NULL")
    if flt.retained_after is not None:
        if flt.never_forget_from is None:
            clauses.append("created_at_us >= ?")
            params.append(to_us(flt.retained_after))
        else:
            clauses.append("(created_at_us >= ? OR importance >= ?)")
            params.extend([to_us(flt.retained_after), flt.never_forget_from])
    if flt.tags:
        clauses.append("seq IN (" + tags_sql(len(flt.tags)) + ")")
        params.extend(flt.tags)
    for meta in flt.metadata:
        clause, values = metadata_sql(meta)
        clauses.append(clause)
        params.extend(values)
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


def tags_sql(n: int) -> str:
    """Rows carrying all ``n`` tags: an INTERSECT of ``n`` index lookups (placeholders only)."""
    return " INTERSECT ".join(["SELECT seq FROM episode_tags WHERE tag = ?"] * n)


def json_path(path: tuple[str, ...]) -> str:
    """SQLite's JSON path of checked keys (``$."a"."b"``): bound as a parameter, never SQL text."""
    return "$" + "".join(f'."{key}"' for key in path)


def metadata_sql(condition: MetadataCondition) -> tuple[str, list[Any]]:
    """One :class:`MetadataCondition` over ``episodes.metadata`` (fixed SQL text, bound values)."""
    path = json_path(condition.path)
    params: list[Any]
    kind = condition.kind
    if kind == "null":
        clause, params = "(json_type(metadata, ?) IS NULL OR json_type(metadata, ?) = 'null')", [path, path]
    elif kind == "boolean":
        clause, params = "json_type(metadata, ?) = ?", [path, "true" if condition.value else "false"]
    else:
        operator = SQL_OPERATORS[condition.op]
        clause = f"(json_type(metadata, ?) IN {_JSON_TYPES[kind]} AND json_extract(metadata, ?) {operator} ?)"
        params = [path, path, condition.value]
    if condition.op == "ne":
        return f"NOT coalesce({clause}, 0)", params
    return clause, params
