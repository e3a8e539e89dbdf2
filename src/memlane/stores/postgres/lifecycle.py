"""The PostgreSQL store's lifecycle statements: supersede, merge, archive, delete, bookkeeping.

Each function runs in the caller's transaction (a cursor from the store) over the
schema-qualified ``memlane_episodes`` table ``t``. Tags and vectors live in the episode's
row, so a ``DELETE`` removes them too (its ``memlane_retrievals`` row goes by a trigger).
Statements whose plan depends on the values (range deletes) are sent unprepared.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime
from itertools import chain
from typing import Any

import psycopg
from psycopg import sql

from memlane.errors import DuplicateEpisodeError
from memlane.stores.base import Supersession
from memlane.stores.common import MergeInto, check_superseded, supersede_params
from memlane.stores.postgres.base import CODEC, reject_nul
from memlane.stores.retrievals import Pending

__all__ = [
    "add_keyword_stats",
    "archive",
    "archive_merged",
    "delete",
    "delete_created_before",
    "delete_session_scoped",
    "record_retrievals",
    "refuse_taken_ids",
    "retire",
    "stats_deltas",
]

Cursor = psycopg.Cursor[Any]

_SUPERSEDE = sql.SQL(
    "UPDATE {t} SET valid_until = %s, invalidated_at = %s, superseded_by = %s, supersede_reason = %s "
    "WHERE {where}"
)
_SUPERSEDE_WHERE = sql.SQL("id = %s AND superseded_by IS NULL")
_SUPERSEDE_WHERE_TENANT = sql.SQL("id = %s AND superseded_by IS NULL AND tenant_id = %s")


def refuse_taken_ids(cur: Cursor, t: sql.Composed, ids: Sequence[str]) -> None:
    """Refuse ids that repeat in the batch or exist for any tenant (one lookup on ``ix_memlane_episodes_id``).

    The unique constraint is ``(tenant_id, id)`` (a tenant-sharded cluster can enforce no other),
    so an id taken by another tenant is refused here, before the ``COPY``, as the SQLite store
    refuses it. Two transactions inserting one new id for two tenants at the same instant can
    both pass this check (within one tenant the constraint still refuses the second).

    Raises:
        DuplicateEpisodeError: an id repeats in ``ids`` or already exists.
    """
    unique = set(ids)
    if len(unique) != len(ids):
        raise DuplicateEpisodeError("an episode id repeats in the batch (episodes are append-only)")
    row = cur.execute(
        sql.SQL("SELECT id FROM {t} WHERE id = ANY(%b::text[]) LIMIT 1").format(t=t),
        (list(unique),),
        prepare=False,
    ).fetchone()
    if row is not None:
        raise DuplicateEpisodeError(f"episode id {row[0]!r} already exists (episodes are append-only)")


def stats_deltas(
    rows: Iterable[tuple[str, str, str | None, int | None]],
) -> tuple[list[list[Any]], list[list[Any]]]:
    """The keyword-statistics deltas of new rows, as the columns of the two pending tables.

    Per scope, the rows and their summed ``token_count`` (``memlane_scope_stats_pending``); per
    scope and term, the rows holding the term (``memlane_term_df_pending``): a row counts once for
    each distinct element of ``string_to_array(terms, ' ')``, the rule of schema migration 14's
    recount and of the delete trigger, in SQL (``str.split(" ")`` of a non-empty terms column is
    the same list; an empty or null column has none).

    Args:
        rows: ``(tenant_id, session_id, terms column, token_count)`` of each new row.

    Returns:
        ``([tenant_ids, session_ids, rows, tokens], [tenant_ids, session_ids, terms, dfs])``.
    """
    by_scope: dict[tuple[str, str], list[tuple[str | None, int | None]]] = {}
    for tenant, session, terms, tokens in rows:
        by_scope.setdefault((tenant, session), []).append((terms, tokens))
    scopes: list[list[Any]] = [[], [], [], []]
    term_df: list[list[Any]] = [[], [], [], []]
    for (tenant, session), found in by_scope.items():
        scope = (tenant, session, len(found), sum(n or 0 for _, n in found))
        for column, value in zip(scopes, scope, strict=True):
            column.append(value)
        counts = Counter(chain.from_iterable(set(terms.split(" ")) for terms, _ in found if terms))
        term_df[0].extend([tenant] * len(counts))
        term_df[1].extend([session] * len(counts))
        term_df[2].extend(counts.keys())
        term_df[3].extend(counts.values())
    return scopes, term_df


_ADD_SCOPE_STATS = sql.SQL(
    "INSERT INTO {p} (txid, tenant_id, session_id, rows, tokens) SELECT pg_catalog.txid_current(), * FROM "
    "ROWS FROM (pg_catalog.unnest(%b::text[]), pg_catalog.unnest(%b::text[]), "
    "pg_catalog.unnest(%b::int8[]), pg_catalog.unnest(%b::int8[]))"
)
_ADD_TERM_DF = sql.SQL(
    "INSERT INTO {p} (txid, tenant_id, session_id, term, df) SELECT pg_catalog.txid_current(), * FROM "
    "ROWS FROM (pg_catalog.unnest(%b::text[]), pg_catalog.unnest(%b::text[]), "
    "pg_catalog.unnest(%b::text[]), pg_catalog.unnest(%b::int8[]))"
)


def add_keyword_stats(
    cur: Cursor,
    pending: tuple[sql.Composed, sql.Composed],
    rows: Iterable[tuple[str, str, str | None, int | None]],
) -> None:
    """Add the rows being written to the scope statistics and the per-scope document frequencies.

    The deltas (:func:`stats_deltas`, counted from the rows the transaction writes rather than
    re-read from the table: two array inserts instead of two lookups of the new rows and a
    ``DISTINCT``/``GROUP BY`` over their terms) go to ``memlane_scope_stats_pending`` (schema
    migration 12) and ``memlane_term_df_pending`` (migration 14). A deferred trigger on the first
    folds both into ``memlane_scope_stats`` and ``memlane_term_df`` at commit, locking the scopes'
    rows, then the terms' rows, in key order: concurrent writers never deadlock on them, whatever
    scopes and order they write.

    Args:
        cur: A cursor in the writing transaction.
        pending: The schema-qualified ``memlane_scope_stats_pending`` and ``memlane_term_df_pending``.
        rows: ``(tenant_id, session_id, terms column, token_count)`` of each row the transaction inserts.

    Raises:
        psycopg.Error: the database failed (the caller's transaction rolls back).
    """
    scopes, term_df = stats_deltas(rows)
    if scopes[0]:
        cur.execute(_ADD_SCOPE_STATS.format(p=pending[0]), scopes)
    if term_df[0]:
        cur.execute(_ADD_TERM_DF.format(p=pending[1]), term_df)


def retire(cur: Cursor, t: sql.Composed, supersessions: Sequence[Supersession]) -> None:
    """Retire each superseded episode (one ``UPDATE`` each).

    Raises:
        EpisodeNotFoundError: one is unknown (for its tenant) or already superseded.
    """
    for sup in supersessions:
        where = _SUPERSEDE_WHERE if sup.tenant_id is None else _SUPERSEDE_WHERE_TENANT
        cur.execute(_SUPERSEDE.format(t=t, where=where), supersede_params(sup, CODEC))
        check_superseded(sup, cur.rowcount)


def archive_merged(cur: Cursor, t: sql.Composed, merge: MergeInto) -> None:
    """Archive a merge's originals into the merged episode (one ``UPDATE``).

    Raises:
        ValidationError: the reason contains a NUL character.
        EpisodeNotFoundError: an original is unknown, archived or superseded.
    """
    reject_nul([merge.reason])
    cur.execute(
        sql.SQL(
            "UPDATE {t} SET archived_at = %s, superseded_by = %s, supersede_reason = %s "
            "WHERE archived_at IS NULL AND superseded_by IS NULL AND id = ANY(%s::text[])"
        ).format(t=t),
        (merge.at, merge.merged_id, merge.reason, list(merge.original_ids)),
    )
    merge.check(cur.rowcount)


def delete_created_before(
    cur: Cursor,
    t: sql.Composed,
    cutoff: datetime,
    keep_importance_from: float | None,
    tenant_id: str | None = None,
) -> int:
    """Delete every episode with ``created_at < cutoff`` (never-forget ones kept; of ``tenant_id``
    only unless ``None``); return how many."""
    conditions = [sql.SQL("created_at < %s")]
    params: list[Any] = [cutoff]
    if keep_importance_from is not None:
        conditions.append(sql.SQL("(importance IS NULL OR importance < %s)"))
        params.append(keep_importance_from)
    if tenant_id is not None:
        conditions.append(sql.SQL("tenant_id = %s"))
        params.append(tenant_id)
    condition = sql.SQL(" AND ").join(conditions)
    cur.execute(sql.SQL("DELETE FROM {t} WHERE {c}").format(t=t, c=condition), params, prepare=False)
    return int(cur.rowcount)


def archive(cur: Cursor, t: sql.Composed, episode_ids: Sequence[str], at: datetime) -> int:
    """Set ``archived_at = at`` on the given not-yet-archived episodes; return how many."""
    cur.execute(
        sql.SQL("UPDATE {t} SET archived_at = %s WHERE archived_at IS NULL AND id = ANY(%s::text[])").format(
            t=t
        ),
        (at, list(episode_ids)),
    )
    return int(cur.rowcount)


_RECORD_RETRIEVALS = sql.SQL(
    "INSERT INTO {r} AS r (tenant_id, seq, added_retrievals, added_last_retrieved_at) "
    "SELECT e.tenant_id, p.seq, p.n, p.at "
    "FROM unnest(%s::bigint[], %s::bigint[], %s::timestamptz[]) AS p(seq, n, at) "
    "JOIN {t} AS e ON e.seq = p.seq ORDER BY p.seq "
    "ON CONFLICT (tenant_id, seq) DO UPDATE SET "
    "added_retrievals = r.added_retrievals + excluded.added_retrievals, "
    "added_last_retrieved_at = greatest(r.added_last_retrieved_at, excluded.added_last_retrieved_at)"
)


def record_retrievals(cur: Cursor, tables: tuple[sql.Composed, sql.Composed], pending: Pending) -> int:
    """Add buffered retrieval counts (:mod:`memlane.stores.retrievals`) in one statement; return rows.

    The counts go to ``memlane_retrievals`` (schema migration 20), not to the episode rows: one
    upsert of narrow rows with one index, where an ``UPDATE`` of the episodes wrote a new ~2 KB
    row version into every episode index. An episode's effective ``retrieve_count`` is its own
    column (the value written at insert) plus ``added_retrievals``, its ``last_retrieved_at`` the
    later of the two (``PostgresStore``'s ``_COLUMNS``). Keys of episodes deleted meanwhile are
    dropped (the join to the episodes). The rows are upserted in key order, so concurrent flushes
    over overlapping keys never deadlock. A flush racing a delete of the same episode can leave
    a row for a ``seq`` no episode has (the delete trigger ran before the insert): harmless,
    since seqs are never reused and every read starts from the episodes.

    Args:
        cur: A cursor in the writing transaction.
        tables: The schema-qualified ``memlane_episodes`` and ``memlane_retrievals``.
        pending: Row key -> (retrievals to add, latest retrieval time).

    Returns:
        The number of row keys given (``len(pending)``).

    Raises:
        psycopg.Error: the database failed (the caller's transaction rolls back).
    """
    if not pending:
        return 0
    keys = sorted(pending)
    cur.execute(
        _RECORD_RETRIEVALS.format(t=tables[0], r=tables[1]),
        (keys, [pending[k][0] for k in keys], [pending[k][1] for k in keys]),
    )
    return len(keys)


def delete_session_scoped(cur: Cursor, t: sql.Composed, tenant_id: str, session_id: str) -> int:
    """Delete the ``session_scoped`` episodes of one session; return how many."""
    cur.execute(
        sql.SQL("DELETE FROM {t} WHERE tenant_id = %s AND session_id = %s AND session_scoped").format(t=t),
        (tenant_id, session_id),
    )
    return int(cur.rowcount)


def delete(cur: Cursor, t: sql.Composed, episode_id: str, tenant_id: str | None) -> bool:
    """Delete one episode by its unique id, if it belongs to ``tenant_id`` (``None``: any tenant)."""
    where = sql.SQL("id = %s") if tenant_id is None else sql.SQL("id = %s AND tenant_id = %s")
    params = [episode_id] if tenant_id is None else [episode_id, tenant_id]
    cur.execute(sql.SQL("DELETE FROM {t} WHERE {where}").format(t=t, where=where), params)
    return cur.rowcount > 0
