"""PostgreSQL + pgvector store: many processes and hosts sharing one database.

Install with ``pip install 'memlane[postgres]'`` (psycopg 3 and psycopg-pool); the server
needs the pgvector extension (>= 0.8 for iterative index scans).

Layout (schema migrations in :mod:`memlane.stores.migrations.postgres`):

* Everything lives in one Postgres schema (``schema=``; default the connection's
  ``current_schema()``, usually ``public``) in tables prefixed ``memlane_``. Every
  statement names the schema and pgvector's own schema explicitly
  (:class:`psycopg.sql.Identifier`), so the store never depends on ``search_path`` and
  works through transaction-pooling proxies (PgBouncer): it keeps no session state, and
  per-query settings are ``set_config(..., is_local => true)`` inside the transaction.
* Episodes are append-only rows keyed by ``seq`` (``bigint`` identity; the opaque row key
  of :meth:`PostgresStore.vector_candidates` and :meth:`PostgresStore.fetch`). Tags are a
  ``text[]`` in the same row with a GIN index; an AND filter is ``tags @> $1``.
  ``created_at`` is ``timestamptz`` (microseconds, like Python). Metadata is ``json``
  (kept verbatim, so it round-trips exactly like the SQLite store's).
* Schema changes are numbered migrations, applied at open in one transaction under
  ``pg_advisory_xact_lock``; applied numbers are rows of ``memlane_schema_migrations``.
* The vector column is created untyped (``vector``). The first
  :meth:`PostgresStore.bind_embedding_model` records ``(model_id, dims)`` in
  ``memlane_meta`` and, in the same transaction, types the column ``vector(dims)`` and
  builds an HNSW index with ``vector_cosine_ops`` (when ``dims <= 2000``, pgvector's
  limit). A later bind with another model or dimension raises
  :class:`~memlane.errors.EmbeddingModelMismatchError`.

Vector search rule (:meth:`PostgresStore.vector_candidates`), with ``top_n`` the rows the
caller needs and ``exact_search_limit`` (default 10,000) a constructor argument:

1. Count the rows that pass the filter, stopping at ``max(exact_search_limit, top_n) + 1``
   (``count(*)`` over a ``LIMIT``ed subquery: through the scope/time indexes, usually
   index-only, it reads at most that many entries; about 1.5 ms for 10,000).
2. **Exact** when that count is within the bound (or the query vector is all zeros): the
   cosine of every filtered row is computed (about 1 ms per 1,000 rows of 384 dims) and
   the ``top_n`` best are returned; the
   ``ORDER BY`` is on a derived expression, so the HNSW index is never used and nothing
   the filter admits can be missed. ``exhaustive`` is ``True`` when every filtered row
   with a vector was returned.
3. **HNSW** otherwise: ``ORDER BY embedding <=> query LIMIT top_n`` through the HNSW
   index, with ``hnsw.ef_search = clamp(top_n, 40, 1000)`` and
   ``hnsw.iterative_scan = relaxed_order`` (pgvector 0.8), so the index keeps scanning
   until ``top_n`` rows have passed the filter (up to ``hnsw.max_scan_tuples``).
   ``exhaustive`` is ``False``.
4. If the HNSW scan returns fewer than ``top_n`` rows although more than ``top_n`` passed
   the filter (a filter so selective that the scan gave up, or zero-norm vectors, which
   the cosine index skips), the exact search of step 2 is run instead. So the store never
   returns fewer than ``min(top_n, filtered rows with vectors)`` candidates.

The reported similarity is always the exact inner product ``-(embedding <#> query)``,
which is the cosine for the L2-normalised vectors memlane stores (and 0 for all-zero
vectors, exactly like the SQLite store), whichever path found the row.

Bulk loads: maintaining the HNSW index costs about 1 ms per inserted row (measured with
PostgreSQL 18 / pgvector 0.8 on one core: ~1,000 rows/s with the index, ~35,000 rows/s
without it; building it afterwards takes ~25 s for 100,000 rows of 384 dims), so call
:meth:`PostgresStore.drop_vector_index` before a large import and
:meth:`PostgresStore.build_vector_index` after it. Searches stay correct meanwhile: without
the index the HNSW path's query simply runs as an exact scan.

Statements whose best plan depends on the filter values (lookups, counts, searches,
deletes) are sent unprepared (``prepare=False``), so PostgreSQL plans each with its actual
values instead of switching to a generic plan that ignores how selective a tag or event
type is.

Keyword search is PostgreSQL full-text search over a generated ``tsvector`` column with a GIN
index (:mod:`memlane.stores.postgres_fts`).

Every ``psycopg``/``psycopg_pool`` exception is translated into
:class:`~memlane.errors.StoreError` (or a subclass) with the original chained as
``__cause__``.
"""

from __future__ import annotations

import json
import logging
import numbers
import re
import struct
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import NDArray

from memlane.errors import (
    DuplicateEpisodeError,
    EmbeddingModelMismatchError,
    EpisodeNotFoundError,
    MemlaneError,
    SchemaVersionError,
    StoreClosedError,
    StoreError,
    ValidationError,
)
from memlane.models import Episode
from memlane.stores.base import EpisodeFilter, KeywordCandidates, StoreStats, Supersession, VectorCandidates

try:
    import psycopg
    from psycopg import sql
    from psycopg.adapt import Dumper
    from psycopg.conninfo import conninfo_to_dict
    from psycopg.pq import Format
    from psycopg.types.json import Json
    from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        f"PostgresStore needs the postgres extra: pip install 'memlane[postgres]' ({exc})"
    ) from exc

from memlane.stores.common_terms import CommonTermFilter
from memlane.stores.migrations.postgres import (
    BIND_LOCK_KEY,
    BOOTSTRAP,
    HNSW_MAX_DIMS,
    MIGRATION_LOCK_KEY,
    MIGRATIONS,
    MIGRATIONS_TABLE,
    bind_vector_statements,
)
from memlane.stores.postgres_fts import keyword_count_statement, keyword_statement

if TYPE_CHECKING:
    from memlane.stores.postgres_reembed import PostgresReembed
    from memlane.stores.postgres_sessions import PostgresSessionStore

__all__ = ["DEFAULT_EXACT_SEARCH_LIMIT", "PostgresStore", "SearchPlan"]

logger = logging.getLogger(__name__)

DEFAULT_EXACT_SEARCH_LIMIT = 10_000
"""Filtered sets up to this many rows are searched exactly (about 1 ms per 1,000 rows of
384 dims on one core); larger ones go through the HNSW index."""

_PGVECTOR_MAX_DIMS = 16_000  # the largest vector(n) pgvector accepts
_EF_SEARCH_MIN = 40  # pgvector's default
_EF_SEARCH_MAX = 1000  # pgvector's upper bound for hnsw.ef_search
_SCHEMA_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
_COLUMNS = sql.SQL(
    "seq, id, tenant_id, session_id, event_type, content, tags, importance, created_at, metadata, "
    "embedding_model, valid_from, valid_until, recorded_at, invalidated_at, superseded_by, supersede_reason, "
    "archived_at, session_scoped, retrieve_count, last_retrieved_at"
)
_COPY_TYPES = ["text", "text", "text", "text", "text", "text[]", "float8", "timestamptz", "json"]
_COPY_TEMPORAL_TYPES = [
    "timestamptz",
    "timestamptz",
    "timestamptz",
    "timestamptz",
    "text",
    "text",
    "timestamptz",
    "bool",
    "int8",
    "timestamptz",
]


class _VectorParam:
    """A float32 vector to send as a pgvector ``vector`` parameter (binary format)."""

    __slots__ = ("values",)

    def __init__(self, values: NDArray[np.float32]) -> None:
        self.values = values


class _VectorBinaryDumper(Dumper):
    """pgvector's binary wire format: ``uint16 dims, uint16 0, dims x float32`` big-endian.

    Subclassed per store with the database's ``vector`` type oid (needed by binary COPY).
    """

    format = Format.BINARY

    def dump(self, obj: Any) -> bytes:
        values = np.asarray(obj.values, dtype=">f4").reshape(-1)
        return struct.pack(">HH", len(values), 0) + values.tobytes()


def _json_dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


@dataclass(frozen=True, slots=True)
class SearchPlan:
    """How :meth:`PostgresStore.vector_candidates` would search (see the module docstring).

    Attributes:
        path: ``"exact"`` (cosine of every filtered row) or ``"hnsw"`` (the index).
        filtered_rows: Rows passing the filter, counted up to the exact-search bound + 1.
        plan: PostgreSQL's ``EXPLAIN`` of the search query on that path.
    """

    path: Literal["exact", "hnsw"]
    filtered_rows: int
    plan: str


def _redact(conninfo: str) -> str:
    """A displayable ``postgresql://user@host:port/db`` without the password."""
    try:
        params = conninfo_to_dict(conninfo)
    except psycopg.Error:
        return "postgresql://<unparsable>"
    user = str(params.get("user") or "")
    host = str(params.get("host") or "localhost")
    port = params.get("port")
    db = str(params.get("dbname") or "")
    who = f"{user}@" if user else ""
    if host.startswith("/"):  # a Unix-socket directory
        return f"postgresql://{who}/{db}?host={host}"
    return f"postgresql://{who}{host}:{port}/{db}" if port else f"postgresql://{who}{host}/{db}"


class PostgresStore:
    """Episodes in a PostgreSQL database with pgvector.

    Args:
        url_or_pool: A libpq connection string or URL (``postgresql://user@host/db``) -- the
            store then opens and owns a :class:`psycopg_pool.ConnectionPool` -- or an
            existing ``ConnectionPool`` (the store borrows connections and never closes it;
            its connections may be in any autocommit mode).
        schema: Postgres schema for the ``memlane_*`` tables (created if missing); a plain
            identifier (letters, digits, ``_``; at most 63 characters, case-sensitive).
            Default: the connection's ``current_schema()``.
        min_size: Connections the owned pool keeps open (ignored for a given pool).
        max_size: Most connections the owned pool opens (ignored for a given pool).
        timeout_s: Seconds to wait for a free pooled connection before failing, and the
            connect timeout of new connections (owned pool only).
        connect_kwargs: Extra ``psycopg.connect`` arguments for the owned pool's
            connections, e.g. ``{"prepare_threshold": None}`` behind a PgBouncer older
            than 1.21 in transaction mode.
        exact_search_limit: Filtered sets up to this many rows are searched exactly; larger
            ones through the HNSW index (see the module docstring). >= 0.

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
        exact_search_limit: int = DEFAULT_EXACT_SEARCH_LIMIT,
    ) -> None:
        if schema is not None and (not isinstance(schema, str) or not _SCHEMA_NAME.fullmatch(schema)):
            raise ValidationError(
                f"schema must be a plain identifier (letters, digits, _; <= 63 chars), got {schema!r}"
            )
        if not 0 <= min_size <= max_size or max_size < 1:
            raise ValidationError(
                f"need 0 <= min_size <= max_size and max_size >= 1, got {min_size}, {max_size}"
            )
        if exact_search_limit < 0:
            raise ValidationError(f"exact_search_limit must be >= 0, got {exact_search_limit}")
        self._closed = False
        self._timeout = timeout_s
        self.exact_search_limit = int(exact_search_limit)
        self._binding: tuple[str, int] | None = None
        self._owns_pool = isinstance(url_or_pool, str)
        if isinstance(url_or_pool, str):
            conninfo = url_or_pool
            self._location = _redact(conninfo)
            with self._translate("open"):
                conninfo_to_dict(conninfo)  # a malformed URL fails here, before any thread starts
                kwargs = {"connect_timeout": max(1, round(timeout_s)), **(connect_kwargs or {})}
                with psycopg.connect(conninfo, **kwargs) as conn:
                    self._setup(conn, schema)
                self._pool: ConnectionPool[Any] = ConnectionPool(
                    conninfo,
                    min_size=min_size,
                    max_size=max_size,
                    kwargs=kwargs,
                    timeout=timeout_s,
                    check=ConnectionPool.check_connection,  # drop connections a proxy closed while idle
                    name="memlane",
                    open=True,
                )
        else:
            self._pool = url_or_pool
            self._location = _redact(getattr(url_or_pool, "conninfo", ""))
            with self._translate("open"), self._pool.connection(timeout=timeout_s) as conn:
                self._setup(conn, schema)
        logger.debug("opened %r", self)

    # -- setup and migrations ----------------------------------------------------------

    def _setup(self, conn: psycopg.Connection[Any], schema: str | None) -> None:
        """Resolve the schema and pgvector, then migrate (runs once, at open)."""
        with conn.transaction():
            current, ext_schema = conn.execute(
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
        if ext_schema is None or not self._is_current(conn):
            self._migrate(conn)
        self._prepare_statements(conn)

    def _is_current(self, conn: psycopg.Connection[Any]) -> bool:
        """Whether the schema is already at the latest version (read without a lock)."""
        with conn.transaction():
            row = conn.execute(
                "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = %s AND tablename = %s)",
                (self.schema, MIGRATIONS_TABLE),
            ).fetchone()
            if not row or not row[0]:
                return False
            return self._read_version(conn) == len(MIGRATIONS)

    def _read_version(self, conn: psycopg.Connection[Any]) -> int:
        row = conn.execute(
            sql.SQL("SELECT coalesce(max(version), 0) FROM {schema}.memlane_schema_migrations").format(
                schema=self._schema
            )
        ).fetchone()
        return int(row[0]) if row else 0

    def _migrate(self, conn: psycopg.Connection[Any]) -> None:
        """Create pgvector, the schema and the tables as needed, under an advisory lock."""
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK_KEY,))
            if not conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
                try:
                    with conn.transaction():
                        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
                except psycopg.errors.InsufficientPrivilege as exc:
                    raise StoreError(
                        f"{self._location}: the pgvector extension is not installed and this role "
                        "may not create it; ask an administrator to run CREATE EXTENSION vector"
                    ) from exc
                except psycopg.errors.UndefinedFile as exc:  # pragma: no cover - server-dependent
                    raise StoreError(
                        f"{self._location}: the pgvector extension is not installed on this server "
                        "(install pgvector >= 0.8, or use a managed PostgreSQL that offers it)"
                    ) from exc
                logger.info("created the pgvector extension in %s", self._location)
            if not conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (self.schema,)).fetchone():
                conn.execute(sql.SQL("CREATE SCHEMA {schema}").format(schema=self._schema))
            ext = self._ext_schema(conn)
            has_table = conn.execute(
                "SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = %s AND tablename = 'memlane_episodes'",
                (self.schema,),
            ).fetchone()
            conn.execute(BOOTSTRAP.format(schema=self._schema))
            version = self._read_version(conn)
            if version > len(MIGRATIONS):
                raise SchemaVersionError(
                    f"{self._location} schema {self.schema!r} has version {version}, this memlane knows up "
                    f"to {len(MIGRATIONS)}: upgrade memlane"
                )
            if version == 0 and has_table:
                raise StoreError(
                    f"{self._location} schema {self.schema!r} has a memlane_episodes table that memlane did "
                    "not create (no migration record): refusing to use it"
                )
            for number in range(version, len(MIGRATIONS)):
                for statement in MIGRATIONS[number]:
                    conn.execute(statement.format(schema=self._schema, ext=ext))
                conn.execute(
                    sql.SQL("INSERT INTO {schema}.memlane_schema_migrations (version) VALUES (%s)").format(
                        schema=self._schema
                    ),
                    (number + 1,),
                )
                logger.info("migrated %s schema %r to version %d", self._location, self.schema, number + 1)

    @staticmethod
    def _ext_schema(conn: psycopg.Connection[Any]) -> sql.Identifier:
        row = conn.execute(
            "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
            "WHERE e.extname = 'vector'"
        ).fetchone()
        if row is None:
            raise StoreError("the pgvector extension is not installed")
        return sql.Identifier(row[0])

    def _prepare_statements(self, conn: psycopg.Connection[Any]) -> None:
        """Compose the fixed statements once (schema and pgvector's schema quoted in)."""
        with conn.transaction():
            ext = self._ext_schema(conn)
            row = conn.execute(
                "SELECT t.oid FROM pg_type t JOIN pg_extension e ON t.typnamespace = e.extnamespace "
                "WHERE e.extname = 'vector' AND t.typname = 'vector'"
            ).fetchone()
        assert row is not None  # the extension exists (checked just above)
        self._vector_oid = int(row[0])
        self._dumper = type("_StoreVectorDumper", (_VectorBinaryDumper,), {"oid": self._vector_oid})
        self._ext = ext
        fmt = {"schema": self._schema, "ext": ext, "cols": _COLUMNS}
        self._t = sql.SQL("{schema}.memlane_episodes").format(**fmt)
        self._common_terms = CommonTermFilter()
        self._meta = sql.SQL("{schema}.memlane_meta").format(**fmt)
        self._vec = sql.SQL("%b::{ext}.vector").format(**fmt)
        self._ip = sql.SQL("OPERATOR({ext}.<#>)").format(**fmt)
        self._cos = sql.SQL("OPERATOR({ext}.<=>)").format(**fmt)
        self._copy = sql.SQL(
            "COPY {schema}.memlane_episodes (id, tenant_id, session_id, event_type, content, tags, "
            "importance, created_at, metadata, embedding, embedding_model, valid_from, valid_until, "
            "recorded_at, invalidated_at, superseded_by, supersede_reason, archived_at, session_scoped, "
            "retrieve_count, last_retrieved_at) "
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
            if exc.diag.constraint_name == "memlane_episodes_id_key":
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
            cur.adapters.register_dumper(_VectorParam, self._dumper)
            yield cur

    @property
    def location(self) -> str:
        """Redacted server URL (no password) and schema, for messages and ``stats()``."""
        return f"{self._location} (schema {self.schema})"

    @property
    def schema_version(self) -> int:
        """Highest applied migration number."""
        with self._transaction("schema_version") as cur:
            return self._read_version(cur.connection)

    # -- embedding model binding -------------------------------------------------------

    @property
    def embedding_model(self) -> tuple[str, int] | None:
        """``(model_id, dims)`` the store is bound to, or ``None`` if not bound yet."""
        if self._binding is not None:
            return self._binding
        with self._transaction("embedding_model") as cur:
            self._binding = self._read_binding(cur)
        return self._binding

    def _read_binding(self, cur: psycopg.Cursor[Any]) -> tuple[str, int] | None:
        rows = dict(
            cur.execute(
                sql.SQL(
                    "SELECT key, value FROM {meta} WHERE key IN ('embedding_model', 'embedding_dims')"
                ).format(meta=self._meta)
            ).fetchall()
        )
        if "embedding_model" not in rows:
            return None
        return str(rows["embedding_model"]), int(rows["embedding_dims"])

    def _check_binding(self, bound: tuple[str, int], model_id: str, dims: int) -> None:
        if bound != (model_id, dims):
            raise EmbeddingModelMismatchError(
                f"{self.location} holds vectors of model {bound[0]!r} ({bound[1]} dims); refusing embedder "
                f"{model_id!r} ({dims} dims). Open it with the original embedder or re-embed the store."
            )

    def bind_embedding_model(self, model_id: str, dims: int) -> None:
        """Record ``(model_id, dims)`` on first use; refuse a different one later.

        The first binding also types the vector column ``vector(dims)`` and builds the HNSW
        index (one transaction, under an advisory lock, so concurrent first binds agree).

        Args:
            model_id: The embedder's model id.
            dims: Its vector dimension (>= 1).

        Raises:
            EmbeddingModelMismatchError: the store is bound to another model or dimension,
                or holds vectors of another dimension.
            ValidationError: ``dims`` is not an int from 1 to 16,000 (pgvector's limit).
            StoreError: the database failed.
        """
        if (
            isinstance(dims, bool)
            or not isinstance(dims, numbers.Integral)
            or not 1 <= dims <= _PGVECTOR_MAX_DIMS
        ):
            raise ValidationError(f"dims must be an int from 1 to {_PGVECTOR_MAX_DIMS}, got {dims!r}")
        dims = int(dims)
        if self._binding == (model_id, dims):
            return
        self._binding = None  # re-read below: a re-embedding switch may have rebound the store
        with self._transaction("bind_embedding_model") as cur:
            bound = self._read_binding(cur)
            if bound is None:
                cur.execute("SELECT pg_advisory_xact_lock(%s)", (BIND_LOCK_KEY,))
                bound = self._read_binding(cur)  # re-read under the lock
            if bound is None:
                try:
                    with cur.connection.transaction():
                        for statement in bind_vector_statements(dims):
                            cur.execute(
                                statement.format(
                                    schema=self._schema, ext=self._ext, dims=sql.Literal(int(dims))
                                )
                            )
                except psycopg.errors.DataException as exc:
                    raise EmbeddingModelMismatchError(
                        f"{self.location} already holds vectors that are not {dims}-dimensional: {exc}"
                    ) from exc
                cur.executemany(
                    sql.SQL("INSERT INTO {meta} (key, value) VALUES (%s, %s)").format(meta=self._meta),
                    [("embedding_model", model_id), ("embedding_dims", str(int(dims)))],
                )
                if dims > HNSW_MAX_DIMS:
                    logger.warning(
                        "%d dims exceed pgvector's HNSW limit (%d): every vector search on %s is exact",
                        dims,
                        HNSW_MAX_DIMS,
                        self.location,
                    )
                bound = (model_id, int(dims))
        self._binding = bound
        self._check_binding(bound, model_id, dims)

    # -- writes ------------------------------------------------------------------------

    def insert(
        self,
        episodes: Sequence[Episode],
        vectors: NDArray[np.float32] | None,
        supersessions: Sequence[Supersession] = (),
    ) -> None:
        """Append ``episodes`` in one transaction (all or none), with one binary ``COPY``.

        Args:
            episodes: New episodes; ids must not exist yet.
            vectors: float32 ``[len(episodes), dims]`` L2-normalised, or ``None``.
            supersessions: Older episodes to retire in the same transaction (see
                :class:`Supersession`); one ``UPDATE`` each.

        Raises:
            EpisodeNotFoundError: a superseded id is unknown (for its tenant) or already
                superseded; nothing is written.
            DuplicateEpisodeError: an id already exists or repeats in the batch.
            EmbeddingModelMismatchError: the vectors' dimension differs from the bound model's.
            ValidationError: a string contains a NUL character, which PostgreSQL text cannot hold.
            StoreError: the database failed.
        """
        self._insert(episodes, vectors, supersessions)

    def _insert(
        self,
        episodes: Sequence[Episode],
        vectors: NDArray[np.float32] | None,
        supersessions: Sequence[Supersession] = (),
        merge: tuple[Sequence[str], datetime, str] | None = None,
    ) -> None:
        """:meth:`insert`; ``merge = (ids, at, reason)`` also archives ``ids`` into ``episodes[0]``."""
        if not episodes:
            return
        params: list[_VectorParam | None]
        if vectors is None:
            params = [None] * len(episodes)
        else:
            matrix = np.asarray(vectors, dtype=np.float32)
            if matrix.ndim != 2 or matrix.shape[0] != len(episodes):
                raise ValidationError(f"vectors must have shape [{len(episodes)}, dims], got {matrix.shape}")
            bound = self.embedding_model
            if bound is not None and matrix.shape[1] != bound[1]:
                raise EmbeddingModelMismatchError(
                    f"vectors have {matrix.shape[1]} dims, the store is bound to {bound[1]}"
                )
            params = [_VectorParam(row) for row in matrix]
        rows = []
        for ep, vector in zip(episodes, params, strict=True):
            metadata = _json_dumps(dict(ep.metadata))
            texts = (
                ep.id,
                ep.tenant_id,
                ep.session_id,
                ep.event_type,
                ep.content,
                metadata,
                *ep.tags,
                ep.superseded_by or "",
                ep.supersede_reason or "",
            )
            if any("\x00" in text for text in texts):
                raise ValidationError(f"episode {ep.id!r}: PostgreSQL text cannot contain NUL characters")
            rows.append(
                (
                    ep.id,
                    ep.tenant_id,
                    ep.session_id,
                    ep.event_type,
                    ep.content,
                    list(ep.tags),
                    ep.importance,
                    ep.created_at,
                    Json(dict(ep.metadata), dumps=_json_dumps),
                    vector,
                    ep.embedding_model if vector is not None else None,
                    ep.valid_from,
                    ep.valid_until,
                    ep.recorded_at,
                    ep.invalidated_at,
                    ep.superseded_by,
                    ep.supersede_reason,
                    ep.archived_at,
                    bool(ep.session_scoped),
                    int(ep.retrieve_count),
                    ep.last_retrieved_at,
                )
            )
        for sup in supersessions:
            if "\x00" in (sup.reason or ""):
                raise ValidationError("PostgreSQL text cannot contain NUL characters")
        with self._transaction("insert") as cur:
            with cur.copy(self._copy) as copy:
                copy.set_types([*_COPY_TYPES, self._vector_oid, "text", *_COPY_TEMPORAL_TYPES])
                for row in rows:
                    copy.write_row(row)
            for sup in supersessions:
                where = sql.SQL("id = %s AND superseded_by IS NULL")
                values: list[Any] = [sup.valid_until, sup.invalidated_at, sup.new_id, sup.reason, sup.old_id]
                if sup.tenant_id is not None:
                    where = sql.SQL("id = %s AND superseded_by IS NULL AND tenant_id = %s")
                    values.append(sup.tenant_id)
                cur.execute(
                    sql.SQL(
                        "UPDATE {t} SET valid_until = %s, invalidated_at = %s, superseded_by = %s, "
                        "supersede_reason = %s WHERE {where}"
                    ).format(t=self._t, where=where),
                    values,
                )
                if cur.rowcount != 1:
                    raise EpisodeNotFoundError(
                        f"episode {sup.old_id!r} not found or already superseded: nothing was written"
                    )
            if merge is not None:
                ids, at, reason = merge
                if "\x00" in reason:
                    raise ValidationError("PostgreSQL text cannot contain NUL characters")
                cur.execute(
                    sql.SQL(
                        "UPDATE {t} SET archived_at = %s, superseded_by = %s, supersede_reason = %s "
                        "WHERE archived_at IS NULL AND superseded_by IS NULL AND id = ANY(%s::text[])"
                    ).format(t=self._t),
                    (at, episodes[0].id, reason, list(ids)),
                )
                if cur.rowcount != len(set(ids)):
                    raise EpisodeNotFoundError(
                        "an episode to merge is unknown, archived or superseded: nothing was merged"
                    )

    def delete_created_before(self, cutoff: datetime, keep_importance_from: float | None = None) -> int:
        """Delete every episode with ``created_at < cutoff`` (all tenants); return the count.

        One indexed range ``DELETE`` (``ix_memlane_episodes_time``); tags live in the same row.
        Episodes rated ``>= keep_importance_from`` (never-forget) are kept.
        """
        condition = sql.SQL("created_at < %s")
        params: list[Any] = [cutoff]
        if keep_importance_from is not None:
            condition = sql.SQL("created_at < %s AND (importance IS NULL OR importance < %s)")
            params.append(keep_importance_from)
        with self._transaction("delete_created_before") as cur:
            cur.execute(
                sql.SQL("DELETE FROM {t} WHERE {c}").format(t=self._t, c=condition), params, prepare=False
            )
            return int(cur.rowcount)

    def archive(self, episode_ids: Sequence[str], at: datetime) -> int:
        """Set ``archived_at`` on the given not-yet-archived episodes in one ``UPDATE``; return how many."""
        if not episode_ids:
            return 0
        with self._transaction("archive") as cur:
            cur.execute(
                sql.SQL(
                    "UPDATE {t} SET archived_at = %s WHERE archived_at IS NULL AND id = ANY(%s::text[])"
                ).format(t=self._t),
                (at, list(episode_ids)),
            )
            return int(cur.rowcount)

    def record_retrievals(self, keys: Sequence[int], at: datetime) -> int:
        """Count one retrieval of each row key (from ``*_candidates``) at ``at``; return rows updated.

        One ``UPDATE ... WHERE seq = ANY(%s)`` in its own short transaction, committed with
        ``synchronous_commit = off`` (the commit does not wait for the WAL flush; a crash may
        lose the last few counts, never other data).
        """
        if len(keys) == 0:
            return 0
        with self._transaction("record_retrievals") as cur:
            cur.execute("SET LOCAL synchronous_commit = off")
            cur.execute(
                sql.SQL(
                    "UPDATE {t} SET retrieve_count = retrieve_count + 1, last_retrieved_at = %s "
                    "WHERE seq = ANY(%s::bigint[])"
                ).format(t=self._t),
                (at, [int(k) for k in keys]),
            )
            return int(cur.rowcount)

    def vectors(self, episode_ids: Sequence[str]) -> dict[str, NDArray[np.float32]]:
        """``{id: float32 [dims] vector}`` of the given episodes that have one (others absent)."""
        if not episode_ids:
            return {}
        with self._transaction("vectors") as cur:
            rows = cur.execute(
                sql.SQL(
                    "SELECT id, embedding::text FROM {t} WHERE embedding IS NOT NULL AND id = ANY(%s::text[])"
                ).format(t=self._t),
                (list(episode_ids),),
                prepare=False,
            ).fetchall()
        return {row[0]: np.asarray(json.loads(row[1]), dtype=np.float32) for row in rows}

    def merge(
        self,
        merged: Episode,
        vector: NDArray[np.float32] | None,
        original_ids: Sequence[str],
        at: datetime,
        reason: str,
    ) -> int:
        """Insert ``merged`` and archive ``original_ids`` pointing at it, in one transaction.

        Each original gets ``archived_at = at``, ``superseded_by = merged.id`` and
        ``supersede_reason = reason``; its valid and transaction times are left as they were.

        Returns:
            Number of originals archived (== ``len(set(original_ids))``).

        Raises:
            EpisodeNotFoundError: an original is unknown, already archived or already
                superseded (nothing is written).
        """
        matrix = None if vector is None else np.asarray(vector, dtype=np.float32)[None, :]
        self._insert([merged], matrix, (), (original_ids, at, reason))
        return len(set(original_ids))

    def delete_session_scoped(self, tenant_id: str, session_id: str) -> int:
        """Delete the ``session_scoped`` episodes of one session; return how many."""
        with self._transaction("delete_session_scoped") as cur:
            cur.execute(
                sql.SQL("DELETE FROM {t} WHERE tenant_id = %s AND session_id = %s AND session_scoped").format(
                    t=self._t
                ),
                (tenant_id, session_id),
            )
            return int(cur.rowcount)

    def delete(self, episode_id: str, tenant_id: str | None) -> bool:
        """Delete the episode ``episode_id`` if it belongs to ``tenant_id`` (``None``: any tenant).

        One ``DELETE`` by the unique id (tags and vector are in the same row).

        Returns:
            Whether an episode was deleted (``False`` for an unknown id and for another
            tenant's episode alike).

        Raises:
            StoreError: the database failed.
        """
        where = sql.SQL("id = %s") if tenant_id is None else sql.SQL("id = %s AND tenant_id = %s")
        params = [episode_id] if tenant_id is None else [episode_id, tenant_id]
        with self._transaction("delete") as cur:
            cur.execute(sql.SQL("DELETE FROM {t} WHERE {where}").format(t=self._t, where=where), params)
            return cur.rowcount > 0

    # -- reads -------------------------------------------------------------------------

    def _where(self, flt: EpisodeFilter, *extra: str) -> tuple[sql.Composed, list[Any]]:
        """A WHERE clause from fixed column names; every value is a bound parameter."""
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

    @staticmethod
    def _episode(row: Sequence[Any]) -> Episode:
        return Episode(
            id=row[1],
            tenant_id=row[2],
            session_id=row[3],
            event_type=row[4],
            content=row[5],
            tags=tuple(row[6]),
            importance=row[7],
            created_at=row[8].astimezone(UTC),
            metadata=row[9],
            embedding_model=row[10],
            valid_from=row[11].astimezone(UTC),
            valid_until=None if row[12] is None else row[12].astimezone(UTC),
            recorded_at=row[13].astimezone(UTC),
            invalidated_at=None if row[14] is None else row[14].astimezone(UTC),
            superseded_by=row[15],
            supersede_reason=row[16],
            archived_at=None if row[17] is None else row[17].astimezone(UTC),
            session_scoped=bool(row[18]),
            retrieve_count=int(row[19]),
            last_retrieved_at=None if row[20] is None else row[20].astimezone(UTC),
        )

    def list_recent(self, flt: EpisodeFilter, limit: int) -> list[Episode]:
        """Up to ``limit`` episodes passing ``flt``, newest ``created_at`` first (ties: newest insert)."""
        where, params = self._where(flt)
        query = sql.SQL("SELECT {cols} FROM {t}{where} ORDER BY created_at DESC, seq DESC LIMIT %s").format(
            cols=_COLUMNS, t=self._t, where=where
        )
        with self._transaction("list_recent") as cur:
            return [
                self._episode(r) for r in cur.execute(query, [*params, int(limit)], prepare=False).fetchall()
            ]

    def get(self, episode_id: str) -> Episode | None:
        """The episode with ``episode_id``, or ``None``."""
        query = sql.SQL("SELECT {cols} FROM {t} WHERE id = %s").format(cols=_COLUMNS, t=self._t)
        with self._transaction("get") as cur:
            row = cur.execute(query, (episode_id,)).fetchone()
        return None if row is None else self._episode(row)

    def fetch(self, keys: Sequence[int]) -> dict[int, Episode]:
        """``{key: episode}`` for row keys from :meth:`vector_candidates` (deleted rows absent)."""
        if len(keys) == 0:
            return {}
        query = sql.SQL("SELECT {cols} FROM {t} WHERE seq = ANY(%s::bigint[])").format(
            cols=_COLUMNS, t=self._t
        )
        with self._transaction("fetch") as cur:
            rows = cur.execute(query, ([int(k) for k in keys],)).fetchall()
        return {int(r[0]): self._episode(r) for r in rows}

    def superseded_links(self, episode_ids: Sequence[str]) -> list[Episode]:
        """The episodes superseded by any of ``episode_ids`` (an index lookup on ``superseded_by``)."""
        if not episode_ids:
            return []
        query = sql.SQL("SELECT {cols} FROM {t} WHERE superseded_by = ANY(%s::text[]) ORDER BY seq").format(
            cols=_COLUMNS, t=self._t
        )
        with self._transaction("superseded_links") as cur:
            rows = cur.execute(query, (list(episode_ids),)).fetchall()
        return [self._episode(r) for r in rows]

    def count(self, flt: EpisodeFilter) -> int:
        """Number of episodes passing ``flt``."""
        where, params = self._where(flt)
        with self._transaction("count") as cur:
            row = cur.execute(
                sql.SQL("SELECT count(*) FROM {t}{where}").format(t=self._t, where=where),
                params,
                prepare=False,
            )
            found = row.fetchone()
        return int(found[0]) if found else 0

    def iter_episodes(self, flt: EpisodeFilter, batch_size: int = 1000) -> Iterator[Episode]:
        """Yield every episode passing ``flt``, oldest first (``created_at``, then insertion).

        Keyset pagination: each batch of ``batch_size`` rows is one short transaction, so no
        connection is held while the caller consumes the episodes.
        """
        where, params = self._where(flt, "(created_at, seq) > (%s, %s)")
        query = sql.SQL("SELECT {cols} FROM {t}{where} ORDER BY created_at, seq LIMIT %s").format(
            cols=_COLUMNS, t=self._t, where=where
        )
        last: tuple[datetime, int] = (datetime(1, 1, 1, tzinfo=UTC), 0)
        while True:
            with self._transaction("iter_episodes") as cur:
                rows = cur.execute(query, [*params, *last, int(batch_size)], prepare=False).fetchall()
            if not rows:
                return
            for row in rows:
                yield self._episode(row)
            last = (rows[-1][8], int(rows[-1][0]))

    def stats(self, flt: EpisodeFilter) -> StoreStats:
        """Counts, distinct tenants/sessions, per-type counts and time range of ``flt``'s episodes."""
        where, params = self._where(flt)
        with self._transaction("stats") as cur:
            total, vectors, tenants, sessions, oldest, newest, superseded, archived = cur.execute(
                sql.SQL(
                    "SELECT count(*), count(embedding), count(DISTINCT tenant_id), "
                    "count(DISTINCT (tenant_id, session_id)), min(created_at), max(created_at), "
                    "count(*) FILTER (WHERE superseded_by IS NOT NULL OR invalidated_at IS NOT NULL), "
                    "count(*) FILTER (WHERE archived_at IS NOT NULL AND superseded_by IS NULL "
                    "AND invalidated_at IS NULL) FROM {t}{where}"
                ).format(t=self._t, where=where),
                params,
                prepare=False,
            ).fetchone() or (0, 0, 0, 0, None, None, 0, 0)
            types = dict(
                cur.execute(
                    sql.SQL(
                        "SELECT event_type, count(*) FROM {t}{where} GROUP BY event_type ORDER BY 2 DESC"
                    ).format(t=self._t, where=where),
                    params,
                    prepare=False,
                ).fetchall()
            )
            version = self._read_version(cur.connection)
        return StoreStats(
            episodes=int(total),
            with_vectors=int(vectors),
            tenants=int(tenants),
            sessions=int(sessions),
            event_types={str(k): int(v) for k, v in types.items()},
            oldest=None if oldest is None else oldest.astimezone(UTC),
            newest=None if newest is None else newest.astimezone(UTC),
            embedding_model=self.embedding_model,
            schema_version=version,
            location=self.location,
            superseded=int(superseded),
            archived=int(archived),
        )

    # -- vector search -----------------------------------------------------------------

    def _query_vector(self, query: NDArray[np.float32]) -> NDArray[np.float32]:
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        bound = self.embedding_model
        if bound is not None and len(q) != bound[1]:
            raise EmbeddingModelMismatchError(f"query has {len(q)} dims, the store is bound to {bound[1]}")
        return q

    def _search_sql(
        self, flt: EpisodeFilter, q: NDArray[np.float32], top_n: int, path: Literal["exact", "hnsw"]
    ) -> tuple[sql.Composed, list[Any]]:
        """The search statement of one path; both return ``seq, cosine, created_at_s, importance``."""
        where, params = self._where(flt, "embedding IS NOT NULL")
        cosine = sql.SQL("-(embedding {ip} {vec})").format(ip=self._ip, vec=self._vec)
        select = sql.SQL(
            "SELECT seq, {cosine} AS cosine, extract(epoch FROM created_at)::float8, "
            "coalesce(importance, 'NaN'::float8) FROM {t}{where}"
        ).format(cosine=cosine, t=self._t, where=where)
        order: sql.Composable
        if path == "exact":  # a derived sort key: the HNSW index can never serve it
            order = sql.SQL(" ORDER BY cosine DESC, seq LIMIT %s")
        else:
            order = sql.SQL(" ORDER BY embedding {op} {vec} LIMIT %s").format(op=self._cos, vec=self._vec)
        vec = _VectorParam(q)
        return select + order, [vec, *params, *([vec] if path == "hnsw" else []), top_n]

    def _choose_path(
        self, cur: psycopg.Cursor[Any], flt: EpisodeFilter, q: NDArray[np.float32], top_n: int
    ) -> tuple[Literal["exact", "hnsw"], int]:
        """Count the filtered rows (bounded) and pick the path (rule in the module docstring)."""
        bound = max(self.exact_search_limit, top_n)
        where, params = self._where(flt)
        # The HNSW settings ride along with the count (one round trip); the exact path ignores them.
        ef_search = min(_EF_SEARCH_MAX, max(_EF_SEARCH_MIN, top_n))
        row = cur.execute(
            sql.SQL(
                "SELECT count(*), set_config('hnsw.ef_search', %s, true), "
                "set_config('hnsw.iterative_scan', 'relaxed_order', true) "
                "FROM (SELECT 1 FROM {t}{where} LIMIT %s) AS filtered"
            ).format(t=self._t, where=where),
            [str(ef_search), *params, bound + 1],
            prepare=False,
        ).fetchone()
        filtered = int(row[0]) if row else 0
        if filtered <= bound or not np.any(q):
            return "exact", filtered
        return "hnsw", filtered

    def vector_candidates(
        self, flt: EpisodeFilter, query: NDArray[np.float32], top_n: int
    ) -> VectorCandidates:
        """Episodes passing ``flt`` that have vectors, with their cosine to ``query``.

        Exact search over small filtered sets, the HNSW index over large ones (the rule is
        in the module docstring); never fewer than ``min(top_n, filtered rows with vectors)``
        rows.

        Args:
            flt: The filter; no returned row fails it.
            query: float32 ``[dims]`` unit vector.
            top_n: How many of the most similar rows the caller needs (>= 1).

        Returns:
            At most ``top_n`` candidates; ``exhaustive`` says whether every filtered row
            with a vector is among them.

        Raises:
            EmbeddingModelMismatchError: ``query`` has another dimension than the store's vectors.
            StoreError: the database failed.
        """
        q = self._query_vector(query)
        top_n = max(1, int(top_n))
        with self._transaction("vector_candidates") as cur:
            path, filtered = self._choose_path(cur, flt, q, top_n)
            statement, params = self._search_sql(flt, q, top_n, path)
            rows = cur.execute(statement, params, prepare=False).fetchall()
            if path == "hnsw" and len(rows) < top_n:
                logger.debug(
                    "HNSW scan returned %d < %d rows: falling back to exact search", len(rows), top_n
                )
                path = "exact"
                statement, params = self._search_sql(flt, q, top_n, path)
                rows = cur.execute(statement, params, prepare=False).fetchall()
        if not rows:
            return VectorCandidates.empty()
        exhaustive = path == "exact" and (filtered <= top_n or len(rows) < top_n)
        return VectorCandidates(
            keys=np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)),
            cosine=np.fromiter((r[1] for r in rows), dtype=np.float64, count=len(rows)),
            created_at_seconds=np.fromiter((r[2] for r in rows), dtype=np.float64, count=len(rows)),
            importance=np.fromiter((r[3] for r in rows), dtype=np.float64, count=len(rows)),
            exhaustive=exhaustive,
        )

    def keyword_candidates(self, flt: EpisodeFilter, terms: Sequence[str], top_n: int) -> KeywordCandidates:
        """The best ``top_n`` episodes passing ``flt`` that match any term (full-text search).

        See :mod:`memlane.stores.postgres_fts` (index, quoting of terms, ``ts_rank_cd`` scoring).

        Raises:
            ValidationError: a term contains a NUL character.
            StoreError: the database failed.
        """
        terms = [t for t in terms if t]
        if not terms:
            return KeywordCandidates.empty()
        if any("\x00" in t for t in terms):
            raise ValidationError("PostgreSQL text cannot contain NUL characters")
        with self._transaction("keyword_candidates") as cur:
            max_seq = sql.SQL("SELECT coalesce(max(seq), 0) FROM {t}").format(t=self._t)
            table_rows = int(cur.execute(max_seq).fetchone()[0])  # type: ignore[index]

            def count(term: str, cap: int) -> int:
                statement = keyword_count_statement(self._t)
                return int(cur.execute(statement, [term, cap]).fetchone()[0])  # type: ignore[index]

            terms = self._common_terms.informative(terms, table_rows, count)
            if not terms:
                return KeywordCandidates.empty()
            where, params = self._where(flt, "content_tsv OPERATOR(pg_catalog.@@) kw.q")
            statement = keyword_statement(self._t, where, len(terms))
            rows = cur.execute(statement, [*terms, *params, max(1, int(top_n))], prepare=False).fetchall()
        return KeywordCandidates.from_rows(rows)

    def explain_vector_candidates(
        self, flt: EpisodeFilter, query: NDArray[np.float32], top_n: int, *, analyze: bool = False
    ) -> SearchPlan:
        """Say which path :meth:`vector_candidates` would take, with PostgreSQL's plan.

        A diagnostic for operators and tests; runs the same bounded count and settings.

        Args:
            flt: The filter.
            query: float32 ``[dims]`` unit vector.
            top_n: As for :meth:`vector_candidates`.
            analyze: Run the query (``EXPLAIN ANALYZE``) to get actual row counts and times.

        Raises:
            StoreError: the database failed.
        """
        q = self._query_vector(query)
        top_n = max(1, int(top_n))
        with self._transaction("explain_vector_candidates") as cur:
            path, filtered = self._choose_path(cur, flt, q, top_n)
            statement, params = self._search_sql(flt, q, top_n, path)
            prefix = sql.SQL("EXPLAIN (ANALYZE, BUFFERS) " if analyze else "EXPLAIN ")
            plan = "\n".join(
                str(r[0]) for r in cur.execute(prefix + statement, params, prepare=False).fetchall()
            )
        return SearchPlan(path=path, filtered_rows=filtered, plan=plan)

    # -- vector index maintenance ------------------------------------------------------

    def drop_vector_index(self) -> None:
        """Drop the HNSW index, e.g. before a bulk import (searches stay correct, but slower).

        Raises:
            StoreError: the database failed.
        """
        with self._transaction("drop_vector_index") as cur:
            cur.execute(
                sql.SQL("DROP INDEX IF EXISTS {schema}.ix_memlane_episodes_embedding_hnsw").format(
                    schema=self._schema
                )
            )

    def build_vector_index(self, *, maintenance_work_mem: str | None = "1GB") -> None:
        """(Re)build the HNSW index if it is missing (no-op before a model is bound or above 2,000 dims).

        Args:
            maintenance_work_mem: Memory for the build, a Postgres size such as ``"1GB"``
                (set for this transaction only; the graph should fit in it), or ``None``
                to keep the server's setting.

        Raises:
            StoreError: the database failed.
        """
        bound = self.embedding_model
        if bound is None or bound[1] > HNSW_MAX_DIMS:
            return
        with self._transaction("build_vector_index") as cur:
            if maintenance_work_mem is not None:
                cur.execute("SELECT set_config('maintenance_work_mem', %s, true)", (maintenance_work_mem,))
            for statement in bind_vector_statements(bound[1])[1:]:
                cur.execute(statement.format(schema=self._schema, ext=self._ext))

    # -- lifecycle ---------------------------------------------------------------------

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

    # -- hooks for companion stores (memlane.stores.postgres_sessions) ------------------

    def transaction(self, action: str) -> AbstractContextManager[psycopg.Cursor[Any]]:
        """A cursor in a transaction on a pooled connection; driver errors translated, vectors usable."""
        return self._transaction(action)

    def sql_names(self) -> tuple[sql.Identifier, sql.Identifier]:
        """``(schema, pgvector's schema)`` identifiers, for composing statements on this store's tables."""
        return self._schema, self._ext

    @staticmethod
    def vector_param(values: NDArray[np.float32]) -> object:
        """Wrap a float32 ``[dims]`` vector as a parameter sent in pgvector's binary format (``%b``)."""
        return _VectorParam(np.asarray(values, dtype=np.float32))

    @cached_property
    def session_store(self) -> PostgresSessionStore:
        """Session episodes in the same schema (:mod:`memlane.stores.postgres_sessions`)."""
        from memlane.stores.postgres_sessions import PostgresSessionStore

        return PostgresSessionStore(self)

    @cached_property
    def reembed_backend(self) -> PostgresReembed:
        """Embedding model migration in the same schema (:mod:`memlane.stores.postgres_reembed`)."""
        from memlane.stores.postgres_reembed import PostgresReembed

        return PostgresReembed(self)

    def forget_binding(self) -> None:
        """Drop the cached ``(model_id, dims)`` so the next use re-reads it (after a re-embedding switch)."""
        self._binding = None

    def __repr__(self) -> str:
        return f"PostgresStore({self.location!r})"
