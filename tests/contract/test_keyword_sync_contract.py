"""Contract: the keyword index stays in step with the episodes on every write path.

SQLite fills its FTS5 index set-based in each insert transaction (schema migration 9) and keeps
it in step on delete/update by triggers; PostgreSQL indexes a column of the row. Either way a
keyword search must find exactly the live rows that hold a term, after batch inserts, a failed
batch, deletes, retention pruning, session-scoped removal, supersession and merges. On SQLite the
FTS5 ``integrity-check`` also compares the index with the table.

Runs against every backend through the parametrised ``store`` fixture (``tests/backends.py``).
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from memlane import DuplicateEpisodeError, EpisodeInput, EpisodicMemory, FrozenClock, SQLiteStore
from memlane.analysis import query_terms
from memlane.stores.base import EpisodeFilter, Store
from tests.conftest import T0

ALL = EpisodeFilter()
WORDS = ("amber", "basalt", "cobalt", "dolomite", "emerald", "feldspar", "garnet", "hematite")


def _found(store: Store, word: str) -> set[str]:
    """Ids of the episodes the keyword index finds for ``word`` (any tenant)."""
    found = store.keyword_candidates(ALL, query_terms(word), 100)
    return {ep.id for ep in store.fetch([int(k) for k in found.keys]).values()}


def _check_index(store: Store) -> None:
    if isinstance(store, SQLiteStore):  # compares the FTS5 index with the episodes table
        store.connection().execute(
            "INSERT INTO episodes_fts (episodes_fts, rank) VALUES ('integrity-check', 1)"
        )


def _batch(memory: EpisodicMemory, **extra: object) -> dict[str, str]:
    episodes = memory.remember_episodes(
        [EpisodeInput(event_type="note", content=f"a rock of {w}", tags=[w, "rock"], **extra) for w in WORDS]  # type: ignore[arg-type]
    )
    return {w: ep.id for w, ep in zip(WORDS, episodes, strict=True)}


def test_a_batch_insert_indexes_every_row_and_its_tags(memory: EpisodicMemory, store: Store) -> None:
    ids = _batch(memory)
    for word, eid in ids.items():
        assert _found(store, word) == {eid}
        assert [h.episode.id for h in memory.recall_episodes(None, tags=[word])] == [eid]
    assert len(memory.recall_episodes(None, tags=["rock"], limit=50)) == len(WORDS)
    _check_index(store)


def test_a_failed_batch_leaves_no_index_rows(memory: EpisodicMemory, store: Store) -> None:
    kept = memory.remember_episode("note", "a rock of amber", tags=["amber"])
    with pytest.raises(DuplicateEpisodeError):
        memory.remember_episodes(
            [
                EpisodeInput(event_type="note", content="a rock of basalt", tags=["basalt"]),
                EpisodeInput(event_type="note", content="a rock of cobalt", id=kept.id),
            ]
        )
    assert _found(store, "basalt") == set()
    assert memory.recall_episodes(None, tags=["basalt"]) == []
    assert _found(store, "amber") == {kept.id}
    later = memory.remember_episode("note", "basalt again", tags=["basalt"])  # keys after a rollback
    assert _found(store, "basalt") == {later.id}
    _check_index(store)


def test_deletes_and_pruning_remove_index_rows(
    memory: EpisodicMemory, store: Store, clock: FrozenClock
) -> None:
    ids = _batch(memory, created_at=T0 - timedelta(days=30))
    fresh = memory.remember_episode("note", "fresh garnet", tags=["garnet"])
    scoped = memory.remember_episode("note", "scoped hematite", session_scoped=True)
    assert memory.delete_episode(ids["amber"])
    assert _found(store, "amber") == set()
    assert store.delete_created_before(T0 - timedelta(days=1)) == len(WORDS) - 1
    assert _found(store, "basalt") == set()
    assert _found(store, "garnet") == {fresh.id}
    assert _found(store, "hematite") == {scoped.id}
    assert store.delete_session_scoped("t1", "s1") == 1
    assert _found(store, "hematite") == set()
    assert memory.recall_episodes(None, tags=["rock"]) == []
    _check_index(store)


def test_supersession_and_merge_keep_the_index_in_step(memory: EpisodicMemory, store: Store) -> None:
    old = memory.remember_episode("pref", "user prefers amber light")
    new = memory.remember_episode("pref", "user prefers cobalt light", supersedes=[old.id])
    assert _found(store, "amber") == {old.id}  # kept for history; recall filters it out
    assert _found(store, "cobalt") == {new.id}
    assert [h.episode.id for h in memory.recall_episodes("amber light", retrieval="keyword")] != [old.id]
    a = memory.remember_episode("note", "the garnet ring is in the drawer", importance=5)
    b = memory.remember_episode("note", "the garnet ring is in the drawer!", importance=6)
    report = memory.compact(similarity=0.9)
    merged = [g.merged.id for g in report.merges if {o.id for o in g.originals} == {a.id, b.id}]
    assert len(merged) == 1
    assert _found(store, "garnet") == {a.id, b.id, merged[0]}  # originals archived, not deleted
    hits = memory.recall_episodes("garnet ring", retrieval="keyword")
    assert [h.episode.id for h in hits] == merged
    _check_index(store)
