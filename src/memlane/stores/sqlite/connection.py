"""The SQLite store's connections: one per thread, write transactions, the schema at open, errors.

* WAL journal and a busy timeout, so several threads and processes can share a file;
  each thread gets its own connection (``":memory:"``: one shared connection).
* Schema created and upgraded at open through numbered migrations
  (:mod:`memlane.stores.sqlite.migrations`), under a write lock so two processes
  opening a new file at once do not race; the version lives in ``PRAGMA user_version``.
* Every ``sqlite3`` exception is translated into :class:`memlane.errors.StoreError`.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from memlane.errors import SchemaVersionError, StoreClosedError, StoreError
from memlane.stores.sqlite.migrations import MIGRATIONS

__all__ = ["SQLiteConnection"]

logger = logging.getLogger(__name__)


class SQLiteConnection:
    """The connections to one memlane SQLite file (the base of :class:`~memlane.stores.sqlite.SQLiteStore`).

    Args:
        path: Database file (created if missing, with parent directories) or ``":memory:"``.
        busy_timeout_s: Seconds a connection waits for another writer's lock before failing.

    Raises:
        SchemaVersionError: the file was written by a newer memlane.
        StoreError: the file cannot be opened or is not a memlane database.
    """

    def __init__(self, path: str | Path, *, busy_timeout_s: float = 30.0) -> None:
        self._memory = str(path) == ":memory:"
        self.path = str(path) if self._memory else str(Path(path).expanduser().resolve())
        self._timeout = busy_timeout_s
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._conn_lock = threading.Lock()
        self._closed = False
        if not self._memory:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        with self._translate("open"):
            self._migrate()

    def _conn(self) -> sqlite3.Connection:
        if self._closed:
            raise StoreClosedError(f"SQLite store {self.path} is closed")
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            if self._memory and self._connections:
                conn = self._connections[0]
            else:
                conn = sqlite3.connect(
                    self.path, timeout=self._timeout, isolation_level=None, check_same_thread=False
                )
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute(f"PRAGMA busy_timeout={int(self._timeout * 1000)}")
                # 32 MiB page cache (filled only as used) and a checkpoint every ~40 MB of WAL:
                # ingest at 100k episodes went from ~10k to ~15k episodes/s (benchmarks/scale.py).
                conn.execute("PRAGMA cache_size=-32768")
                conn.execute("PRAGMA wal_autocheckpoint=10000")
                with self._conn_lock:
                    self._connections.append(conn)
            self._local.conn = conn
        return conn

    @contextmanager
    def _translate(self, action: str) -> Iterator[None]:
        try:
            yield
        except sqlite3.IntegrityError as exc:
            raise StoreError(f"SQLite integrity error during {action} on {self.path}: {exc}") from exc
        except sqlite3.Error as exc:
            raise StoreError(f"SQLite error during {action} on {self.path}: {exc}") from exc

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction that takes the database lock up front (BEGIN IMMEDIATE)."""
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def _migrate(self) -> None:
        conn = self._conn()
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version == len(MIGRATIONS):
            return
        with self._write() as conn:
            version = conn.execute("PRAGMA user_version").fetchone()[0]  # re-read under the lock
            if version > len(MIGRATIONS):
                raise SchemaVersionError(
                    f"{self.path} has schema version {version}, this memlane knows up to "
                    f"{len(MIGRATIONS)}: upgrade memlane"
                )
            if version == 0:
                existing = conn.execute(
                    "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
                ).fetchone()[0]
                if existing:
                    raise StoreError(f"{self.path} is an SQLite database but not a memlane store")
            for number in range(version, len(MIGRATIONS)):
                for statement in MIGRATIONS[number]:
                    if isinstance(statement, str):
                        conn.execute(statement)
                    else:
                        statement(conn)
                conn.execute(f"PRAGMA user_version = {number + 1:d}")
                logger.info("migrated %s to schema version %d", self.path, number + 1)

    @property
    def schema_version(self) -> int:
        """Applied migration number."""
        with self._translate("schema_version"):
            return int(self._conn().execute("PRAGMA user_version").fetchone()[0])

    def close(self) -> None:
        """Close every connection this store opened. Idempotent."""
        if self._closed:
            return
        self._closed = True
        with self._conn_lock:
            for conn in self._connections:
                try:
                    conn.close()
                except sqlite3.Error:  # pragma: no cover - closing never matters
                    logger.debug("error closing a connection", exc_info=True)
            self._connections.clear()

    # -- hooks for companion stores (memlane.stores.sqlite.sessions, .reembed) ---------------

    def connection(self) -> sqlite3.Connection:
        """This thread's connection to the file (raises :class:`StoreClosedError` once closed)."""
        return self._conn()

    def translate_errors(self, action: str) -> AbstractContextManager[None]:
        """Translate ``sqlite3`` errors raised in the block into :class:`StoreError` (``action`` names it)."""
        return self._translate(action)

    def write_transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        """A ``BEGIN IMMEDIATE`` transaction on this thread's connection (rolled back on error)."""
        return self._write()
