"""An :class:`~memlane.stores.base.EpisodeFilter` as a WHERE clause over ``episodes``.

Times are compared as Unix microseconds; tags are looked up in ``episode_tags (tag, seq)``,
so an AND of ``n`` tags is an ``INTERSECT`` of ``n`` index lookups (:func:`tags_sql`).
"""

from __future__ import annotations

from typing import Any

from memlane.stores.base import EpisodeFilter
from memlane.stores.sqlite.base import to_us

__all__ = ["tags_sql", "where"]


def where(flt: EpisodeFilter) -> tuple[str, list[Any]]:  # noqa: C901, PLR0912  (limit debt, #19)
    """The WHERE clause of ``flt`` over ``episodes``, and its parameters.

    Args:
        flt: The filter (see :class:`~memlane.stores.base.EpisodeFilter` for what each field means).

    Returns:
        ``(" WHERE ...", params)``, or ``("", [])`` when nothing is filtered. Column names are
        fixed; every value is a bound parameter.
    """
    clauses: list[str] = []
    params: list[Any] = []
    if flt.tenant_id is not None:
        clauses.append("tenant_id = ?")
        params.append(flt.tenant_id)
    if flt.session_id is not None:
        clauses.append("session_id = ?")
        params.append(flt.session_id)
    if flt.event_type is not None:
        clauses.append("event_type = ?")
        params.append(flt.event_type)
    if flt.created_after is not None:
        clauses.append("created_at_us >= ?")
        params.append(to_us(flt.created_after))
    if flt.created_before is not None:
        clauses.append("created_at_us < ?")
        params.append(to_us(flt.created_before))
    if flt.valid_at is not None:
        clauses.append("valid_from_us <= ? AND (valid_until_us IS NULL OR valid_until_us > ?)")
        params.extend([to_us(flt.valid_at)] * 2)
    if flt.still_valid_at is not None:
        clauses.append("(valid_until_us IS NULL OR valid_until_us > ?)")
        params.append(to_us(flt.still_valid_at))
    if flt.recorded_by is not None:
        clauses.append("recorded_at_us <= ?")
        params.append(to_us(flt.recorded_by))
    if flt.current_at is not None:
        clauses.append("(invalidated_at_us IS NULL OR invalidated_at_us > ?)")
        params.append(to_us(flt.current_at))
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
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


def tags_sql(n: int) -> str:
    """Rows carrying all ``n`` tags: an INTERSECT of ``n`` index lookups (placeholders only)."""
    return " INTERSECT ".join(["SELECT seq FROM episode_tags WHERE tag = ?"] * n)
