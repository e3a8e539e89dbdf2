"""The value index (``memlane.stores.base.VALUE_INDEX_ROOTS``) on each backend: the rows of the JSON scan.

For random LangGraph items and filters, ``MemlaneStore.search`` (whose metadata conditions read the
value index: SQLite drives from the rarest, PostgreSQL probes it) returns the items of the plain JSON
test of the same ``EpisodeFilter`` (``filters.where`` without the index), of memlane's Python check
(``_filter_matches``) and of LangGraph's ``InMemoryStore`` comparison (``_compare_values``, an error,
e.g. ``float(None)`` in ``$gt``, read as no match). InMemoryStore orders through ``float()``: it
cannot order strings, and it orders booleans as 0/1, which memlane never does (``MetadataCondition``:
numbers with numbers, strings with strings), so a filter ordering strings, or key ``c`` (the only one
holding booleans), is checked against the first three only.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.store.base import PutOp
from langgraph.store.memory import _compare_values
from psycopg import sql

from memlane import EpisodicMemory
from memlane.embeddings.fake import HashingEmbedder
from memlane.integrations.langgraph import MemlaneStore, _filter_conditions, _filter_matches, namespace_tag
from memlane.stores.base import EpisodeFilter
from memlane.stores.postgres import filters as pg_filters
from memlane.stores.sqlite import filters as sqlite_filters
from memlane.stores.sqlite.migrations import MIGRATIONS
from tests.backends import BackendDB, postgres_db, split_schema, sqlite_db

_NUMBERS = st.sampled_from([-3, 2, 3, 4, 2.5, 3.0, 7, 1e6])  # never 0 or 1: Python's True == 1
_STRINGS = st.sampled_from(["p", "q", "qq", "r", "", "é", "P"])
_MISSING = object()
_LEAF = st.one_of(_NUMBERS, _STRINGS, st.none(), st.just(_MISSING))
_FLAG = st.one_of(st.booleans(), _STRINGS, st.none(), st.just(_MISSING))
_ORDER_OPS = ("$gt", "$gte", "$lt", "$lte")


@st.composite
def _value(draw: st.DrawFn) -> dict[str, Any]:
    leaves = {"a": draw(_LEAF), "b": draw(_LEAF), "c": draw(_FLAG)}
    value = {k: v for k, v in leaves.items() if v is not _MISSING}
    nested = draw(st.one_of(st.just(_MISSING), st.just("scalar"), st.dictionaries(st.just("x"), _LEAF)))
    if nested is not _MISSING:
        value["u"] = (
            nested if not isinstance(nested, dict) else {k: v for k, v in nested.items() if v is not _MISSING}
        )
    return value


def _operand(draw: st.DrawFn, key: str) -> Any:
    scalar = draw(st.one_of(_NUMBERS, _STRINGS, st.none(), *([st.booleans()] if key == "c" else [])))
    op = draw(st.sampled_from(["plain", "$eq", "$ne", *_ORDER_OPS]))
    if op in _ORDER_OPS:
        return {op: draw(st.one_of(_NUMBERS, _STRINGS))}
    return scalar if op == "plain" else {op: scalar}


@st.composite
def _filter(draw: st.DrawFn) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key in draw(st.lists(st.sampled_from(["a", "b", "c", "u"]), min_size=1, max_size=3, unique=True)):
        found[key] = {"x": _operand(draw, "x")} if key == "u" else _operand(draw, key)
    return found


def _orders_strings(expected: Any) -> bool:
    if not isinstance(expected, dict):
        return False
    return any((op in _ORDER_OPS and isinstance(v, str)) or _orders_strings(v) for op, v in expected.items())


def _in_memory(value: dict[str, Any], flt: dict[str, Any]) -> bool:
    """LangGraph InMemoryStore's filter test of one item (an error is no match)."""
    try:
        return all(_compare_values(value.get(key), expected) for key, expected in flt.items())
    except (TypeError, ValueError):
        return False


class _Scan:
    """The plain JSON test of an ``EpisodeFilter`` on a backend (``filters.where`` without the index)."""

    def __init__(self, db: BackendDB) -> None:
        self.db = db

    def keys(self, flt: EpisodeFilter) -> set[str]:
        if self.db.kind == "sqlite":
            where, params = sqlite_filters.where(flt)
            with sqlite3.connect(self.db.location) as conn:
                rows = conn.execute(f"SELECT metadata FROM episodes{where}", params).fetchall()
            return {json.loads(r[0])["langgraph"]["key"] for r in rows}
        url, schema = split_schema(self.db.location)
        composed, params = pg_filters.where(flt)
        table = sql.SQL("{}.memlane_episodes").format(sql.Identifier(schema or "public"))
        with psycopg.connect(url) as conn:
            rows = conn.execute(
                sql.SQL("SELECT metadata FROM {}{}").format(table, composed), params
            ).fetchall()
        return {r[0]["langgraph"]["key"] for r in rows}


@pytest.fixture(params=["sqlite", "postgres"])
def indexed_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[MemlaneStore, _Scan]]:
    """A MemlaneStore (cheap embedder) on each backend, and the plain scan of its database."""
    if request.param == "sqlite":
        db = sqlite_db(tmp_path)
    else:
        db = postgres_db(request.getfixturevalue("pg_url"), request.getfixturevalue("pg_schema"))
    store = MemlaneStore(EpisodicMemory(db.open(), HashingEmbedder(32), tenant_id="lg"), owns_memory=True)
    yield store, _Scan(db)
    store.close()


_PREFIXES = itertools.count()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(_value(), min_size=1, max_size=8), flt=_filter(), update=st.booleans())
def test_index_path_equals_scan_path_and_langgraph(
    indexed_store: tuple[MemlaneStore, _Scan], values: list[dict[str, Any]], flt: dict[str, Any], update: bool
) -> None:
    store, scan = indexed_store
    prefix = ("p", str(next(_PREFIXES)))
    store.batch([PutOp(prefix, f"k{i}", value) for i, value in enumerate(values)])
    if update:  # a new version of the first item: the index follows the current row
        values[0] = {**values[0], "a": 4}
        store.put(prefix, "k0", values[0])
    found = {item.key for item in store.search(prefix, filter=flt, limit=100)}
    python = {f"k{i}" for i, value in enumerate(values) if _filter_matches(value, flt)}
    assert found == python, (values, flt)
    conditions, exact = _filter_conditions(flt)
    eflt = store._items_filter(store._base, (namespace_tag(prefix),), conditions)
    if exact:
        assert scan.keys(eflt) == found
    else:
        assert scan.keys(eflt) >= found
    orders_flags = isinstance(flt.get("c"), dict) and any(op in _ORDER_OPS for op in flt["c"])
    if not _orders_strings(flt) and not orders_flags:
        expected = {f"k{i}" for i, value in enumerate(values) if _in_memory(value, flt)}
        assert found == expected, (values, flt)


def test_the_index_follows_metadata_updates_and_deletes(indexed_store: tuple[MemlaneStore, _Scan]) -> None:
    store, _ = indexed_store
    store.put(("t",), "a", {"n": 5, "s": "x"})
    store.put(("t",), "b", {"n": 6, "s": "y"})
    assert [i.key for i in store.search(("t",), filter={"n": {"$gte": 6}})] == ["b"]
    store.put(("t",), "b", {"n": 2, "s": "y"})  # supersedes: the old version is retired, not re-indexed
    assert [i.key for i in store.search(("t",), filter={"n": {"$gte": 6}})] == []
    assert [i.key for i in store.search(("t",), filter={"n": {"$lt": 3}})] == ["b"]
    store.delete(("t",), "a")
    assert [i.key for i in store.search(("t",), filter={"s": "x"})] == []


def test_the_migration_backfills_existing_rows(tmp_path: Path) -> None:
    """The SQLite migration's steps over a database whose items were written before it: indexed."""
    number = next(i for i, m in enumerate(MIGRATIONS) if "episode_metadata_values" in str(m[0]))
    store = MemlaneStore(EpisodicMemory(sqlite_db(tmp_path).open(), HashingEmbedder(32)), owns_memory=True)
    store.put(("t",), "a", {"n": 5, "u": {"s": "x", "b": True}, "l": [1]})
    location = store.memory.store.path  # type: ignore[attr-defined]
    store.close()
    with sqlite3.connect(location) as conn:  # as before the migration: no table, no triggers
        conn.execute("DROP TABLE episode_metadata_values")
        for trigger in ("insert", "update", "delete"):
            conn.execute(f"DROP TRIGGER tr_episode_metadata_values_{trigger}")
        for _ in range(2):  # and again over its own result, as an older version's test setup does
            for step in MIGRATIONS[number]:
                assert isinstance(step, str)
                conn.execute(step)
        rows = conn.execute("SELECT path, kind, value FROM episode_metadata_values ORDER BY path").fetchall()
    assert rows == [
        ("$.langgraph.value.l[0]", "number", 1),  # under an array: held, never probed
        ("$.langgraph.value.n", "number", 5),
        ("$.langgraph.value.u.b", "boolean", 1),
        ("$.langgraph.value.u.s", "string", "x"),
    ]
