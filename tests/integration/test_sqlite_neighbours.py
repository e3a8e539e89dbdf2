"""The SQLite store's two neighbour plans (index range scan, per-key probes) give the same answer."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from memlane import EpisodeInput, EpisodicMemory
from memlane.embeddings.fake import HashingEmbedder
from memlane.stores.sqlite import SQLiteStore
from memlane.stores.sqlite import neighbours as plans


def _answer(store: SQLiteStore, keys: list[int]) -> list[tuple[int, str, list[int]]]:
    found = plans.stored_neighbours(store._conn(), keys, 2)
    return [
        (int(k), s, [int(a) for a in adj])
        for k, s, adj in zip(found.keys, found.session_ids, found.adjacent, strict=True)
    ]


def test_range_plan_and_probe_plan_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = SQLiteStore(tmp_path / "n.db")
    rng = random.Random(3)
    memories = {
        s: EpisodicMemory(store, HashingEmbedder(), tenant_id="t", session_id=s, owns_store=False)
        for s in ("a", "b", "c")
    }
    for i in range(600):  # three sessions interleaved, so a session's keys are not contiguous
        memories[rng.choice("abc")].remember_episodes([EpisodeInput("turn", f"turn {i}")])
    all_keys = [r[0] for r in store._conn().execute("SELECT seq FROM episodes ORDER BY seq")]
    for sample in (all_keys[:3], rng.sample(all_keys, 40), rng.sample(all_keys, 300), all_keys):
        dense = _answer(store, sample)
        monkeypatch.setattr(plans, "RANGE_ROWS_PER_KEY", 0)
        monkeypatch.setattr(plans, "RANGE_ROWS_EXTRA", 0)
        sparse = _answer(store, sample)
        monkeypatch.undo()
        assert dense == sparse
        assert len(dense) == len(set(sample))
    # The answer itself: the two rows on each side in the same session, -1 past its ends.
    by_session = [r for r in _answer(store, all_keys) if r[1] == "a"]
    a_keys = [k for k, _, _ in by_session]
    assert by_session[0][2] == [-1, -1, a_keys[1], a_keys[2]]
    assert by_session[5][2] == [a_keys[3], a_keys[4], a_keys[6], a_keys[7]]
    assert by_session[-1][2] == [a_keys[-3], a_keys[-2], -1, -1]
    store.close()
