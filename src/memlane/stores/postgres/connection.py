"""The PostgreSQL store's connections: the pool, the schema at open, transactions, error translation.

* Everything lives in one Postgres schema (``schema=``; default the connection's
  ``current_schema()``, usually ``public``) in tables prefixed ``memlane_``. Every
  statement names the schema and pgvector's own schema explicitly
  (:class:`psycopg.sql.Identifier`), so the store never depends on ``search_path`` and
  works through transaction-pooling proxies (PgBouncer): it keeps no session state, and
  per-query settings are ``set_config(..., is_local => true)`` inside the transaction.
* At open, the schema is created or upgraded (:func:`memlane.stores.postgres.migrations.migrate`)
  and the fixed statements are composed once.
* Round trips: a recall is a few short reads, so the owned pool's connections are in
  autocommit mode and a single-statement read (:meth:`PostgresConnection._read`) is sent alone
  (its own implicit transaction: no ``BEGIN``/``COMMIT`` round trips), and a pooled connection
  is checked with an empty query only when it sat idle for more than :data:`CHECK_IDLE_S`
  (:class:`_IdleCheck`); multi-statement work keeps an explicit transaction
  (:meth:`PostgresConnection._transaction`).
* Every ``psycopg``/``psycopg_pool`` exception is translated into
  :class:`~memlane.errors.StoreError` (or a subclass) with the original chained as
  ``__cause__``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from time import monotonic
from typing import Any
from weakref import WeakKeyDictionary

import numpy as np
import psycopg
from numpy.typing import NDArray
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout

from memlane.errors import DuplicateEpisodeError, MemlaneError, StoreClosedError, StoreError, ValidationError
from memlane.stores.common_terms import CommonTermFilter
from memlane.stores.postgres.base import VectorBinaryDumper, VectorParam, redact
from memlane.stores.postgres.migrations import ext_schema, is_current, migrate, read_version
from memlane.stores.postgres.vector_search import VectorSearch

__all__ = ["CHECK_IDLE_S", "PostgresConnection"]

logger = logging.getLogger(__name__)

_ID_CONSTRAINTS = frozenset({"memlane_episodes_tenant_id_key", "memlane_episodes_id_key"})
"""The unique constraint on episode ids: ``(tenant_id, id)`` since migration 9 (``id`` before)."""

_SCHEMA_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")

CHECK_IDLE_S = 1.0
"""Seconds a pooled connection may sit idle and still be handed out unchecked (owned pool).

A connection returned less than this long ago was working then; older ones are checked with
an empty query first (a proxy or the server may have closed them meanwhile), as psycopg_pool's
``check_connection`` does for every one. The check is a round trip: about 0.05 ms on an idle
machine, about 3 ms at a load of 14 on 2 cores (4 per recall)."""


class _IdleCheck:
    """The owned pool's ``check`` and ``reset``: check only connections idle > :data:`CHECK_IDLE_S`."""

    def __init__(self) -> None:
        self._returned: WeakKeyDictionary[psycopg.Connection[Any], float] = WeakKeyDictionary()

    def reset(self, conn: psycopg.Connection[Any]) -> None:
        """Note when ``conn`` came back to the pool (psycopg_pool calls it on every return)."""
        self._returned[conn] = monotonic()

    def check(self, conn: psycopg.Connection[Any]) -> None:
        """Raise if ``conn`` is unusable; connections used within :data:`CHECK_IDLE_S` pass unchecked."""
        returned = self._returned.get(conn)
        if returned is None or monotonic() - returned > CHECK_IDLE_S:
            ConnectionPool.check_connection(conn)


class PostgresConnection:
    """A connection pool to one memlane schema (the base of :class:`~memlane.stores.postgres.PostgresStore`).

    Args:
        url_or_pool: A libpq connection string or URL, or an existing ``ConnectionPool``
            (borrowed, never closed).
        schema: Postgres schema for the ``memlane_*`` tables, or ``None`` for the
            connection's ``current_schema()``.
        min_size: Connections the owned pool keeps open (ignored for a given pool).
        max_size: Most connections the owned pool opens (ignored for a given pool).
        timeout_s: Seconds to wait for a pooled connection, and the connect timeout.
        connect_kwargs: Extra ``psycopg.connect`` arguments for the owned pool's connections.

    Raises:
        ValidationError: a bad ``schema`` name or pool size.
        SchemaVersionError: the schema was written by a newer memlane.
        StoreError: the server cannot be reached, the pgvector extension is missing and
            cannot be created, or the schema holds non-memlane tables of the same name.
    """

    def __init__(
        self,
        url_or_pool: str | ConnectionPool[Any],
        *,
        schema: str | None = None,
        min_size: int = 1,
        max_size: int = 10,
        timeout_s: float = 30.0,
        connect_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        if schema is not None and (not isinstance(schema, str) or not _SCHEMA_NAME.fullmatch(schema)):
            raise ValidationError(
                f"schema must be a plain identifier (letters, digits, _; <= 63 chars), got {schema!r}"
            )
        if not 0 <= min_size <= max_size or max_size < 1:
            raise ValidationError(
                f"need 0 <= min_size <= max_size and max_size >= 1, got {min_size}, {max_size}"
            )
        self._closed = False
        self._timeout = timeout_s
        self._owns_pool = isinstance(url_or_pool, str)
        if isinstance(url_or_pool, str):
            conninfo = url_or_pool
            self._location = redact(conninfo)
            with self._translate("open"):
                conninfo_to_dict(conninfo)  # a malformed URL fails here, before any thread starts
                kwargs = {
                    "connect_timeout": max(1, round(timeout_s)),
                    "autocommit": True,  # single-statement reads need no BEGIN/COMMIT (_read)
                    **(connect_kwargs or {}),
                }
                with psycopg.connect(conninfo, **kwargs) as conn:
                    self._setup(conn, schema)
                idle = _IdleCheck()  # drop connections a proxy closed while idle
                self._pool: ConnectionPool[Any] = ConnectionPool(
                    conninfo,
                    min_size=min_size,
                    max_size=max_size,
                    kwargs=kwargs,
                    timeout=timeout_s,
                    check=idle.check,
                    reset=idle.reset,
                    name="memlane",
                    open=True,
                )
        else:
            self._pool = url_or_pool
            self._location = redact(getattr(url_or_pool, "conninfo", ""))
            with self._translate("open"), self._pool.connection(timeout=timeout_s) as conn:
                self._setup(conn, schema)
        logger.debug("opened %r", self)

    # -- setup ---------------------------------------------------------------------------

    def _setup(self, conn: psycopg.Connection[Any], schema: str | None) -> None:
        """Resolve the schema and pgvector, then migrate (runs once, at open)."""
        with conn.transaction():
            current, ext_found = conn.execute(
                "SELECT current_schema(), (SELECT n.nspname FROM pg_extension e "
                "JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector')"
            ).fetchone() or (None, None)
        if schema is None:
            if current is None:
                raise StoreError(
                    f"{self._location}: the connection has no current schema (empty search_path); "
                    "pass schema='...'"
                )
            schema = str(current)
        self.schema = schema
        self._schema = sql.Identifier(schema)
        if ext_found is None or not is_current(conn, schema):
            migrate(conn, schema, self._location)
        self._prepare_statements(conn)

    def _prepare_statements(self, conn: psycopg.Connection[Any]) -> None:
        """Compose the fixed statements once (schema and pgvector's schema quoted in)."""
        with conn.transaction():
            ext = ext_schema(conn)
            row = conn.execute(
                "SELECT t.oid FROM pg_type t JOIN pg_extension e ON t.typnamespace = e.extnamespace "
                "WHERE e.extname = 'vector' AND t.typname = 'vector'"
            ).fetchone()
        assert row is not None  # the extension exists (checked just above)
        self._vector_oid = int(row[0])
        self._dumper = type("_StoreVectorDumper", (VectorBinaryDumper,), {"oid": self._vector_oid})
        self._ext = ext
        fmt = {"schema": self._schema, "ext": ext}
        self._t = sql.SQL("{schema}.memlane_episodes").format(**fmt)
        self._retrieved = sql.SQL("{schema}.memlane_retrievals").format(**fmt)
        # the episodes as read: each with its retrievals counted since insert (lifecycle.record_retrievals)
        self._episodes = sql.SQL("{t} LEFT JOIN {r} USING (tenant_id, seq)").format(
            t=self._t, r=self._retrieved
        )
        self._values = sql.SQL("{schema}.memlane_episode_metadata_values").format(**fmt)
        self._scope_stats = sql.SQL("{schema}.memlane_scope_stats").format(**fmt)
        self._scope_stats_pending = sql.SQL("{schema}.memlane_scope_stats_pending").format(**fmt)
        self._term_df = sql.SQL("{schema}.memlane_term_df").format(**fmt)
        self._term_df_pending = sql.SQL("{schema}.memlane_term_df_pending").format(**fmt)
        self._common_terms = CommonTermFilter()
        self._meta = sql.SQL("{schema}.memlane_meta").format(**fmt)
        self._search = VectorSearch(
            table=self._t,
            meta=self._meta,
            vec=sql.SQL("%b::{ext}.vector").format(**fmt),
            ip=sql.SQL("OPERATOR({ext}.<#>)").format(**fmt),
            cos=sql.SQL("OPERATOR({ext}.<=>)").format(**fmt),
        )
        self._copy = sql.SQL(
            "COPY {schema}.memlane_episodes (id, tenant_id, session_id, event_type, content, tags, "
            "importance, created_at, metadata, embedding, embedding_model, valid_from, valid_until, "
            "recorded_at, invalidated_at, superseded_by, supersede_reason, archived_at, session_scoped, "
            "retrieve_count, last_retrieved_at, terms, token_count) "
            "FROM STDIN (FORMAT BINARY)"
        ).format(**fmt)

    # -- connections and errors --------------------------------------------------------

    @contextmanager
    def _translate(self, action: str) -> Iterator[None]:
        try:
            yield
        except MemlaneError:
            raise
        except PoolClosed as exc:
            raise StoreClosedError(f"the connection pool of {self._location} is closed") from exc
        except PoolTimeout as exc:
            raise StoreError(
                f"no PostgreSQL connection to {self._location} within {self._timeout:g} s during {action}"
            ) from exc
        except psycopg.errors.UniqueViolation as exc:
            if exc.diag.constraint_name in _ID_CONSTRAINTS:
                raise DuplicateEpisodeError(
                    f"an episode id already exists (episodes are append-only): {exc.diag.message_detail}"
                ) from exc
            raise StoreError(f"PostgreSQL error during {action} on {self._location}: {exc}") from exc
        except psycopg.Error as exc:
            raise StoreError(f"PostgreSQL error during {action} on {self._location}: {exc}") from exc

    @contextmanager
    def _transaction(self, action: str) -> Iterator[psycopg.Cursor[Any]]:
        """A cursor in a transaction on a pooled connection, with driver errors translated.

        The transaction commits when the block ends normally and rolls back otherwise.
        """
        if self._closed:
            raise StoreClosedError(f"PostgreSQL store {self.location} is closed")
        with (
            self._translate(action),
            self._pool.connection(timeout=self._timeout) as conn,
            conn.transaction(),
            conn.cursor() as cur,
        ):
            cur.adapters.register_dumper(VectorParam, self._dumper)
            yield cur

    @contextmanager
    def _read(self, action: str) -> Iterator[psycopg.Cursor[Any]]:
        """A cursor for ONE read statement on a pooled connection, with driver errors translated.

        On an autocommit connection (the owned pool's) the statement is sent alone and is its own
        transaction: one round trip instead of three. On a connection that is not in autocommit
        mode (a borrowed pool's) it runs in :meth:`_transaction`'s explicit transaction. Never
        use it for writes, or for statements that must see one snapshot (several statements
        that each stand alone are fine: the vector search's bound, then its search).
        """
        if self._closed:
            raise StoreClosedError(f"PostgreSQL store {self.location} is closed")
        with self._translate(action), self._pool.connection(timeout=self._timeout) as conn:
            if not conn.autocommit:
                with conn.transaction(), conn.cursor() as cur:
                    cur.adapters.register_dumper(VectorParam, self._dumper)
                    yield cur
                return
            with conn.cursor() as cur:
                cur.adapters.register_dumper(VectorParam, self._dumper)
                yield cur

    @property
    def location(self) -> str:
        """Redacted server URL (no password) and schema, for messages and ``stats()``."""
        return f"{self._location} (schema {self.schema})"

    @property
    def schema_version(self) -> int:
        """Highest applied migration number."""
        with self._transaction("schema_version") as cur:
            return read_version(cur.connection, self._schema)

    def close(self) -> None:
        """Close the owned connection pool (a given pool is left open). Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._owns_pool:
            try:
                self._pool.close()
            except psycopg.Error:  # pragma: no cover - closing never matters
                logger.debug("error closing the pool of %s", self._location, exc_info=True)

    # -- hooks for companion stores (memlane.stores.postgres.sessions, .reembed) -------------

    def transaction(self, action: str) -> AbstractContextManager[psycopg.Cursor[Any]]:
        """A cursor in a transaction on a pooled connection; driver errors translated, vectors usable."""
        return self._transaction(action)

    def sql_names(self) -> tuple[sql.Identifier, sql.Identifier]:
        """``(schema, pgvector's schema)`` identifiers, for composing statements on this store's tables."""
        return self._schema, self._ext

    @staticmethod
    def vector_param(values: NDArray[np.float32]) -> object:
        """Wrap a float32 ``[dims]`` vector as a parameter sent in pgvector's binary format (``%b``)."""
        return VectorParam(np.asarray(values, dtype=np.float32))
