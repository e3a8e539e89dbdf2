"""The knowledge graph in the schema of a :class:`~memlane.stores.postgres.PostgresStore`.

Built from the episode store (``store.graph_store``), sharing its connection pool and its
transactions (driver errors translated into :class:`~memlane.errors.StoreError`). Tables
(schema migration 11 in :mod:`memlane.stores.postgres.migrations`), all prefixed
``memlane_graph_``; ``tenant_id`` leads every key, ready for a tenant-sharded cluster. The SQL is
:class:`~memlane.stores.graph_base.GraphStoreBase`'s, rendered as :class:`psycopg.sql.SQL`
with the schema-qualified table names as identifiers and ``?`` turned into ``%s``;
neighbourhoods and paths are recursive CTEs.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from psycopg import Cursor, sql

from memlane.stores.graph_base import GraphStoreBase
from memlane.stores.postgres.base import CODEC, PostgresHost, reject_nul

__all__ = ["PostgresGraphStore"]

_TABLES = {
    "facts": "memlane_graph_facts",
    "entities": "memlane_graph_entities",
    "aliases": "memlane_graph_aliases",
    "merges": "memlane_graph_merges",
    "links": "memlane_graph_episode_entities",
    "episodes": "memlane_episodes",
}


class _Run:
    """Statements on one cursor (the :class:`~memlane.stores.graph_base.Executor` of PostgreSQL)."""

    __slots__ = ("_cur", "_render")

    def __init__(self, cur: Cursor[Any], render: Any) -> None:
        self._cur = cur
        self._render = render

    def __call__(self, template: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        reject_nul(p for p in params if isinstance(p, str))
        self._cur.execute(self._render(template), list(params))
        return [tuple(r) for r in self._cur.fetchall()] if self._cur.description else []

    def many(self, template: str, rows: Sequence[Sequence[Any]]) -> None:
        reject_nul(p for r in rows for p in r if isinstance(p, str))
        self._cur.executemany(self._render(template), [list(r) for r in rows])

    def rowcount(self, template: str, params: Sequence[Any]) -> int:
        reject_nul(p for p in params if isinstance(p, str))
        self._cur.execute(self._render(template), list(params))
        return self._cur.rowcount


class PostgresGraphStore(GraphStoreBase):
    """Entities and facts in a :class:`~memlane.stores.postgres.PostgresStore`'s schema (module docstring).

    Args:
        store: The episode store whose pool and schema are shared.
    """

    codec = CODEC

    def __init__(self, store: PostgresHost) -> None:
        self._store = store
        schema, _ = store.sql_names()
        self._tables = {k: sql.SQL("{}.{}").format(schema, sql.Identifier(v)) for k, v in _TABLES.items()}
        self._cache: dict[str, sql.Composed] = {}

    def _render(self, template: str) -> sql.Composed:
        found = self._cache.get(template)
        if found is None:
            text = template.replace("%", "%%").replace("?", "%s")
            found = self._cache[template] = sql.SQL(text).format(**self._tables)
        return found

    @contextmanager
    def _read(self, action: str) -> Iterator[_Run]:
        with self._store.transaction(action) as cur:
            yield _Run(cur, self._render)

    _write = _read

    def __repr__(self) -> str:
        return f"PostgresGraphStore({self._store.location!r})"
