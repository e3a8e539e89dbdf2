"""The knowledge graph in the SQLite file of a :class:`~memlane.stores.sqlite.SQLiteStore`.

Built from the episode store (``store.graph_store``), sharing its per-thread connections, its
write transactions (``BEGIN IMMEDIATE``) and its translation of ``sqlite3`` errors. Tables
(schema migration 12 in :mod:`memlane.stores.sqlite.migrations`): ``graph_entities``,
``graph_aliases``, ``graph_facts``, ``graph_merges``, ``graph_episode_entities``; times are Unix
microseconds. The SQL is :class:`~memlane.stores.graph_base.GraphStoreBase`'s (``?``
placeholders are SQLite's own); neighbourhoods and paths are recursive CTEs.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from typing import Any

from memlane.stores.graph_base import GraphStoreBase
from memlane.stores.sqlite.base import CODEC, SQLiteHost

__all__ = ["SQLiteGraphStore"]

_TABLES = {
    "facts": "graph_facts",
    "entities": "graph_entities",
    "aliases": "graph_aliases",
    "merges": "graph_merges",
    "links": "graph_episode_entities",
    "episodes": "episodes",
}


@cache
def _render(template: str) -> str:
    return template.format(**_TABLES)


class _Run:
    """Statements on one connection (the :class:`~memlane.stores.graph_base.Executor` of SQLite)."""

    __slots__ = ("_conn",)

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def __call__(self, template: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in self._conn.execute(_render(template), list(params)).fetchall()]

    def many(self, template: str, rows: Sequence[Sequence[Any]]) -> None:
        self._conn.executemany(_render(template), [list(r) for r in rows])

    def rowcount(self, template: str, params: Sequence[Any]) -> int:
        return self._conn.execute(_render(template), list(params)).rowcount


class SQLiteGraphStore(GraphStoreBase):
    """Entities and facts in a :class:`~memlane.stores.sqlite.SQLiteStore`'s file (module docstring).

    Args:
        store: The episode store whose file and connections are shared.
    """

    codec = CODEC

    def __init__(self, store: SQLiteHost) -> None:
        self._store = store

    @contextmanager
    def _read(self, action: str) -> Iterator[_Run]:
        with self._store.translate_errors(action):
            yield _Run(self._store.connection())

    @contextmanager
    def _write(self, action: str) -> Iterator[_Run]:
        with self._store.translate_errors(action), self._store.write_transaction() as conn:
            yield _Run(conn)

    def __repr__(self) -> str:
        return f"SQLiteGraphStore({self._store.path!r})"
