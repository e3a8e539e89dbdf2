"""The knowledge graph in the SQLite file of a :class:`~memlane.stores.sqlite.SQLiteStore`.

Built from the episode store (``store.graph_store``), sharing its per-thread connections, its
write transactions (``BEGIN IMMEDIATE``) and its translation of ``sqlite3`` errors. Tables
(schema migration 12 in :mod:`memlane.stores.sqlite.migrations`): ``graph_entities``,
``graph_aliases``, ``graph_facts``, ``graph_merges``, ``graph_episode_entities``; times are Unix
microseconds. The SQL is :class:`~memlane.stores.graph_base.GraphStoreBase`'s (``?``
placeholders are SQLite's own); neighbourhoods and paths are recursive CTEs.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from typing import Any

import memlane.stores.sqlite.filters as filters
from memlane.stores.base import EpisodeFilter, LinkedEpisodes
from memlane.stores.graph_base import GraphStoreBase
from memlane.stores.sqlite.base import CODEC, SQLiteHost

__all__ = ["SQLiteGraphStore", "linked_episodes"]

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
        self._conn.executemany(_render(template), rows)  # sqlite3 binds any sequence: no copies

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


_LINKED_EXTRA = (
    "SELECT e.seq, e.id, e.created_at_us, e.importance FROM (SELECT seq, id, tenant_id, created_at_us, "
    "importance FROM episodes{where}) e JOIN graph_episode_entities l ON l.tenant_id = e.tenant_id "
    "AND l.episode_id = e.id WHERE l.tenant_id = ? AND l.entity_id IN (SELECT value FROM json_each(?)) "
    "AND e.seq NOT IN (SELECT value FROM json_each(?)) "
    "GROUP BY e.seq, e.id, e.created_at_us, e.importance ORDER BY count(*) DESC, e.seq DESC LIMIT ?"
)
_LINKS_OF_KEYS = (
    "SELECT e.seq, l.entity_id FROM json_each(?) k CROSS JOIN episodes e ON e.seq = k.value "
    "CROSS JOIN graph_episode_entities l ON l.tenant_id = ? AND l.episode_id = e.id "
    "WHERE l.entity_id IN (SELECT value FROM json_each(?))"
)
"""The links of the requested keys: driven from the keys (``CROSS JOIN`` fixes SQLite's join order), one
rowid probe and one ``ix_graph_episode_entities_episode`` probe per key. Left to the planner it drove from
the links of a frequent entity (a chat's speaker) and rescanned the key list for each: 35 ms for 500
candidates on a LoCoMo conversation, against 1 ms."""


def linked_episodes(
    conn: sqlite3.Connection,
    flt: EpisodeFilter,
    tenant_id: str,
    entities: Sequence[str],
    keys: Sequence[int],
    extra: int,
) -> LinkedEpisodes:
    """:meth:`memlane.stores.base.Store.linked_episodes` on one connection (two statements).

    The extra rows come from the link table's ``(tenant_id, entity_id, episode_id)`` key, each joined
    to its episode by id; the links of the requested keys by their ``seq`` (:data:`_LINKS_OF_KEYS`).
    Lists travel as one JSON parameter each (no statement text grows with them).

    Raises:
        sqlite3.Error: the database failed (the store translates it).
    """
    wanted = json.dumps(sorted(set(entities)))
    requested = sorted({int(k) for k in keys})
    rows: list[tuple[Any, ...]] = []
    if entities and extra > 0:
        where, params = filters.where(flt)
        found = conn.execute(
            _LINKED_EXTRA.format(where=where),
            [*params, tenant_id, wanted, json.dumps(requested), int(extra)],
        ).fetchall()
        rows = [(seq, eid, us / 1e6, imp) for seq, eid, us, imp in found]
    links: list[tuple[Any, ...]] = []
    every = requested + [int(r[0]) for r in rows]
    if entities and every:
        links = conn.execute(_LINKS_OF_KEYS, [json.dumps(every), tenant_id, wanted]).fetchall()
    return LinkedEpisodes.from_rows(links, rows)
