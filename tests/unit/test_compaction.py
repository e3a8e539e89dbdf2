"""The pure parts of compaction: representative order, leader clustering, merge rules."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from memlane.lifecycle.compaction import cluster, merge_episodes, representative_key
from memlane.models import Episode

T = datetime(2025, 1, 1, tzinfo=UTC)


def _ep(eid: str, importance: float | None = None, count: int = 0, days: int = 0, **kw: object) -> Episode:
    kw.setdefault("tags", ())
    return Episode(
        id=eid,
        tenant_id="t",
        session_id="s",
        event_type="e",
        content=eid,
        importance=importance,
        created_at=T + timedelta(days=days),
        retrieve_count=count,
        **kw,  # type: ignore[arg-type]
    )


def test_representative_order() -> None:
    eps = [
        _ep("unrated"),
        _ep("low", 3),
        _ep("high-old", 8),
        _ep("high-used", 8, count=4),
        _ep("high-new", 8, days=2),
    ]
    assert [e.id for e in sorted(eps, key=representative_key)] == [
        "high-used",
        "high-new",
        "high-old",
        "low",
        "unrated",
    ]


def test_cluster_measures_against_the_leader_and_respects_pins() -> None:
    v = np.array([[1.0, 0.0], [0.99, 0.141], [0.96, 0.28], [1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    clusters = cluster(v, 0.97, pinned=[False, False, False, True, False])
    assert [rows for rows, _ in clusters] == [[0, 1]]  # row 2 too far from leader 0, row 3 pinned
    assert 0.97 < clusters[0][1] <= 1.0
    assert cluster(v[:1], 0.5) == []


@settings(max_examples=50, deadline=None)
@given(st.integers(2, 30), st.floats(0.5, 0.99), st.integers(0, 2**31 - 1))
def test_cluster_partitions_and_never_absorbs_pinned(n: int, sim: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    v = rng.normal(size=(n, 4)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    pinned = rng.random(n) < 0.3
    seen: set[int] = set()
    for rows, min_cos in cluster(v, sim, pinned.tolist()):
        assert len(rows) >= 2 and not seen & set(rows)
        seen |= set(rows)
        assert not pinned[rows[1:]].any()
        assert all(float(v[rows[0]] @ v[r]) > sim for r in rows[1:])
        assert min_cos > sim


def test_merge_rules() -> None:
    a = _ep("a", 5, count=2, days=1, tags=("x",), valid_from=T - timedelta(days=9), metadata={"k": 1})
    b = _ep("b", 9, count=1, days=0, tags=("y", "x"), last_retrieved_at=T + timedelta(days=3))
    c = _ep("c", None, days=4, valid_until=T + timedelta(days=30))
    merged = merge_episodes([b, a, c], new_id="m", now=T + timedelta(days=5), min_cosine=0.97)
    assert (merged.id, merged.content, merged.importance) == ("m", "b", 9)
    assert merged.tags == ("y", "x")
    assert merged.valid_from == T - timedelta(days=9) and merged.valid_until is None
    assert merged.created_at == T + timedelta(days=4) and merged.recorded_at == T + timedelta(days=5)
    assert (merged.retrieve_count, merged.last_retrieved_at) == (3, T + timedelta(days=3))
    assert merged.metadata["merged_from"] == ["b", "a", "c"]
