"""Contract of metadata conditions in SQL (``EpisodeFilter.metadata``, ``Store.metadata_values``,
``Store.set_metadata``): the same rows on every backend, every path and value a bound parameter.

Runs against every backend through the parametrised ``store`` fixture (``tests/backends.py``).
"""

from __future__ import annotations

from typing import Any

import pytest

from memlane import EpisodicMemory, ValidationError
from memlane.stores.base import EpisodeFilter, MetadataCondition, Store

ROWS: list[dict[str, Any]] = [
    {"doc": {"kind": "report", "score": 5, "lang": "en", "public": True, "user": {"access-level": "admin"}}},
    {
        "doc": {
            "kind": "report",
            "score": 2.5,
            "lang": "fr",
            "public": False,
            "user": {"access-level": "guest"},
        }
    },
    {"doc": {"kind": "minutes", "score": 4, "tags": ["x", "y"], "note": None}},
    {"doc": {"kind": "5", "score": "high"}},  # a string that looks like a number, a number as a string
    {"other": 1},
]


def _fill(memory: EpisodicMemory) -> list[str]:
    return [memory.remember_episode("note", f"row {i}", metadata=meta).id for i, meta in enumerate(ROWS)]


def _rows(store: Store, ids: list[str], *conditions: MetadataCondition) -> set[int]:
    found = store.list_recent(EpisodeFilter(metadata=conditions), limit=100)
    return {ids.index(ep.id) for ep in found}


def _c(path: str, op: str, value: Any) -> MetadataCondition:
    return MetadataCondition(tuple(path.split(".")), op, value)


CASES = [
    (_c("doc.kind", "eq", "report"), {0, 1}),
    (_c("doc.kind", "eq", "5"), {3}),  # a string is not a number
    (_c("doc.kind", "ne", "report"), {2, 3, 4}),  # missing paths are "not equal"
    (_c("doc.score", "eq", 5), {0}),
    (_c("doc.score", "eq", 5.0), {0}),  # numbers compare as numbers
    (_c("doc.score", "gt", 3), {0, 2}),  # "high" is a string: no number comparison
    (_c("doc.score", "gte", 2.5), {0, 1, 2}),
    (_c("doc.score", "lt", 4), {1}),
    (_c("doc.score", "lte", 4), {1, 2}),
    (_c("doc.lang", "gt", "en"), {1}),  # strings in code-point order
    (_c("doc.public", "eq", True), {0}),
    (_c("doc.public", "eq", False), {1}),
    (_c("doc.public", "ne", True), {1, 2, 3, 4}),
    (_c("doc.score", "eq", True), set()),  # booleans match only booleans
    (_c("doc.note", "eq", None), {0, 1, 2, 3, 4}),  # null or missing
    (_c("doc.note", "ne", None), set()),
    (_c("doc.user.access-level", "eq", "admin"), {0}),  # nested keys, hyphens
    (_c("doc.kind.deeper", "eq", "x"), set()),  # a path through a string
]


@pytest.mark.parametrize(
    ("condition", "expected"), CASES, ids=[f"{c.path}-{c.op}-{c.value}" for c, _ in CASES]
)
def test_a_metadata_condition_selects_the_same_rows_on_every_backend(
    memory: EpisodicMemory, store: Store, condition: MetadataCondition, expected: set[int]
) -> None:
    ids = _fill(memory)
    assert _rows(store, ids, condition) == expected
    assert store.count(EpisodeFilter(metadata=(condition,))) == len(expected)


def test_conditions_combine_with_and_and_with_the_other_fields(memory: EpisodicMemory, store: Store) -> None:
    ids = _fill(memory)
    assert _rows(store, ids, _c("doc.kind", "eq", "report"), _c("doc.score", "gt", 3)) == {0}
    found = store.list_recent(
        EpisodeFilter(tenant_id="nobody", metadata=(_c("doc.kind", "eq", "report"),)), 10
    )
    assert found == []


def test_hostile_strings_are_values_never_sql(memory: EpisodicMemory, store: Store) -> None:
    ids = _fill(memory)
    for text in ("' OR 1=1 --", "x') OR ('1'='1", "$.doc", "%", "_", "*"):
        assert _rows(store, ids, _c("doc.kind", "eq", text)) == set()
        assert _rows(store, ids, MetadataCondition(("doc", text), "eq", "report")) == set()
    assert _rows(store, ids, _c("doc.kind", "eq", "report")) == {0, 1}  # nothing changed


BAD_CONDITIONS = [
    ((), "eq", 1),
    (('a"b',), "eq", 1),
    (("a\\b",), "eq", 1),
    (("a\n",), "eq", 1),
    (("a",), "like", 1),
    (("a",), "gt", None),
    (("a",), "lt", True),
    (("a",), "eq", [1]),
    (("a",), "eq", float("nan")),
]


@pytest.mark.parametrize("arguments", BAD_CONDITIONS)
def test_a_bad_condition_is_a_validation_error(arguments: tuple[Any, ...]) -> None:
    with pytest.raises(ValidationError):
        MetadataCondition(*arguments)


def test_metadata_values_lists_each_distinct_value_once(memory: EpisodicMemory, store: Store) -> None:
    _fill(memory)
    memory.remember_episode("note", "again", metadata={"doc": {"kind": "report", "tags": ["x", "y"]}})
    kinds = store.metadata_values(EpisodeFilter(), ("doc", "kind"), limit=100)
    assert sorted(kinds) == ["5", "minutes", "report"]
    assert store.metadata_values(EpisodeFilter(), ("doc", "tags"), limit=100) == [["x", "y"]]
    assert store.metadata_values(EpisodeFilter(), ("doc", "note"), limit=100) == [None]
    reports = EpisodeFilter(metadata=(_c("doc.kind", "eq", "report"),))
    assert sorted(store.metadata_values(reports, ("doc", "lang"), limit=100)) == ["en", "fr"]
    assert len(store.metadata_values(EpisodeFilter(), ("doc", "kind"), limit=1)) == 1
    assert store.metadata_values(EpisodeFilter(), ("missing",), limit=10) == []
    with pytest.raises(ValidationError):
        store.metadata_values(EpisodeFilter(), ("doc",), limit=0)


def test_set_metadata_changes_only_that_value(memory: EpisodicMemory, store: Store) -> None:
    ids = _fill(memory)
    assert store.set_metadata(ids[:2], ("doc", "score"), 9) == 2
    assert store.set_metadata([ids[4], "0" * 32], ("doc", "score"), 9) == 0  # no "doc" object; unknown id
    assert store.set_metadata(ids[2:3], ("doc", "expires"), {"at": 1.5}) == 1
    assert _rows(store, ids, _c("doc.score", "eq", 9)) == {0, 1}
    first = store.get(ids[0])
    assert first is not None and first.metadata["doc"]["kind"] == "report" and first.content == "row 0"
    third = store.get(ids[2])
    assert third is not None and third.metadata["doc"]["expires"] == {"at": 1.5}
    assert store.get(ids[4]) is not None and store.get(ids[4]).metadata == {"other": 1}  # type: ignore[union-attr]
    for path, value in ((("caption",), "x"), ((), 1), (("doc",), float("inf")), (("doc",), object())):
        with pytest.raises(ValidationError):
            store.set_metadata(ids, path, value)


def test_ranked_candidates_respect_a_metadata_condition_on_every_backend(
    memory: EpisodicMemory, store: Store
) -> None:
    """The keyword and vector candidates of a ranked recall pass the metadata condition too: on
    SQLite the in-memory keyword postings and vector index cannot read metadata, so the store
    hands them the rows that pass it (``SQLiteStore._allowed``)."""
    from memlane.analysis import index_terms
    from memlane.embeddings.fake import HashingEmbedder

    ids = _fill(memory)
    memory.recall_episodes("row")  # a ranked recall first, so the in-memory indexes are built
    flt = EpisodeFilter(tenant_id="t1", metadata=(_c("doc.kind", "eq", "report"),))
    keyword = store.keyword_candidates(flt, index_terms("row")[0], 10)
    found = store.fetch([int(k) for k in keyword.keys])
    assert {ids.index(ep.id) for ep in found.values()} == {0, 1}
    vector = store.vector_candidates(flt, HashingEmbedder().embed(["row"])[0], 10)
    found = store.fetch([int(k) for k in vector.keys])
    assert {ids.index(ep.id) for ep in found.values()} == {0, 1}
