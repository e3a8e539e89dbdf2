"""Each array fast path of the recall pipeline equals the plain path it replaced, hit for hit.

The plain paths are written out here as the oracle: the conversation context over session-id
strings and tag tuples (``groups_by_gap``, ``named_tag``, ``entity_signal`` over every candidate),
the dense/keyword merge through ``np.isin``, a fresh vector filter mask for the kept one, and each
breakdown read candidate by candidate from :class:`~memlane.recall.ranking.Scores` (``decided_by``
of a hit and the one below it).
"""

from __future__ import annotations

import random
import sqlite3
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlane import EpisodeInput, EpisodicMemory, FrozenClock, SQLiteStore
from memlane.config.profile import DEFAULT_PROFILE, PRESETS, Speakers
from memlane.embeddings.fake import HashingEmbedder
from memlane.models import SIGNALS, AppliedBoost, Contribution
from memlane.recall.candidates import merge_candidates
from memlane.recall.pipeline import conversation_context
from memlane.recall.ranking import (
    CandidateSignals,
    RankOptions,
    Relevance,
    Scores,
    importance_signal,
    rank,
    recency_of,
    relevance_of,
    scores_of,
    seed_relevance,
)
from memlane.recall.relevance import agent_signal, entity_signal, groups_by_code, groups_by_gap, named_tag
from memlane.stores.base import EpisodeFilter, KeywordCandidates, VectorCandidates, unique_keys
from memlane.stores.keyword_postings import best_first
from memlane.stores.sqlite.ann import AttachedLists, IvfIndex
from memlane.stores.sqlite.vector_index import IndexRows, RowFilter, VectorIndex
from tests.conftest import T0

TAGS = [
    (),
    ("alice",),
    ("bob",),
    ("alice", "travel"),
    ("new york",),
    ("york",),
    ("Bob", "work"),
    ("assistant",),
]
QUERIES = [
    "what did alice say",
    "bob at work",
    "trip to new york",
    "york",
    "alice and bob",
    "nothing named",
    "what did you tell alice",
]
SPEAKERS = Speakers()


def _partition(groups: np.ndarray) -> list[list[int]]:
    """Which candidates share a group (the numbers themselves do not matter)."""
    members: dict[int, list[int]] = {}
    for i, g in enumerate(groups.tolist()):
        members.setdefault(g, []).append(i)
    return sorted(members.values())


def _plain_context(store: SQLiteStore, query: str, keys: np.ndarray, created: np.ndarray, gap: float):
    """The context as computed before the coded path: per candidate a session string and a tag tuple."""
    n = len(keys)
    found = store.neighbours(EpisodeFilter(), [int(k) for k in keys], radius=2)
    where = {int(k): i for i, k in enumerate(keys.tolist())}
    adjacent = np.full((n, 4), -1, dtype=np.int64)
    sessions: list[object] = [None] * n
    tags: list[tuple[str, ...]] = [()] * n
    for row, key in enumerate(found.keys.tolist()):
        i = where.get(key)
        if i is None:
            continue
        adjacent[i] = [where.get(k, -1) if k >= 0 else -1 for k in found.adjacent[row].tolist()]
        sessions[i] = found.session_ids[row]
        tags[i] = found.tags[row]
    groups = groups_by_gap(sessions, keys, created, gap)
    return adjacent, groups, entity_signal(tags, named_tag(query, tags)), agent_signal(tags, query, SPEAKERS)


@pytest.mark.parametrize("keyword_index", [True, False])
def test_conversation_context_equals_the_string_path(tmp_path: Path, keyword_index: bool) -> None:
    rng = random.Random(5)
    store = SQLiteStore(tmp_path / "m.db", keyword_index=keyword_index)
    try:
        for tenant in ("t1", "t2"):  # one session name in two tenants: one session string
            for session in ("s1", "s2", "s3"):
                memory = EpisodicMemory(
                    store, HashingEmbedder(), clock=FrozenClock(T0), tenant_id=tenant, session_id=session
                )
                memory.remember_episodes(
                    EpisodeInput(
                        "message",
                        f"turn {k} about {rng.choice(['alice', 'bob', 'york', 'rain'])}",
                        tags=rng.choice(TAGS),
                        created_at=T0 - timedelta(minutes=rng.choice([1, 5, 90, 600]) * k),
                    )
                    for k in range(60)
                )
        with sqlite3.connect(tmp_path / "m.db") as conn:
            all_keys = np.array([r[0] for r in conn.execute("SELECT seq FROM episodes")], dtype=np.int64)
        assert len(all_keys) == 360
        for trial in range(40):
            picked = np.array(rng.sample(all_keys.tolist(), rng.randint(1, 200)), dtype=np.int64)
            keys = np.append(picked, [10**9]) if trial % 5 == 0 else picked  # an unknown key
            created = np.array([rng.choice([0.0, 60.0, 5000.0]) * k for k in range(len(keys))])
            query = QUERIES[trial % len(QUERIES)]
            for gap in (120.0, 1e9):
                fast = conversation_context(store, EpisodeFilter(), query, keys, created, gap, SPEAKERS)
                adjacent, groups, entity, agent = _plain_context(store, query, keys, created, gap)
                assert fast.adjacent is not None and fast.groups is not None and fast.entity is not None
                assert fast.agent is not None and fast.agent.tolist() == agent.tolist()
                assert fast.adjacent.tolist() == adjacent.tolist()
                assert _partition(fast.groups) == _partition(groups)
                assert fast.entity.tolist() == entity.tolist()
    finally:
        store.close()


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(["a", "b", "None", None, "c"]), min_size=0, max_size=40),
    st.randoms(use_true_random=False),
)
def test_groups_by_code_partitions_as_groups_by_gap(sessions: list[str | None], rnd: random.Random) -> None:
    n = len(sessions)
    order = np.array(rnd.sample(range(1000), n), dtype=np.int64)
    created = np.array([rnd.choice([0.0, 10.0, 500.0, 5000.0]) for _ in range(n)])
    names = sorted({s for s in sessions if s is not None})
    codes = np.array([-1 if s is None else names.index(s) for s in sessions], dtype=np.int64)
    assert _partition(groups_by_code(codes, order, created, 300.0)) == _partition(
        groups_by_gap(sessions, order, created, 300.0)
    )


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 60), unique=True, max_size=30),
    st.lists(st.integers(0, 60), unique=True, max_size=30),
)
def test_merge_equals_the_isin_merge(dense_keys: list[int], keyword_keys: list[int]) -> None:
    rng = np.random.default_rng(len(dense_keys) * 100 + len(keyword_keys))
    dense = VectorCandidates(
        keys=np.array(dense_keys, dtype=np.int64),
        cosine=rng.random(len(dense_keys)).astype(np.float32),
        created_at_seconds=rng.random(len(dense_keys)),
        importance=rng.random(len(dense_keys)),
    )
    keyword = KeywordCandidates(
        keys=np.array(keyword_keys, dtype=np.int64),
        score=rng.random(len(keyword_keys)),
        created_at_seconds=rng.random(len(keyword_keys)),
        importance=rng.random(len(keyword_keys)),
    )
    merged = merge_candidates(dense, keyword)
    in_dense = np.isin(keyword.keys, dense.keys)
    keys = np.concatenate([dense.keys, keyword.keys[~in_dense]])
    scores = np.full(len(keys), np.nan)
    for key, score in zip(keyword.keys.tolist(), keyword.score.tolist(), strict=True):
        scores[keys.tolist().index(key)] = score
    assert merged.keys.tolist() == keys.tolist()
    assert merged.keyword is not None and np.array_equal(merged.keyword, scores, equal_nan=True)
    assert merged.cosine is not None and np.array_equal(
        merged.cosine[: len(dense_keys)], dense.cosine.astype(np.float64)
    )
    assert np.isnan(merged.cosine[len(dense_keys) :]).all()
    want_created = np.concatenate([dense.created_at_seconds, keyword.created_at_seconds[~in_dense]])
    assert merged.created_at_seconds.tolist() == want_created.tolist()


def _signals(rng: np.random.Generator, n: int) -> CandidateSignals:
    """Coarse values, so that scores and relevance tie often ("order" and equal leads)."""
    return CandidateSignals(
        created_at_seconds=T0.timestamp() - rng.choice([0.0, 86400.0, 864000.0], n),
        importance=rng.choice([np.nan, 2.0, 9.0], n),
        cosine=rng.choice([np.nan, 0.2, 0.5, 0.8], n),
        keyword=rng.choice([np.nan, 1.0, 3.0], n),
        in_window=rng.random(n) < 0.2,
        entity=(rng.random(n) < 0.1).astype(np.float64),
        graph=np.where(rng.random(n) < 0.3, rng.choice([0.0, 0.4, 1.0], n), 0.0)
        if rng.random() < 0.5
        else None,
        agent=(rng.random(n) < 0.3).astype(np.float64) if rng.random() < 0.5 else None,
    )


def _weights(scores: Scores, i: int) -> np.ndarray:
    """Candidate ``i``'s weight of each signal, as the ranking's docstring defines it."""
    w = np.asarray(scores.weights, dtype=np.float64)
    if scores.gate is not None:
        w = w * np.array([1.0, scores.gate[i], scores.gate[i]])
    return w


GRAPH_PROFILE = replace(DEFAULT_PROFILE, boosts=replace(DEFAULT_PROFILE.boosts, graph=0.3))
"""The default profile with the graph boost on, so that every boost can show in a breakdown."""


def _present(values: np.ndarray | None, raw: np.ndarray | None, i: int) -> float | None:
    """Candidate ``i``'s calibrated signal, ``None`` without one or where its raw signal is NaN."""
    if values is None or raw is None or np.isnan(raw[i]):
        return None
    return float(values[i])


def _applied(relevance: Relevance, i: int) -> tuple[AppliedBoost, ...]:
    """Candidate ``i``'s boosts as the ranking's docstring defines them (graph strength ``b * g_i``)."""
    boosts = GRAPH_PROFILE.boosts
    graph = 0.0 if relevance.graph is None else float(np.clip(relevance.graph[i], 0.0, 1.0))
    out = []
    if relevance.entity[i] > 0 and boosts.entity > 0:
        out.append(AppliedBoost("entity", boosts.entity))
    if relevance.in_window[i] > 0 and boosts.time_window > 0:
        out.append(AppliedBoost("time_window", boosts.time_window))
    if graph > 0 and boosts.graph * graph > 0:
        out.append(AppliedBoost("graph", boosts.graph * graph))
    return tuple(out)


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_breakdowns_equal_the_per_hit_reading(preset: str) -> None:
    rng = np.random.default_rng(9)
    weights = PRESETS[preset]
    for trial in range(30):
        n = int(rng.integers(1, 40))
        signals = _signals(rng, n)
        limit = int(rng.integers(1, 12))
        options = RankOptions(now_seconds=T0.timestamp(), limit=limit, weights=weights)
        hits = rank(signals, GRAPH_PROFILE, options)
        below = rank(
            signals,
            GRAPH_PROFILE,
            RankOptions(now_seconds=T0.timestamp(), limit=limit + 1, weights=weights),
        )
        order = [h.index for h in below]
        assert [h.index for h in hits] == order[:limit]
        mode = "hybrid"
        if weights.formula == "seed":
            relevance, mode = seed_relevance(signals, GRAPH_PROFILE, mode)
        else:
            relevance = relevance_of(signals, GRAPH_PROFILE, mode)
        scores = scores_of(
            relevance.relevance,
            recency_of(signals, GRAPH_PROFILE, options.now_seconds),
            importance_signal(signals.importance),
            weights,
            GRAPH_PROFILE.tie_band,
        )

        for rank_at, hit in enumerate(hits):
            i, b = hit.index, hit.breakdown
            j = order[rank_at + 1] if rank_at + 1 < len(order) else None
            w = _weights(scores, i)
            p = scores.values[:, i] * w
            assert b.contributions == tuple(
                Contribution(name, float(scores.values[k, i]), float(w[k]), float(p[k]))
                for k, name in enumerate(SIGNALS)
            ), (trial, rank_at)
            assert b.score == float(scores.total[i])
            assert (b.relevance, b.own_relevance, b.base_relevance) == (
                float(relevance.relevance[i]),
                float(relevance.own[i]),
                float(relevance.base[i]),
            )
            assert b.dense == _present(relevance.dense, signals.cosine, i)
            assert b.keyword == _present(relevance.keyword, signals.keyword, i)
            assert b.in_window == (None if signals.in_window is None else bool(signals.in_window[i]))
            assert b.boosts == _applied(relevance, i), (trial, rank_at)
            agent_on = relevance.agent is not None and relevance.agent[i] > 0
            assert b.agent_discount == (GRAPH_PROFILE.speakers.agent_discount if agent_on else None)
            assert (b.retrieval, b.fusion, b.tie_band) == (mode, relevance.fusion, scores.tie_band)
            assert (b.recency, b.importance) == (float(scores.values[1, i]), float(scores.values[2, i]))
            if j is None:
                assert (b.decided_by, b.lead) == ("relevance", None)
                continue
            assert b.lead == float(scores.total[i] - scores.total[j])
            if scores.total[i] == scores.total[j]:
                assert b.decided_by == "order"
            else:
                assert b.decided_by == SIGNALS[int(np.argmax(p - scores.values[:, j] * _weights(scores, j)))]


def test_the_kept_vector_mask_is_the_fresh_mask() -> None:
    """A filter's kept mask (hybrid's dense and keyword stages share it) equals a fresh one,
    follows appends of rows that pass or fail it, is read-only, and is kept for allowed keys only
    while they are the very same read-only array (a writeable or another array is read afresh)."""
    rng = np.random.default_rng(4)
    index = VectorIndex(8)

    def add(start: int, k: int) -> None:
        x = rng.normal(size=(k, 8)).astype(np.float32)
        seqs = list(range(start, start + k))
        tenants = [str(t) for t in rng.choice(["t1", "t2"], k)]
        created = [int(c) for c in rng.integers(0, 1000, k)]
        index.append(IndexRows(seqs, tenants, ["s"] * k, ["note"] * k, created, [np.nan] * k, x))

    filters = [
        RowFilter(tenant_id="t1"),
        RowFilter(tenant_id="t2", created_after_us=500),
        RowFilter(),
        RowFilter(tenant_id="t3"),
    ]
    add(1, 50)
    for step in range(4):
        for flt in filters * 2:  # the second round reads the kept masks
            got = index.mask(flt)
            assert not got.flags.writeable
            assert got.tolist() == index._mask(flt).tolist()
        allowed = RowFilter(allowed_seqs=np.array([2, 5, 7], dtype=np.int64))
        assert np.flatnonzero(index.mask(allowed)).tolist() == [1, 4, 6]
        allowed.allowed_seqs[0] = 3  # writeable: never taken for the kept one
        assert np.flatnonzero(index.mask(allowed)).tolist() == [2, 4, 6]
        frozen = np.array([1, 9], dtype=np.int64)
        frozen.flags.writeable = False
        for seqs, want in (
            (frozen, [0, 8]),
            (frozen, [0, 8]),
            (np.array([1, 9], dtype=np.int64)[::-1], [0, 8]),
        ):
            for flt in (RowFilter(allowed_seqs=seqs), RowFilter(tenant_id="t1", allowed_seqs=seqs)):
                got = index.mask(flt)
                assert got.tolist() == index._mask(flt).tolist()
                assert set(np.flatnonzero(got).tolist()) <= set(want)
        add(len(index) + 1, 20 + step)  # new rows: every kept mask is stale
    index.clear()
    assert len(index.mask(filters[0])) == 0


def test_unique_keys_is_numpy_unique() -> None:
    """The sort-based distinct keys equal ``np.unique``: values, order and dtype (empty, one, repeats)."""
    rng = np.random.default_rng(12)
    for n in (0, 1, 2, 3, 17, 925, 4000):
        for high in (3, 200, 1 << 40):
            keys = rng.integers(-5, high, size=n)
            got, want = unique_keys(keys), np.unique(keys.astype(np.int64))
            assert got.dtype == np.int64
            assert got.tolist() == want.tolist(), (n, high)
    assert unique_keys(np.array([[3, 1], [3, 2]])).tolist() == [1, 2, 3]


@settings(max_examples=150, deadline=None)
@given(
    st.integers(1, 60),
    st.integers(0, 3000),
    st.sampled_from([1, 3, 50, 10**6]),
    st.randoms(use_true_random=False),
)
def test_the_sampled_cuts_are_the_full_sort(count: int, n: int, levels: int, rnd: random.Random) -> None:
    """The keyword top-k and the dense pool trim (a sampled cut above 32 x ``count`` rows, else a full
    partition) choose a full ``(-score, key)`` sort's first rows, in its order."""
    keys = np.array(rnd.sample(range(10 * n + 10), n), dtype=np.int64)
    scores = np.array([rnd.randrange(levels) / 7.0 - 0.5 for _ in range(n)], dtype=np.float64)  # ties
    full = sorted(range(n), key=lambda i: (-scores[i], int(keys[i])))[:count]
    assert best_first(keys, scores, count).tolist() == full
    cosine = scores.astype(np.float32)  # rounding keeps the order and the ties (levels 1/7 apart)
    found = VectorCandidates(keys, cosine, np.zeros(n), np.full(n, np.nan), exhaustive=True).top(count)
    assert found.keys.tolist() == keys[full].tolist()
    assert found.cosine.tolist() == cosine[full].tolist()
    assert found.exhaustive == (n <= count)


def _plain_probe(
    ivf: IvfIndex, query: np.ndarray, lists: AttachedLists, mask: np.ndarray, top_n: int, nprobe: int
):
    """The probe as written before the partial ranking: a walk over every list ranked by faiss."""
    import faiss

    ranker = faiss.IndexFlatIP(ivf.centroids.shape[1])
    ranker.add(ivf.centroids)
    order = ranker.search(np.ascontiguousarray(query[None, :], dtype=np.float32), ivf.nlist)[1][0]
    mean = max(1.0, len(lists.positions) / max(1, ivf.nlist))
    want = max(top_n, int(nprobe * mean))
    found, seen, examined, i, step = [], 0, 0, 0, nprobe
    while i < len(order) and seen < want:
        batch = order[i : i + step]
        i += len(batch)
        members = np.concatenate([lists.positions[lists.offsets[x] : lists.offsets[x + 1]] for x in batch])
        examined += len(members)
        members = members[mask[members]]
        found.append(members)
        seen += len(members)
        rate = max(seen / max(examined, 1), 1e-3)
        step = int(min(len(order), max(1, np.ceil(1.2 * (want - seen) / (rate * mean)))))
    return np.concatenate(found)


def test_the_partly_ranked_probe_walks_the_fully_ranked_lists() -> None:
    rng = np.random.default_rng(3)
    dims, n = 16, 20_000
    centres = rng.standard_normal((40, dims)).astype(np.float32)
    x = centres[rng.integers(0, 40, n)] + 0.3 * rng.standard_normal((n, dims)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    x[:50] = x[50:100]  # duplicate rows: centroids may tie
    ivf = IvfIndex.train(x[rng.choice(n, 4096, replace=False)], n, {})
    ivf.add(np.arange(1, n + 1, dtype=np.int64), x)
    lists, missing = ivf.attach(np.arange(1, n + 1, dtype=np.int64))
    assert ivf.nlist > 64 and len(missing) == 0
    queries = [*x[rng.integers(0, n, 30)], ivf.centroids[0], np.zeros(dims, dtype=np.float32)]
    for share in (1.0, 0.5, 0.05, 0.002):
        mask = rng.random(n) < share
        for k, query in enumerate(queries):
            top_n, nprobe = (10, 500)[k % 2], (1, 2, 8, 24)[k % 4]
            fast = ivf.probe(np.asarray(query, dtype=np.float32), lists, mask, top_n, nprobe)
            assert fast.tolist() == _plain_probe(ivf, query, lists, mask, top_n, nprobe).tolist()
