"""SQLite: snapshot-keyed refreshes and the position-keyed filter test answer as the plain path.

A refresh of the in-memory keyword postings or vector index reads nothing but ``PRAGMA data_version``
while the file is unchanged as its connection sees it (:func:`memlane.stores.sqlite.base.snapshot`);
every change (this connection's writes, another connection's commits, rows inside an open
transaction) must still reach the next recall, which must answer as the FTS5 path
(``keyword_index=False``) does. The keyword search tests a row against the vector index's mask by
position when both indexes hold the same rows; with rows that have no vector it falls back to a binary
search and SQL: both must give the rows, order and floats of the FTS5 path.
"""

from __future__ import annotations

import dataclasses
import random
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from memlane import EpisodeInput, EpisodicMemory, FrozenClock, SQLiteStore
from memlane.analysis import query_terms
from memlane.embeddings.fake import HashingEmbedder
from memlane.episode_input import new_episode_id
from memlane.stores.base import EpisodeFilter, Store
from memlane.stores.sqlite.base import SnapshotMemo, snapshot
from tests.conftest import T0

WORDS = [f"{a}{b}" for a in ("ka", "mo", "ti", "ve") for b in ("lak", "rel", "som", "dur")]
FILTERS = [
    EpisodeFilter(tenant_id="t"),
    EpisodeFilter(tenant_id="t", tags=("red",)),
    EpisodeFilter(tenant_id="t", event_type="note", exclude_archived=True),
]


def _memory(store: Store) -> EpisodicMemory:
    return EpisodicMemory(
        store, HashingEmbedder(), clock=FrozenClock(T0), tenant_id="t", session_id="s", owns_store=False
    )


def _inputs(rng: random.Random, count: int) -> list[EpisodeInput]:
    return [
        EpisodeInput(
            rng.choice(("message", "note")),
            " ".join(
                rng.choices(WORDS, weights=[1 / (k + 1) for k in range(len(WORDS))], k=rng.randint(2, 8))
            ),
            tags=("red",) if rng.random() < 0.3 else (),
            importance=rng.choice((None, 3.0, 8.0)),
        )
        for _ in range(count)
    ]


def _same(fast: SQLiteStore, plain: SQLiteStore) -> None:
    queries = [" ".join(WORDS[k : k + 3]) for k in range(0, len(WORDS), 3)]
    for flt in FILTERS:
        for query in queries:
            terms = list(query_terms(query))
            for top_n in (1, 7, 500):
                mine, theirs = (
                    fast.keyword_candidates(flt, terms, top_n),
                    plain.keyword_candidates(flt, terms, top_n),
                )
                assert mine.keys.tolist() == theirs.keys.tolist(), (flt, query, top_n)
                assert mine.score.tolist() == theirs.score.tolist(), (flt, query, top_n)
    a, b = _memory(fast), _memory(plain)
    for query in queries:
        for kwargs in ({"retrieval": "keyword"}, {}, {"tags": ("red",)}):
            got = [(h.episode.id, h.breakdown) for h in a.recall_episodes(query, limit=10, **kwargs)]
            assert got == [(h.episode.id, h.breakdown) for h in b.recall_episodes(query, limit=10, **kwargs)]


def test_every_change_reaches_the_next_recall(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    fast, plain, other = SQLiteStore(path), SQLiteStore(path, keyword_index=False), SQLiteStore(path)
    rng = random.Random(3)
    try:
        mine = _memory(fast).remember_episodes(_inputs(rng, 300))  # this connection's own writes
        _same(fast, plain)
        _memory(fast).remember_episodes(_inputs(rng, 40))
        _same(fast, plain)
        theirs = _memory(other).remember_episodes(_inputs(rng, 60))  # another connection commits
        _same(fast, plain)
        for episode in mine[::9] + theirs[::5]:
            other.delete(episode.id, None)
        other.archive([e.id for e in mine[1::13]], T0)
        _same(fast, plain)
        fast.archive([e.id for e in mine[2::7]], T0)
        _same(fast, plain)
    finally:
        for s in (fast, plain, other):
            s.close()


def test_rows_without_vectors_are_tested_in_sql_as_the_plain_path(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    fast, plain = SQLiteStore(path), SQLiteStore(path, keyword_index=False)
    rng = random.Random(5)
    try:
        stored = _memory(fast).remember_episodes(_inputs(rng, 200))
        bare = [dataclasses.replace(e, id=new_episode_id(), embedding_model=None) for e in stored[::3]]
        fast.insert(bare, None)  # keyword rows the vector index does not hold
        _same(fast, plain)
    finally:
        fast.close()
        plain.close()


def test_an_unchanged_file_is_not_read_again(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    try:
        memory = _memory(store)
        memory.remember_episodes(_inputs(random.Random(1), 50))
        memory.recall_episodes("kalak morel", limit=5)
        conn = store.connection()
        seen: list[str] = []
        conn.set_trace_callback(seen.append)
        flt = EpisodeFilter(tenant_id="t")
        store.keyword_candidates(flt, ["kalak"], 10)
        store.neighbours(flt, [1, 2, 3])
        conn.set_trace_callback(None)
        refreshes = [s for s in seen if "delete_generation" in s or "WHERE seq > ?" in s or "max(seq)" in s]
        assert refreshes == [] and any("data_version" in s for s in seen)
    finally:
        store.close()


def test_a_snapshot_moves_with_every_commit_and_is_none_inside_a_transaction(tmp_path: Path) -> None:
    store, other = SQLiteStore(tmp_path / "m.db"), SQLiteStore(tmp_path / "m.db")
    try:
        conn = store.connection()
        first = snapshot(conn)
        assert first is not None and snapshot(conn) == first
        _memory(other).remember_episode("note", "kalak")
        second = snapshot(conn)
        assert second is not None and second != first
        _memory(store).remember_episode("note", "morel")
        assert snapshot(conn) not in (first, second)
        conn.execute("BEGIN")
        try:
            assert snapshot(conn) is None
        finally:
            conn.execute("ROLLBACK")
    finally:
        store.close()
        other.close()


def test_a_memo_reads_once_per_snapshot(tmp_path: Path) -> None:
    store, other = SQLiteStore(tmp_path / "m.db"), SQLiteStore(tmp_path / "m.db")
    try:
        conn, memo = store.connection(), SnapshotMemo()
        reads: list[int] = []

        def count() -> int:
            reads.append(1)
            return int(conn.execute("SELECT count(*) FROM episodes").fetchone()[0])

        assert [memo.get(conn, "n", count) for _ in range(3)] == [0, 0, 0] and len(reads) == 1
        _memory(other).remember_episode("note", "kalak")  # another connection commits
        assert memo.get(conn, "n", count) == 1 and len(reads) == 2
        _memory(store).remember_episode("note", "morel")  # this connection writes
        assert memo.get(conn, "n", count) == 2 and len(reads) == 3
        conn.execute("BEGIN")
        try:
            assert memo.get(conn, "n", count) == 2 and memo.get(conn, "n", count) == 2 and len(reads) == 5
        finally:
            conn.execute("ROLLBACK")
    finally:
        store.close()
        other.close()


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    rows=st.integers(5, 160),
    bare_every=st.sampled_from([0, 2, 5]),
    tags=st.sampled_from([(), ("red",), ("red", "blue")]),
    event_type=st.sampled_from([None, "note"]),
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4, unique=True),
    top_n=st.integers(1, 60),
)
def test_filtered_keyword_candidates_equal_the_fts5_path_over_random_stores(
    seed: int,
    rows: int,
    bare_every: int,
    tags: tuple[str, ...],
    event_type: str | None,
    query: list[str],
    top_n: int,
) -> None:
    """Random stores, some rows without vectors (the mask then decides only part of the matches),
    tag and event type filters: the keyword candidates (rows, order, floats) are the FTS5 path's, both
    when the vector index's mask decides every match and when SQL decides the rest."""
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.db"
        fast, plain = SQLiteStore(path), SQLiteStore(path, keyword_index=False)
        try:
            inputs = _inputs(rng, rows)
            for i, item in enumerate(inputs):
                if rng.random() < 0.4:
                    inputs[i] = dataclasses.replace(item, tags=(*item.tags, "blue"))
            stored = _memory(fast).remember_episodes(inputs)
            if bare_every:
                bare = [dataclasses.replace(e, id=new_episode_id()) for e in stored[::bare_every]]
                fast.insert(bare, None)
            flt = EpisodeFilter(tenant_id="t", tags=tags, event_type=event_type)
            mine = fast.keyword_candidates(flt, query, top_n)
            theirs = plain.keyword_candidates(flt, query, top_n)
            assert mine.keys.tolist() == theirs.keys.tolist()
            assert mine.score.tolist() == theirs.score.tolist()
            assert mine.created_at_seconds.tolist() == theirs.created_at_seconds.tolist()
        finally:
            fast.close()
            plain.close()
