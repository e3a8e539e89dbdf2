"""Forgetting policies by importance (issue 7, item 3), on every backend.

Half-life bands (9-10 never, 7-8 30 days, 4-6 7 days, 1-3 1 day, unrated 7 days),
``forget()`` archiving or deleting below a strength threshold with ``dry_run``, never-forget
episodes surviving retention and forgetting, session-scoped episodes removed by
``end_session()``.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from memlane import EpisodeInput, EpisodicMemory, ValidationError
from memlane.models import RecallHit
from memlane.stores.base import EpisodeFilter, Store
from tests.conftest import T0, MemoryFactory

DAY = timedelta(days=1)


def _contents(hits: list[RecallHit]) -> list[str]:
    return sorted(h.episode.content for h in hits)


def _recall_all_ways(memory: EpisodicMemory, **kwargs: object) -> list[list[str]]:
    return [
        _contents(memory.recall_episodes(None, limit=50, **kwargs)),  # type: ignore[arg-type]
        _contents(memory.recall_episodes("fact about user", limit=50, retrieval="dense", **kwargs)),  # type: ignore[arg-type]
        _contents(memory.recall_episodes("fact user", limit=50, retrieval="keyword", **kwargs)),  # type: ignore[arg-type]
    ]


def _seed(memory: EpisodicMemory) -> dict[str, str]:
    """One episode per band, all 10 days old at T0."""
    old = T0 - 10 * DAY
    ids = {}
    for name, importance in (("never", 9.5), ("high", 7), ("mid", 5), ("low", 2), ("unrated", None)):
        ep = memory.remember_episode("fact", f"fact about user {name}", importance=importance, created_at=old)
        ids[name] = ep.id
    return ids


def test_forget_dry_run_changes_nothing(memory: EpisodicMemory) -> None:
    ids = _seed(memory)
    before = [ep.to_dict() for ep in memory.iter_episodes()]
    report = memory.forget(dry_run=True)
    assert report.dry_run and report.action == "archive" and report.threshold == 0.05
    # 10 days old: low (half-life 1 day) = 0.5**10 ~ 0.001 < 0.05; mid/unrated (7 days) = 0.37; high 0.79
    assert [ep.id for ep, _ in report.forgotten] == [ids["low"]]
    assert report.forgotten[0][1] == pytest.approx(0.5**10)
    assert [ep.to_dict() for ep in memory.iter_episodes()] == before
    assert len(memory.recall_episodes(limit=50)) == 5


def test_forget_archives_and_recall_hides_archived(memory: EpisodicMemory) -> None:
    ids = _seed(memory)
    report = memory.forget(threshold=0.5)  # low (0.001) and mid/unrated (0.37) fade; high 0.79 stays
    assert {ep.id for ep, _ in report.forgotten} == {ids["low"], ids["mid"], ids["unrated"]}
    assert not report.dry_run and report.count == 3
    archived = memory.get_episode(ids["low"])
    assert archived is not None and archived.archived_at == T0
    assert memory.count() == 5  # archived, not deleted
    kept = ["fact about user high", "fact about user never"]
    assert _recall_all_ways(memory) == [kept] * 3
    everything = sorted(f"fact about user {n}" for n in ids)
    assert _recall_all_ways(memory, include_archived=True) == [everything] * 3
    assert memory.forget(threshold=0.5).count == 0  # already archived: not again


def test_never_forget_survives_forget_at_any_age(memory: EpisodicMemory) -> None:
    ids = _seed(memory)
    report = memory.forget(now=T0 + 100_000 * DAY, threshold=0.999)
    assert ids["never"] not in {ep.id for ep, _ in report.forgotten}
    assert report.count == 4
    assert _contents(memory.recall_episodes(now=T0 + 100_000 * DAY)) == ["fact about user never"]


def test_forget_delete_action(make_memory: MemoryFactory) -> None:
    memory = make_memory(forget_action="delete")
    ids = _seed(memory)
    report = memory.forget()
    assert report.action == "delete" and [ep.id for ep, _ in report.forgotten] == [ids["low"]]
    assert memory.get_episode(ids["low"]) is None
    assert memory.count() == 4


def test_forget_only_acts_in_scope(make_memory: MemoryFactory) -> None:
    mine, theirs = make_memory(tenant_id="t1"), make_memory(tenant_id="t2")
    _seed(mine)
    other = _seed(theirs)
    assert mine.forget().count == 1
    assert theirs.get_episode(other["low"]).archived_at is None  # type: ignore[union-attr]


def test_retention_never_deletes_never_forget(make_memory: MemoryFactory, store: Store) -> None:
    memory = make_memory(retention_days=5, prune_probability=0.0)
    ids = _seed(memory)  # all 10 days old
    other_tenant = make_memory(tenant_id="t2", retention_days=5, prune_probability=0.0)
    vip = other_tenant.remember_episode(
        "fact", "fact about user vip", importance=10, created_at=T0 - 99 * DAY
    )
    assert _recall_all_ways(memory) == [["fact about user never"]] * 3  # retention hides the rest
    assert memory.prune() == 4
    assert {ep.id for ep in store.iter_episodes(EpisodeFilter())} == {ids["never"], vip.id}


def test_forgetting_recency_uses_half_lives(make_memory: MemoryFactory) -> None:
    plain, forgetting = make_memory(), make_memory(forgetting=True)
    _seed(plain)
    by_content = {
        h.episode.content: h.breakdown.recency  # type: ignore[union-attr]
        for h in forgetting.recall_episodes("fact about user", limit=10, retrieval="dense")
    }
    assert by_content["fact about user never"] == 1.0
    assert by_content["fact about user high"] == pytest.approx(0.5 ** (10 / 30))
    assert by_content["fact about user mid"] == pytest.approx(0.5 ** (10 / 7))
    assert by_content["fact about user unrated"] == pytest.approx(0.5 ** (10 / 7))
    assert by_content["fact about user low"] == pytest.approx(0.5**10)
    unchanged = plain.recall_episodes("fact about user", limit=10, retrieval="dense")
    assert [h.breakdown.recency for h in unchanged] == [pytest.approx(0.995**10)] * 5  # type: ignore[union-attr]


def test_session_scoped_episodes_end_with_their_session(make_memory: MemoryFactory) -> None:
    s1, s2 = make_memory(session_id="s1"), make_memory(session_id="s2")
    scratch = s1.remember_episode("note", "scratch for this session", session_scoped=True)
    keep = s1.remember_episode("note", "keep me")
    other = s2.remember_episode("note", "other session scratch", session_scoped=True)
    assert scratch.session_scoped and not keep.session_scoped
    assert s1.end_session() == 1
    assert s1.get_episode(scratch.id) is None
    assert s1.get_episode(keep.id) == keep
    assert s2.get_episode(other.id) == other
    assert s1.end_session() == 0


def test_archive_and_session_flag_round_trip(memory: EpisodicMemory) -> None:
    ids = _seed(memory)
    memory.remember_episode("note", "scratch", session_scoped=True)
    memory.forget()
    exported = list(memory.iter_episodes())
    for ep in exported:
        memory.delete_episode(ep.id)
    fields = [
        "event_type", "content", "tags", "importance", "created_at", "metadata", "id", "valid_from",
        "recorded_at", "archived_at", "session_scoped",
    ]  # fmt: skip
    memory.remember_episodes([EpisodeInput(**{f: getattr(ep, f) for f in fields}) for ep in exported])
    assert [ep.to_dict() for ep in memory.iter_episodes()] == [ep.to_dict() for ep in exported]
    assert ids["low"] not in {h.episode.id for h in memory.recall_episodes(limit=50)}


def test_forget_validates_threshold(memory: EpisodicMemory) -> None:
    for bad in (0, 1, -0.1, True, "0.5"):
        with pytest.raises(ValidationError, match="threshold"):
            memory.forget(threshold=bad)  # type: ignore[arg-type]
