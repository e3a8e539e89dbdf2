"""Session episodes in the schema of a :class:`~memlane.stores.postgres.PostgresStore`.

Built from the episode store (``store.session_store``) and sharing its connection pool,
its transactions (driver errors translated into :class:`~memlane.errors.StoreError`) and
its pgvector binary parameters. Tables (schema migration 3 in
:mod:`memlane.stores.postgres.migrations`), all prefixed ``memlane_``:

* ``memlane_sessions``: one header row per ``(tenant_id, session_id)`` (unique constraint);
  an index on ``(tenant_id, agent_id, user_id, ended_at)`` serves "recent" and the owner filter.
* ``memlane_session_messages (tenant_id, session_seq, position, message)``: each message's JSON
  text (``text``, not ``json``, so it reads back byte for byte).
* ``memlane_session_windows``: one row per turn: position range, time, embedded text and
  its pgvector ``vector``; deleting a session cascades to both child tables.

Every key leads with ``tenant_id`` (migration 9: ready for a tenant-sharded cluster); the child
rows carry their session's tenant and reference ``(tenant_id, seq)`` of the session. Reads by a
session key alone use the plain ``(session_seq, ...)`` indexes.

Search is exact: the owner's windows (through the owner index and the
``(session_seq, turn)`` index) are scored with pgvector's inner product ``<#>`` (the cosine,
for the unit vectors memlane stores) and the ``top_n`` best returned. A tenant's agent
and user rarely have more than a few thousand windows, where this takes a few
milliseconds; no ANN index is kept for windows.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np
from numpy.typing import NDArray
from psycopg import sql
from psycopg.types.json import Json

from memlane.errors import StoreError
from memlane.stores.base import VectorCandidates
from memlane.stores.common import check_dims
from memlane.stores.postgres.base import CODEC, PostgresHost, key_array
from memlane.stores.sessions_base import (
    NO_VECTOR_MODEL,
    SessionAppend,
    SessionHeader,
    SessionOwner,
    SessionStoreBase,
    SessionWrite,
    StoredWindow,
    checked_window_vectors,
    header_from_row,
    refuse_duplicate,
    window_from_row,
)

__all__ = ["PostgresSessionStore"]

_HEADER = sql.SQL(
    "seq, tenant_id, session_id, agent_id, user_id, started_at, ended_at, message_count, turn_count, metadata"
)
_S_HEADER = sql.SQL(
    "s.seq, s.tenant_id, s.session_id, s.agent_id, s.user_id, s.started_at, s.ended_at, s.message_count, "
    "s.turn_count, s.metadata"
)


class PostgresSessionStore(SessionStoreBase):
    """Session episodes in a :class:`~memlane.stores.postgres.PostgresStore`'s schema (module docstring).

    Args:
        store: The episode store whose pool, schema and pgvector types are shared.
    """

    def __init__(self, store: PostgresHost) -> None:
        self._store = store
        schema, ext = store.sql_names()
        self._sessions = sql.SQL("{}.memlane_sessions").format(schema)
        self._messages = sql.SQL("{}.memlane_session_messages").format(schema)
        self._windows = sql.SQL("{}.memlane_session_windows").format(schema)
        self._vec = sql.SQL("%b::{}.vector").format(ext)
        self._ip = sql.SQL("OPERATOR({}.<#>)").format(ext)

    # -- writes ------------------------------------------------------------------------

    def insert_session(
        self, write: SessionWrite, vectors: NDArray[np.float32] | None, *, append: bool
    ) -> SessionHeader:
        """Store a new session or append a batch (see :meth:`SessionStore.insert_session`)."""
        matrix = checked_window_vectors(write, vectors, lambda: self._store.embedding_model)
        params = [self._store.vector_param(row) for row in matrix]
        owner = write.owner
        where = SessionAppend.new(write)
        with self._store.transaction("insert_session") as cur:
            row = cur.execute(
                sql.SQL(
                    "INSERT INTO {t} (tenant_id, session_id, agent_id, user_id, started_at, ended_at, "
                    "message_count, turn_count, metadata) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) "
                    "ON CONFLICT (tenant_id, session_id) DO NOTHING RETURNING {cols}"
                ).format(t=self._sessions, cols=_HEADER),
                (
                    owner.tenant_id,
                    write.session_id,
                    owner.agent_id,
                    owner.user_id,
                    write.started_at,
                    write.ended_at,
                    *where.counts(write),
                    Json(dict(write.metadata)),
                ),
            ).fetchone()
            if row is None:
                refuse_duplicate(write, append=append)
                found = cur.execute(
                    sql.SQL(
                        "SELECT {cols} FROM {t} WHERE tenant_id = %s AND session_id = %s FOR UPDATE"
                    ).format(cols=_HEADER, t=self._sessions),
                    (owner.tenant_id, write.session_id),
                ).fetchone()
                if found is None:
                    raise StoreError(f"session {write.session_id!r} was deleted while appending to it; retry")
                existing = header_from_row(found, CODEC)
                where = SessionAppend.after(existing, write)
                row = cur.execute(
                    sql.SQL(
                        "UPDATE {t} SET started_at = least(started_at, %s), "
                        "ended_at = greatest(ended_at, %s), message_count = %s, turn_count = %s, "
                        "metadata = %s WHERE tenant_id = %s AND seq = %s RETURNING {cols}"
                    ).format(t=self._sessions, cols=_HEADER),
                    (
                        write.started_at,
                        write.ended_at,
                        *where.counts(write),
                        Json(where.metadata),
                        owner.tenant_id,
                        existing.key,
                    ),
                ).fetchone()
            assert row is not None
            header = header_from_row(row, CODEC)
            if write.messages:
                cur.executemany(
                    sql.SQL(
                        "INSERT INTO {t} (tenant_id, session_seq, position, message) VALUES (%s, %s, %s, %s)"
                    ).format(t=self._messages),
                    [(owner.tenant_id, *r) for r in where.message_rows(header.key, write)],
                )
            if write.windows:
                cur.executemany(
                    sql.SQL(
                        "INSERT INTO {t} (tenant_id, session_seq, turn, first_position, last_position, "
                        "created_at, text, embedding, embedding_model) "
                        "VALUES (%s, %s, %s, %s, %s, %s, %s, {vec}, %s)"
                    ).format(t=self._windows, vec=self._vec),
                    [(owner.tenant_id, *r) for r in where.window_rows(header.key, write, params, CODEC)],
                )
        return header

    def delete_session(self, tenant_id: str, session_id: str) -> bool:
        """Delete a session (its messages and windows cascade); ``False`` if there is none."""
        with self._store.transaction("delete_session") as cur:
            cur.execute(
                sql.SQL("DELETE FROM {t} WHERE tenant_id = %s AND session_id = %s").format(t=self._sessions),
                (tenant_id, session_id),
            )
            return cur.rowcount > 0

    def delete_sessions_ended_before(
        self, cutoff: datetime, tenant_id: str | None = None, *, dry_run: bool = False
    ) -> int:
        """Delete (or count, with ``dry_run``) every session of ``tenant_id`` (``None``: all tenants)
        with ``ended_at < cutoff``; return how many."""
        condition = sql.SQL("ended_at < %s")
        params: list[Any] = [cutoff]
        if tenant_id is not None:
            condition = sql.SQL("ended_at < %s AND tenant_id = %s")
            params.append(tenant_id)
        statement = sql.SQL("SELECT count(*) FROM {t} WHERE {c}" if dry_run else "DELETE FROM {t} WHERE {c}")
        with self._store.transaction("delete_sessions_ended_before") as cur:
            cur.execute(statement.format(t=self._sessions, c=condition), params, prepare=False)
            if dry_run:
                row = cur.fetchone()
                return int(row[0]) if row else 0
            return int(cur.rowcount)

    # -- reads -------------------------------------------------------------------------

    def get_session(self, tenant_id: str, session_id: str) -> SessionHeader | None:
        """The header of ``(tenant_id, session_id)``, or ``None``."""
        with self._store.transaction("get_session") as cur:
            row = cur.execute(
                sql.SQL("SELECT {cols} FROM {t} WHERE tenant_id = %s AND session_id = %s").format(
                    cols=_HEADER, t=self._sessions
                ),
                (tenant_id, session_id),
            ).fetchone()
        return None if row is None else header_from_row(row, CODEC)

    def session_messages(self, session_key: int, first: int = 0, last: int | None = None) -> list[str]:
        """Message JSON texts at positions ``first..last`` (inclusive; ``None`` = to the end)."""
        with self._store.transaction("session_messages") as cur:
            rows = cur.execute(
                sql.SQL(
                    "SELECT message FROM {t} WHERE session_seq = %s AND position >= %s AND position <= %s "
                    "ORDER BY position"
                ).format(t=self._messages),
                (int(session_key), int(first), 2**31 - 1 if last is None else int(last)),
            ).fetchall()
        return [str(r[0]) for r in rows]

    def list_recent_sessions(
        self, owner: SessionOwner, limit: int, ended_after: datetime | None = None
    ) -> list[SessionHeader]:
        """Up to ``limit`` of ``owner``'s sessions, newest ``ended_at`` first."""
        time_clause = sql.SQL("") if ended_after is None else sql.SQL(" AND ended_at >= %s")
        params: list[Any] = [owner.tenant_id, owner.agent_id, owner.user_id]
        if ended_after is not None:
            params.append(ended_after)
        with self._store.transaction("list_recent_sessions") as cur:
            rows = cur.execute(
                sql.SQL(
                    "SELECT {cols} FROM {t} WHERE tenant_id = %s AND agent_id = %s AND user_id = %s{time} "
                    "ORDER BY ended_at DESC, seq DESC LIMIT %s"
                ).format(cols=_HEADER, t=self._sessions, time=time_clause),
                [*params, int(limit)],
                prepare=False,
            ).fetchall()
        return [header_from_row(r, CODEC) for r in rows]

    def session_owners(
        self, tenant_id: str, ended_after: datetime | None = None
    ) -> list[tuple[str, str, int]]:
        """``(agent_id, user_id, sessions)`` of ``tenant_id``'s session owners, most sessions first."""
        time_clause = sql.SQL("") if ended_after is None else sql.SQL(" AND ended_at >= %s")
        params: list[Any] = [tenant_id] if ended_after is None else [tenant_id, ended_after]
        with self._store.transaction("session_owners") as cur:
            rows = cur.execute(
                sql.SQL(
                    "SELECT agent_id, user_id, COUNT(*) AS n FROM {t} WHERE tenant_id = %s{time} "
                    "GROUP BY agent_id, user_id ORDER BY n DESC, agent_id, user_id"
                ).format(t=self._sessions, time=time_clause),
                params,
                prepare=False,
            ).fetchall()
        return [(str(r[0]), str(r[1]), int(r[2])) for r in rows]

    def turn_spans(self, session_key: int, first_turn: int, last_turn: int) -> dict[int, tuple[int, int]]:
        """``{turn: (first_position, last_position)}`` for turns ``first_turn..last_turn``."""
        with self._store.transaction("turn_spans") as cur:
            rows = cur.execute(
                sql.SQL(
                    "SELECT turn, first_position, last_position FROM {t} "
                    "WHERE session_seq = %s AND turn >= %s AND turn <= %s"
                ).format(t=self._windows),
                (int(session_key), int(first_turn), int(last_turn)),
            ).fetchall()
        return {int(r[0]): (int(r[1]), int(r[2])) for r in rows}

    def fetch_windows(self, keys: Sequence[int]) -> dict[int, StoredWindow]:
        """``{key: window}`` for window row keys (deleted ones absent)."""
        if len(keys) == 0:
            return {}
        with self._store.transaction("fetch_windows") as cur:
            rows = cur.execute(
                sql.SQL(
                    "SELECT w.seq, w.turn, w.first_position, w.last_position, w.created_at, {cols}, w.text "
                    "FROM {w} w JOIN {s} s ON s.tenant_id = w.tenant_id AND s.seq = w.session_seq "
                    "WHERE w.seq = ANY(%s::bigint[])"
                ).format(cols=_S_HEADER, w=self._windows, s=self._sessions),
                (key_array(keys),),
            ).fetchall()
        return {int(r[0]): window_from_row(r, CODEC) for r in rows}

    def _owner_windows(
        self, owner: SessionOwner, created_after: datetime | None
    ) -> list[tuple[int, str, float]]:
        """``(key, text, created_at_seconds)`` of every window of ``owner`` created from ``created_after``."""
        time_clause = sql.SQL("") if created_after is None else sql.SQL(" AND w.created_at >= %s")
        params: list[Any] = [owner.tenant_id, owner.agent_id, owner.user_id]
        if created_after is not None:
            params.append(created_after)
        statement = sql.SQL(
            "SELECT w.seq, w.text, extract(epoch FROM w.created_at)::float8 "
            "FROM {s} s JOIN {w} w ON w.tenant_id = s.tenant_id AND w.session_seq = s.seq "
            "WHERE s.tenant_id = %s AND s.agent_id = %s AND s.user_id = %s{time} ORDER BY w.seq"
        ).format(w=self._windows, s=self._sessions, time=time_clause)
        with self._store.transaction("window_keyword_candidates") as cur:
            rows = cur.execute(statement, params, prepare=False).fetchall()
        return [(int(r[0]), str(r[1]), float(r[2])) for r in rows]

    # -- vector search -----------------------------------------------------------------

    def _search_windows(
        self, owner: SessionOwner, q: NDArray[np.float32], top_n: int, created_after: datetime | None
    ) -> VectorCandidates:
        """The ``top_n`` windows of ``owner`` most similar to ``q`` (exact inner product)."""
        check_dims(self._store.embedding_model, len(q))
        top_n = max(1, int(top_n))
        time_clause = sql.SQL("") if created_after is None else sql.SQL(" AND w.created_at >= %s")
        params: list[Any] = [
            self._store.vector_param(q),
            owner.tenant_id,
            owner.agent_id,
            owner.user_id,
            NO_VECTOR_MODEL,
        ]
        if created_after is not None:
            params.append(created_after)
        statement = sql.SQL(
            "SELECT w.seq, -(w.embedding {ip} {vec}) AS cosine, extract(epoch FROM w.created_at)::float8 "
            "FROM {w} w JOIN {s} s ON s.tenant_id = w.tenant_id AND s.seq = w.session_seq "
            "WHERE s.tenant_id = %s AND s.agent_id = %s AND s.user_id = %s AND w.embedding_model <> %s{time} "
            "ORDER BY cosine DESC, w.seq LIMIT %s"
        ).format(ip=self._ip, vec=self._vec, w=self._windows, s=self._sessions, time=time_clause)
        with self._store.transaction("window_candidates") as cur:
            rows = cur.execute(statement, [*params, top_n], prepare=False).fetchall()
        return VectorCandidates.from_rows(rows, exhaustive=len(rows) < top_n)

    def __repr__(self) -> str:
        return f"PostgresSessionStore({self._store.location!r})"
