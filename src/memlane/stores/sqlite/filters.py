"""An :class:`~memlane.stores.base.EpisodeFilter` as a WHERE clause over ``episodes``.

Times are compared as Unix microseconds; tags are looked up in ``episode_tags (tag, seq)``,
so an AND of ``n`` tags is an ``INTERSECT`` of ``n`` index lookups (:func:`tags_sql`). SQLite has no
statistics on how many rows a tag holds, and left alone it walks a scope's time index testing every row
against the tag list; :func:`source` counts the tags' rows first (a capped index range) and, when one is
rare, reads the rows from the tag index instead. Metadata conditions on the value index
(:mod:`memlane.stores.sqlite.value_index`) are counted and read the same way; elsewhere (:func:`where`)
they are JSON tests of ``episodes.metadata``. Every plan returns the same rows.
"""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from datetime import datetime
from typing import Any

from memlane.stores.base import EpisodeFilter, MetadataCondition, under_value_root, value_indexed
from memlane.stores.common import SQL_OPERATORS
from memlane.stores.sqlite.base import to_us
from memlane.stores.sqlite.value_index import probe

__all__ = ["json_path", "metadata_sql", "source", "tags_sql", "where"]

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
_AS_KNOWN_FIELDS = ("valid_at", "current_at")
_VALID_AS_KNOWN = (
    "valid_from_us <= ? AND (valid_until_us IS NULL OR valid_until_us > ? OR invalidated_at_us > ?)"
)
"""``valid_at`` and ``current_at`` together (``as_of`` with ``known_at``), replacing both conditions:
valid at ``valid_at`` as known at ``current_at``. A row superseded later than ``current_at`` was
open-ended then (its ``valid_until`` is written when it is superseded); one superseded earlier is
history, valid until its ``valid_until``. (A row's own end date overwritten by a later supersede is
not recovered: the row keeps one ``valid_until``.)"""


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
    as_known = flt.valid_at is not None and flt.current_at is not None
    for field, condition, times in _COMPARISONS:
        value = getattr(flt, field)
        if value is None or (as_known and field in _AS_KNOWN_FIELDS):
            continue
        clauses.append(condition)
        params.extend([to_us(value) if isinstance(value, datetime) else value] * times)
    if flt.valid_at is not None and flt.current_at is not None:
        clauses.append(_VALID_AS_KNOWN)
        params.extend([to_us(flt.valid_at), to_us(flt.valid_at), to_us(flt.current_at)])
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


TAG_DRIVEN_ROWS = 64
"""Rows of the rarest tag, per row a query wants, up to which :func:`source` reads from the tag index."""

_TAG_DRIVEN_CAP = 8192
_METADATA_FACTOR = 32


def source(conn: sqlite3.Connection, flt: EpisodeFilter, wanted: int | None) -> tuple[str, str, list[Any]]:
    """The ``FROM`` and ``WHERE`` of ``flt``'s rows, and their parameters, by the faster plan for them.

    The drivers are ``flt.tags`` and its metadata conditions on the value index
    (:func:`~memlane.stores.base.value_indexed`). When the rarest holds at most
    ``TAG_DRIVEN_ROWS * wanted`` rows (32 times more with a metadata condition off the value
    index's roots, whose selectivity is unknown; any number up to 8,192 when ``wanted`` is
    ``None``: the query reads every row), the rows come from its index (``CROSS JOIN`` keeps
    SQLite from reordering it) and the other conditions are tested on those rows only;
    otherwise the plain :func:`where` over ``episodes``, which an ``ORDER BY ... LIMIT`` can
    stop early. Every plan returns the rows of :func:`where`.

    Args:
        conn: The connection (one capped count per driver is read).
        flt: The filter.
        wanted: Rows the query stops after (its ``LIMIT``), or ``None`` when it reads them all.

    Returns:
        ``(" FROM ...", " WHERE ..." or "", params)``; the columns of ``episodes`` keep their names.
    """
    cap = _TAG_DRIVEN_CAP if wanted is None else TAG_DRIVEN_ROWS * max(1, wanted)
    if not all(map(under_value_root, flt.metadata)):
        cap *= _METADATA_FACTOR
    cap = min(cap, _TAG_DRIVEN_CAP * _METADATA_FACTOR)
    driver = _rarest(conn, flt, cap)
    if driver is None:
        where_sql, params = where(flt)
        return " FROM episodes", where_sql, params
    if isinstance(driver, MetadataCondition):
        rest, params = where(
            replace(flt, tags=(), metadata=tuple(m for m in flt.metadata if m is not driver))
        )
        driven, driven_params = probe(driver)
        driven = driven.replace("SELECT seq FROM", "SELECT seq AS driven_seq FROM", 1)
        tagged = ["EXISTS (SELECT 1 FROM episode_tags WHERE tag = ? AND seq = episodes.seq)"] * len(flt.tags)
        rest = " AND ".join(filter(None, [rest.removeprefix(" WHERE "), *tagged]))
        from_sql = f" FROM ({driven}) AS driven CROSS JOIN episodes ON episodes.seq = driven.driven_seq"
        return from_sql, " WHERE " + rest if rest else "", [*driven_params, *params, *flt.tags]
    rest, params = where(replace(flt, tags=()))
    tagged_sql = tags_sql(len(flt.tags)).replace("SELECT seq FROM", "SELECT seq AS tagged_seq FROM", 1)
    from_sql = f" FROM ({tagged_sql}) AS tagged CROSS JOIN episodes ON episodes.seq = tagged.tagged_seq"
    return from_sql, rest, [*flt.tags, *params]


def _rarest(conn: sqlite3.Connection, flt: EpisodeFilter, cap: int) -> MetadataCondition | str | None:
    """The driver of ``flt`` with the fewest rows if they are at most ``cap``: a value-index condition, else
    ``"tags"`` (the INTERSECT of every tag, driven by the rarest); ``None`` when none is that rare.

    Each count is an index range of at most one more entry than the best so far: value probes first
    (usually the rarest), then the tags.
    """
    best: MetadataCondition | str | None = None
    bound = cap + 1
    for condition in flt.metadata:
        if value_indexed(condition):
            probe_sql, params = probe(condition)
            rows = _count(conn, probe_sql, params, bound)
            if rows < bound:
                best, bound = condition, rows
    for tag in flt.tags:
        rows = _count(conn, "SELECT seq FROM episode_tags WHERE tag = ?", [tag], bound)
        if rows < bound:
            best, bound = "tags", rows
    return best


def _count(conn: sqlite3.Connection, rows_sql: str, params: list[Any], cap: int) -> int:
    """Rows of ``rows_sql``, counted up to ``cap``."""
    return int(conn.execute(f"SELECT count(*) FROM ({rows_sql} LIMIT ?)", [*params, cap]).fetchone()[0])


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
