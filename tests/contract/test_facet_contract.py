"""Contract of ``Store.facet_values``: the distinct values of a facet path among the active episodes.

Read from an index (schema migration 13) on every backend, it must equal the plain scan it stands
for, ``metadata_values`` over the never-retired, unarchived rows, through inserts, supersession,
archiving, deletes and metadata updates, for one tenant and for every tenant.

Runs against every backend through the parametrised ``store`` fixture (``tests/backends.py``).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memlane import EpisodeInput, EpisodicMemory, ValidationError
from memlane.stores.base import FACET_PATHS, EpisodeFilter, Store
from tests.conftest import T0, MemoryFactory

PATH = FACET_PATHS[0]
NEVER_RETIRED = datetime(9999, 1, 1, tzinfo=UTC)


def _meta(value: Any) -> dict[str, Any]:
    return {PATH[0]: {PATH[1]: value, "key": "k"}}


def _scan(store: Store, tenant_id: str | None, event_type: str) -> list[Any]:
    """What facet_values stands for, by the plain ``SELECT DISTINCT`` over every row."""
    flt = EpisodeFilter(
        tenant_id=tenant_id, event_type=event_type, exclude_archived=True, current_at=NEVER_RETIRED
    )
    return store.metadata_values(flt, PATH, 2**31 - 1)


def _key(value: Any) -> str:
    return repr(value)


def _same(store: Store, tenant_id: str | None, event_type: str) -> list[Any]:
    found = store.facet_values(tenant_id, event_type, PATH)
    assert sorted(found, key=_key) == sorted(_scan(store, tenant_id, event_type), key=_key)
    assert len({_key(v) for v in found}) == len(found)  # each value once
    return sorted(found, key=_key)


def test_facet_values_are_the_active_rows_values(store: Store, make_memory: MemoryFactory) -> None:
    one, two = make_memory(tenant_id="t1"), make_memory(tenant_id="t2", session_id="s9")
    namespaces = [["org", f"o{i % 3}", f"u{i}"] for i in range(12)]
    for i, ns in enumerate(namespaces):
        (one if i % 2 else two).remember_episode("item", f"item {i}", metadata=_meta(ns))
    one.remember_episode("item", "again", metadata=_meta(namespaces[1]))  # a value twice
    one.remember_episode("item", "no facet", metadata={"other": 1})
    one.remember_episode("item", "facet's parent only", metadata={PATH[0]: {"key": "k"}})
    one.remember_episode("note", "another event type", metadata=_meta(["elsewhere"]))
    one.remember_episode("item", "odd values", metadata=_meta(["é", "名前", 'q"uote', "a\\b"]))
    one.remember_episode("item", "a string", metadata=_meta("plain"))
    one.remember_episode("item", "json null", metadata=_meta(None))
    assert len(_same(store, "t1", "item")) == 9
    assert _same(store, "t2", "item") == sorted(namespaces[0::2], key=_key)
    assert len(_same(store, None, "item")) == 15
    assert _same(store, None, "note") == [["elsewhere"]]
    assert store.facet_values("nobody", "item", PATH) == []
    assert store.facet_values(None, "nothing", PATH) == []


def test_facet_values_follow_retirement_archiving_and_deletes(
    store: Store, memory: EpisodicMemory, clock: Any
) -> None:
    old = memory.remember_episode("item", "first", metadata=_meta(["a"]))
    clock.advance(timedelta(seconds=1))
    memory.supersede(old.id, "item", "second", metadata=_meta(["b"]))
    assert _same(store, "t1", "item") == [["b"]]  # the retired version's value is gone
    kept = memory.remember_episode("item", "third", metadata=_meta(["c"]))
    store.archive([kept.id], T0 + timedelta(days=1))
    assert _same(store, "t1", "item") == [["b"]]
    gone = memory.remember_episode("item", "fourth", metadata=_meta(["d"]))
    assert _same(store, "t1", "item") == [["b"], ["d"]]
    assert memory.delete_episode(gone.id) is True
    assert _same(store, "t1", "item") == [["b"]]


def test_facet_values_follow_metadata_updates(store: Store, memory: EpisodicMemory) -> None:
    first = memory.remember_episode("item", "first", metadata=_meta(["a"]))
    memory.remember_episode("item", "second", metadata=_meta(["a"]))
    assert store.set_metadata([first.id], PATH, ["z"]) == 1
    assert _same(store, "t1", "item") == [["a"], ["z"]]
    assert store.set_metadata([first.id], (PATH[0], "key"), "other") == 1  # not the facet
    assert _same(store, "t1", "item") == [["a"], ["z"]]


def test_many_values_and_tenants(store: Store, make_memory: MemoryFactory) -> None:
    for tenant in range(6):
        memory = make_memory(tenant_id=f"tenant-{tenant}")
        memory.remember_episodes(
            [EpisodeInput("item", f"row {i}", metadata=_meta(["ns", str(i % 25)])) for i in range(60)]
        )
    assert len(_same(store, "tenant-3", "item")) == 25
    assert len(_same(store, None, "item")) == 25


@pytest.mark.parametrize("path", [("langgraph",), ("langgraph", "key"), ("doc", "kind"), "langgraph"])
def test_another_path_is_a_validation_error(store: Store, path: Any) -> None:
    with pytest.raises(ValidationError):
        store.facet_values(None, "item", path)
