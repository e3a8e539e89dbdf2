"""The same assertions against LangGraph's InMemoryStore and MemlaneStore (SQLite, PostgreSQL).

Each test states a behaviour InMemoryStore documents (``langgraph.store.base``/``memory``);
MemlaneStore must show it too. Result order is compared only where LangGraph defines it
(ranked search, list_namespaces); elsewhere the results are compared as sets.
"""

from __future__ import annotations

import asyncio

import pytest
from langgraph.store.base import BaseStore, GetOp, InvalidNamespaceError, ListNamespacesOp, PutOp, SearchOp

DOCS = [
    (
        ("docs", "a"),
        "r1",
        {"text": "Quarterly revenue report", "type": "report", "score": 5, "meta": {"lang": "en"}},
    ),
    (
        ("docs", "a"),
        "r2",
        {"text": "Rapport trimestriel", "type": "report", "score": 2, "meta": {"lang": "fr"}},
    ),
    (
        ("docs", "b"),
        "m1",
        {"text": "Team meeting minutes", "type": "minutes", "score": 4, "tags": ["x", "y"]},
    ),
    (("docs", "b", "old"), "m0", {"text": "Minutes of an old meeting", "type": "minutes", "score": 1}),
    (("users", "u1"), "prefs", {"text": "User prefers window seats on flights", "type": "pref"}),
]


def _fill(store: BaseStore) -> None:
    for namespace, key, value in DOCS:
        store.put(namespace, key, value)


def _ids(items: list) -> set[tuple[tuple[str, ...], str]]:  # type: ignore[type-arg]
    return {(tuple(i.namespace), i.key) for i in items}


def test_put_then_get_returns_the_item(any_store: BaseStore) -> None:
    any_store.put(("users", "u1"), "prefs", {"theme": "dark", "n": 3})
    item = any_store.get(("users", "u1"), "prefs")
    assert item is not None
    assert item.value == {"theme": "dark", "n": 3}
    assert item.key == "prefs" and item.namespace == ("users", "u1")
    assert item.created_at.tzinfo is not None and item.created_at <= item.updated_at
    assert any_store.get(("users", "u1"), "missing") is None
    assert any_store.get(("users", "u2"), "prefs") is None


def test_put_with_the_same_key_replaces(any_store: BaseStore) -> None:
    any_store.put(("users", "u1"), "prefs", {"theme": "dark"})
    any_store.put(("users", "u1"), "prefs", {"theme": "light"})
    item = any_store.get(("users", "u1"), "prefs")
    assert item is not None and item.value == {"theme": "light"}
    found = any_store.search(("users",))
    assert [(i.key, i.value) for i in found] == [("prefs", {"theme": "light"})]


def test_delete_removes(any_store: BaseStore) -> None:
    _fill(any_store)
    any_store.delete(("docs", "a"), "r1")
    any_store.delete(("docs", "a"), "never-existed")  # no error
    assert any_store.get(("docs", "a"), "r1") is None
    assert (("docs", "a"), "r1") not in _ids(any_store.search(("docs",), limit=50))
    assert _ids(any_store.search(("docs", "a"))) == {(("docs", "a"), "r2")}


def test_search_is_limited_to_the_namespace_prefix(any_store: BaseStore) -> None:
    _fill(any_store)
    everything = {(ns, key) for ns, key, _ in DOCS}
    assert _ids(any_store.search((), limit=50)) == everything
    assert _ids(any_store.search(("docs",), limit=50)) == {(ns, k) for ns, k in everything if ns[0] == "docs"}
    assert _ids(any_store.search(("docs", "b"), limit=50)) == {
        (("docs", "b"), "m1"),
        (("docs", "b", "old"), "m0"),
    }
    assert _ids(any_store.search(("docs", "c"))) == set()
    assert _ids(any_store.search(("doc",))) == set()  # a prefix of labels, not of strings


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        ({"type": "report"}, {"r1", "r2"}),
        ({"type": "report", "score": 5}, {"r1"}),
        ({"score": {"$gt": 3}}, {"r1", "m1"}),
        ({"score": {"$gte": 4, "$lt": 5}}, {"m1"}),
        ({"score": {"$lte": 1}}, {"m0"}),
        ({"type": {"$ne": "report"}}, {"m1", "m0"}),
        ({"type": {"$eq": "minutes"}}, {"m1", "m0"}),
        ({"meta": {"lang": "fr"}}, {"r2"}),
        ({"tags": ["x", "y"]}, {"m1"}),
        ({"tags": ["y", "x"]}, set()),
        ({"absent": 1}, set()),
    ],
)
def test_search_filters(any_store: BaseStore, flt: dict, expected: set[str]) -> None:  # type: ignore[type-arg]
    _fill(any_store)
    assert {i.key for i in any_store.search(("docs",), filter=flt, limit=50)} == expected


def test_limit_and_offset_page_through_the_results(any_store: BaseStore) -> None:
    _fill(any_store)
    pages = [any_store.search(("docs",), limit=2, offset=o) for o in (0, 2, 4)]
    assert [len(p) for p in pages] == [2, 2, 0]
    keys = [i.key for p in pages for i in p]
    assert sorted(keys) == ["m0", "m1", "r1", "r2"]  # disjoint pages covering everything
    assert len(any_store.search(("docs",), filter={"type": "minutes"}, limit=1, offset=1)) == 1


def test_a_query_ranks_the_relevant_item_first(any_store: BaseStore) -> None:
    _fill(any_store)
    hits = any_store.search((), query="where does the user like to sit on a plane?", limit=3)
    assert hits[0].key == "prefs"
    assert hits[0].score is not None
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)  # type: ignore[misc]
    filtered = any_store.search(("docs",), query="meeting notes", filter={"type": "minutes"}, limit=5)
    assert {h.key for h in filtered} == {"m1", "m0"}


def test_list_namespaces(any_store: BaseStore) -> None:
    _fill(any_store)
    assert any_store.list_namespaces() == [
        ("docs", "a"),
        ("docs", "b"),
        ("docs", "b", "old"),
        ("users", "u1"),
    ]
    assert any_store.list_namespaces(prefix=("docs",)) == [("docs", "a"), ("docs", "b"), ("docs", "b", "old")]
    assert any_store.list_namespaces(prefix=("docs", "*", "old")) == [("docs", "b", "old")]
    assert any_store.list_namespaces(suffix=("b",)) == [("docs", "b")]
    assert any_store.list_namespaces(suffix=("*", "u1")) == [("users", "u1")]
    assert any_store.list_namespaces(max_depth=1) == [("docs",), ("users",)]
    assert any_store.list_namespaces(prefix=("docs",), max_depth=2) == [("docs", "a"), ("docs", "b")]
    assert any_store.list_namespaces(limit=2, offset=1) == [("docs", "b"), ("docs", "b", "old")]


def test_batch_returns_one_result_per_operation_in_order(any_store: BaseStore) -> None:
    puts = any_store.batch(
        [PutOp(("ns",), "k1", {"text": "one"}), PutOp(("ns", "sub"), "k2", {"text": "two"})]
    )
    assert puts == [None, None]
    results = any_store.batch(
        [
            GetOp(("ns",), "nope"),
            ListNamespacesOp(),
            SearchOp(("ns",), filter={"text": "two"}),
            GetOp(("ns",), "k1"),
        ]
    )
    assert results[0] is None
    assert results[1] == [("ns",), ("ns", "sub")]
    assert [i.key for i in results[2]] == ["k2"]  # type: ignore[union-attr]
    assert results[3].value == {"text": "one"}  # type: ignore[union-attr]


def test_invalid_namespaces_are_refused(any_store: BaseStore) -> None:
    for namespace in [(), ("langgraph", "x"), ("a.b",), ("",)]:
        with pytest.raises(InvalidNamespaceError):
            any_store.put(namespace, "k", {"v": 1})
    if not any_store.supports_ttl:  # InMemoryStore; MemlaneStore's TTLs: test_memlane_store.py
        with pytest.raises(NotImplementedError):
            any_store.put(("ns",), "k", {"v": 1}, ttl=5)


def test_async_forms(any_store: BaseStore) -> None:
    async def main() -> None:
        await asyncio.gather(
            *(any_store.aput(("a", f"u{i % 3}"), f"k{i}", {"text": f"note {i}"}) for i in range(30))
        )
        item = await any_store.aget(("a", "u1"), "k1")
        assert item is not None and item.value == {"text": "note 1"}
        assert len(await any_store.asearch(("a",), limit=100)) == 30
        assert len(await any_store.asearch(("a", "u0"), query="note 3", limit=100)) == 10
        assert await any_store.alist_namespaces() == [("a", "u0"), ("a", "u1"), ("a", "u2")]
        await any_store.adelete(("a", "u1"), "k1")
        assert await any_store.aget(("a", "u1"), "k1") is None

    asyncio.run(main())
