"""What the SQLite modules share: value encodings, generation counters and the store's hooks.

* Times are ``INTEGER`` Unix microseconds (UTC); tags and metadata are JSON text; vectors are
  float32 little-endian blobs (:data:`CODEC`, :func:`encode_vectors`, :func:`decode_vectors`).
* ``store_meta`` holds a generation counter per vector table (``delete_generation`` for
  episodes, ``session_delete_generation`` for session windows); bumping it makes every
  process rebuild its in-memory :class:`~memlane.stores.sqlite.vector_index.VectorCache`.
* :class:`SQLiteHost` is what the companion stores (sessions, re-embedding) use of the
  episode store, so they depend on this protocol rather than on the store's module.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta
from json.encoder import encode_basestring
from typing import Any, Protocol, TypeVar

import numpy as np
from numpy.typing import NDArray

from memlane.stores.common import RowCodec, canonical_json

__all__ = [
    "CODEC",
    "SQLiteHost",
    "Snapshot",
    "SnapshotMemo",
    "bump_generation",
    "decode_vectors",
    "encode_vectors",
    "from_us",
    "in_chunks",
    "opt_us",
    "read_generation",
    "snapshot",
    "to_us",
    "vector_batches",
]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_US = timedelta(microseconds=1)

_T = TypeVar("_T")


def to_us(value: datetime) -> int:
    """A timezone-aware ``datetime`` as Unix microseconds (exact integer arithmetic).

    A naive one is taken as local time (as ``astimezone`` takes it).
    """
    if value.tzinfo is None:
        value = value.astimezone(UTC)
    return (value - _EPOCH) // _ONE_US


def from_us(value: int) -> datetime:
    """Unix microseconds as a UTC ``datetime``."""
    return _EPOCH + timedelta(microseconds=value)


def opt_us(value: datetime | None) -> int | None:
    """:func:`to_us`, with ``None`` kept."""
    return None if value is None else to_us(value)


def _tags_in(tags: tuple[str, ...]) -> str:
    """Tags as JSON text, byte for byte what ``json.dumps(list(tags), ensure_ascii=False)`` gives."""
    return "[" + ", ".join(map(encode_basestring, tags)) + "]"


CODEC = RowCodec(
    time_in=to_us,
    time_out=from_us,
    tags_in=_tags_in,
    tags_out=json.loads,
    json_in=canonical_json,
    json_out=json.loads,
    flag_in=int,
)
"""Episode and session values as the SQLite columns hold them."""


def encode_vectors(vectors: NDArray[np.floating]) -> list[bytes]:
    """One float32 little-endian blob per row of a ``[n, dims]`` matrix."""
    data = np.ascontiguousarray(vectors, dtype="<f4")
    return [row.tobytes() for row in data]


def decode_vectors(blobs: Sequence[bytes]) -> NDArray[np.float32]:
    """The ``[len(blobs), dims]`` matrix of blobs of one dimension (a read-only view of their bytes)."""
    matrix: NDArray[np.float32] = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), -1)
    return matrix


def vector_batches(cursor: sqlite3.Cursor, blob: int) -> Iterator[tuple[list[Any], NDArray[np.float32]]]:
    """A query's rows in batches of 5,000, each with the ``[n, dims]`` matrix of its blob column ``blob``."""
    while batch := cursor.fetchmany(5000):
        yield batch, decode_vectors([r[blob] for r in batch])


def in_chunks(values: Sequence[_T], size: int = 500) -> Iterator[tuple[list[_T], str]]:
    """``values`` in chunks of at most ``size``, each with its ``?,?,...`` placeholders.

    Keeps an ``IN (...)`` list well under SQLite's limit on bound parameters per statement.
    """
    for start in range(0, len(values), size):
        chunk = list(values[start : start + size])
        yield chunk, ",".join("?" * len(chunk))


def bump_generation(conn: sqlite3.Connection, key: str) -> None:
    """Add 1 to the ``store_meta`` counter ``key`` (in the caller's transaction)."""
    conn.execute("UPDATE store_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = ?", (key,))


def read_generation(conn: sqlite3.Connection, key: str) -> str | None:
    """The ``store_meta`` counter ``key``, or ``None`` if there is none."""
    row = conn.execute("SELECT value FROM store_meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


Snapshot = tuple[sqlite3.Connection, int, int]
"""What one connection has seen of the file: itself, ``PRAGMA data_version`` and ``total_changes``."""


def snapshot(conn: sqlite3.Connection) -> Snapshot | None:
    """A key equal exactly while the file is unchanged as ``conn`` sees it; ``None`` in a transaction.

    ``PRAGMA data_version`` changes when any *other* connection (another thread's or another
    process's) commits; :attr:`sqlite3.Connection.total_changes` grows with every row this
    connection inserts, updates or deletes (triggers included). Equal snapshots, outside a
    transaction, mean no committed change in between, so a value derived from the file then (an
    in-memory index, a statistic) is still the file's. Inside a transaction a rollback could undo
    rows already read, hence ``None`` (derive afresh). One statement, no table read.

    Raises:
        sqlite3.Error: the database failed.
    """
    if conn.in_transaction:
        return None
    return conn, int(conn.execute("PRAGMA data_version").fetchone()[0]), conn.total_changes


class SnapshotMemo:
    """Values read from the file, each read once per :func:`snapshot` of the connection reading it.

    For small reads a recall repeats (``scope_stats``, ``store_meta``): :meth:`get` costs one
    ``PRAGMA data_version`` while nothing changed. Safe to share between threads: the values of
    one snapshot live in a dictionary of their own, replaced as a whole.
    """

    def __init__(self) -> None:
        self._held: tuple[Snapshot, dict[Hashable, Any]] | None = None

    def get(self, conn: sqlite3.Connection, key: Hashable, read: Callable[[], _T]) -> _T:
        """``read()``, or its value kept from an earlier call with ``key`` at the same snapshot.

        Raises:
            sqlite3.Error: the database failed (nothing is kept).
        """
        at = snapshot(conn)
        if at is None:  # in a transaction: read afresh
            return read()
        held = self._held
        if held is None or held[0] != at:
            held = self._held = (at, {})
        values = held[1]
        if key not in values:
            values[key] = read()
        value: _T = values[key]
        return value


class SQLiteHost(Protocol):
    """The hooks a :class:`~memlane.stores.sqlite.SQLiteStore` offers the stores sharing its file."""

    @property
    def path(self) -> str:
        """The database file (or ``":memory:"``)."""
        ...

    @property
    def embedding_model(self) -> tuple[str, int] | None:
        """``(model_id, dims)`` the store is bound to, or ``None``."""
        ...

    def connection(self) -> sqlite3.Connection:
        """This thread's connection (raises :class:`~memlane.errors.StoreClosedError` once closed)."""
        ...

    def translate_errors(self, action: str) -> AbstractContextManager[None]:
        """Translate ``sqlite3`` errors raised in the block into :class:`~memlane.errors.StoreError`."""
        ...

    def write_transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        """A ``BEGIN IMMEDIATE`` transaction on this thread's connection (rolled back on error)."""
        ...
