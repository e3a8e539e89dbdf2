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

import memlane.stores.postgres.filters as filters
from memlane.stores.base import EpisodeFilter, LinkedEpisodes
from memlane.stores.graph_base import EntityLink, GraphStoreBase
from memlane.stores.postgres.base import CODEC, PostgresHost, key_array, reject_nul

__all__ = ["LINK_TABLE", "PostgresGraphStore", "linked_episodes"]

_TABLES = {
    "facts": "memlane_graph_facts",
    "entities": "memlane_graph_entities",
    "aliases": "memlane_graph_aliases",
    "merges": "memlane_graph_merges",
    "links": "memlane_graph_episode_entities",
    "episodes": "memlane_episodes",
}


LINK_TABLE = _TABLES["links"]
"""The episode -> entity link table (in the store's schema)."""

_LINK_INSERT = (
    "INSERT INTO {links} (tenant_id, entity_id, episode_id, session_id, created_at) "
    "SELECT * FROM ROWS FROM (pg_catalog.unnest(%b::text[]), pg_catalog.unnest(%b::text[]), "
    "pg_catalog.unnest(%b::text[]), pg_catalog.unnest(%b::text[]), pg_catalog.unnest(%b::timestamptz[])) "
    "ON CONFLICT (tenant_id, entity_id, episode_id) DO NOTHING"
)


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

    def link_episodes(self, links: Sequence[EntityLink]) -> None:
        """Record episode -> entity links (see :meth:`~memlane.stores.graph_base.GraphStore.link_episodes`).

        One ``INSERT ... SELECT FROM unnest(...)`` of five array parameters instead of a statement
        per link (a batch of 1,000 episodes holds about 1,300 links: 190 ms as ``executemany``
        on the shared machine). Rows go in key order, so concurrent writers lock
        overlapping links in one order.

        Raises:
            ValidationError: a text contains a NUL character.
            StoreError: the database failed.
        """
        if not links:
            return
        rows = sorted((k.tenant_id, k.entity_id, k.episode_id, k.session_id, k.created_at) for k in links)
        columns = [list(c) for c in zip(*rows, strict=True)]
        reject_nul(p for c in columns[:4] for p in c)
        with self._store.transaction("link_episodes") as cur:
            cur.execute(sql.SQL(_LINK_INSERT).format(links=self._tables["links"]), columns)

    def __repr__(self) -> str:
        return f"PostgresGraphStore({self._store.location!r})"


def linked_episodes(
    cur: Cursor[Any],
    episodes: sql.Composable,
    links: sql.Composable,
    query: tuple[EpisodeFilter, str, Sequence[str], Sequence[int], int],
) -> LinkedEpisodes:
    """:meth:`memlane.stores.base.Store.linked_episodes` on one cursor (two statements).

    Args:
        cur: A cursor inside the store's transaction.
        episodes: The schema-qualified episodes table. links: The episode -> entity link table.
        query: ``(flt, tenant_id, entities, keys, extra)`` as for the protocol method.

    The extra rows come from the link table's ``(tenant_id, entity_id, episode_id)`` key joined to
    the episodes by id; the links of the requested keys by ``seq``. Lists are array parameters.
    """
    flt, tenant_id, entities, keys, extra = query
    wanted = sorted(set(entities))
    reject_nul(wanted)
    reject_nul([tenant_id])
    requested = sorted({int(k) for k in keys})
    rows: list[tuple[Any, ...]] = []
    if wanted and extra > 0:
        where, params = filters.where(flt)
        statement = sql.SQL(
            "SELECT e.seq, e.id, extract(epoch FROM e.created_at)::float8, e.importance FROM (SELECT seq, "
            "id, tenant_id, created_at, importance FROM {t}{where}) e JOIN {links} l ON l.tenant_id = "
            "e.tenant_id AND l.episode_id = e.id WHERE l.tenant_id = %s AND l.entity_id = ANY(%s::text[]) "
            "AND NOT (e.seq = ANY(%s::int8[])) GROUP BY e.seq, e.id, e.created_at, e.importance "
            "ORDER BY count(*) DESC, e.seq DESC LIMIT %s"
        ).format(t=episodes, where=where, links=links)
        rows = [
            tuple(r)
            for r in cur.execute(
                statement, [*params, tenant_id, wanted, key_array(requested), int(extra)]
            ).fetchall()
        ]
    found: list[tuple[Any, ...]] = []
    every = requested + [int(r[0]) for r in rows]
    if wanted and every:
        statement = sql.SQL(
            "SELECT e.seq, l.entity_id FROM {t} e JOIN {links} l ON l.tenant_id = e.tenant_id AND "
            "l.episode_id = e.id WHERE e.seq = ANY(%s::int8[]) AND l.tenant_id = %s "
            "AND l.entity_id = ANY(%s::text[])"
        ).format(t=episodes, links=links)
        found = [tuple(r) for r in cur.execute(statement, [key_array(every), tenant_id, wanted]).fetchall()]
    return LinkedEpisodes.from_rows(found, rows)
