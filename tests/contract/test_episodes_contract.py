"""The store contract, written once and run against every backend (see ``tests/backends.py``).

Every test goes through ``EpisodicMemory`` over the parametrised ``store`` fixture, with the
deterministic hashing embedder, so the semantics checked here are identical for SQLite and
PostgreSQL.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from memlane import (
    DuplicateEpisodeError,
    EmbeddingError,
    EmbeddingModelMismatchError,
    EpisodeInput,
    EpisodicMemory,
    ValidationError,
)
from memlane.embeddings.fake import FailingEmbedder, HashingEmbedder
from memlane.stores.base import EpisodeFilter, Store
from tests.conftest import T0, MemoryFactory

# -- writing ------------------------------------------------------------------------------


def test_remember_returns_the_stored_episode(memory: EpisodicMemory) -> None:
    ep = memory.remember_episode(
        "preference",
        "User prefers window seats",
        tags=["Travel", " seats "],
        importance=7,
        metadata={"source": "chat", "n": 1},
    )
    assert len(ep.id) == 32
    assert (ep.tenant_id, ep.session_id) == ("t1", "s1")
    assert ep.event_type == "preference"
    assert ep.tags == ("travel", "seats")
    assert ep.importance == 7.0
    assert ep.created_at == T0
    assert ep.embedding_model == "hashing-64"
    stored = memory.get_episode(ep.id)
    assert stored == ep


def test_remember_is_append_only(memory: EpisodicMemory) -> None:
    a = memory.remember_episode("note", "same text")
    b = memory.remember_episode("note", "same text")
    assert a.id != b.id
    assert memory.count() == 2


@pytest.mark.parametrize(
    ("given", "stored"), [(0, 1.0), (-3, 1.0), (11, 10.0), (7.5, 7.5), (1, 1.0), (10, 10.0), (None, None)]
)
def test_importance_is_clamped(memory: EpisodicMemory, given: float | None, stored: float | None) -> None:
    ep = memory.remember_episode("note", "x", importance=given)
    assert ep.importance == stored
    assert memory.get_episode(ep.id).importance == stored  # type: ignore[union-attr]


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, True, False, "5", [5], object()])
def test_bad_importance_is_refused_and_nothing_is_lost(memory: EpisodicMemory, bad: object) -> None:
    keep = memory.remember_episode("note", "already stored")
    with pytest.raises(ValidationError, match="importance"):
        memory.remember_episode("note", "x", importance=bad)  # type: ignore[arg-type]
    assert memory.count() == 1
    assert memory.get_episode(keep.id) == keep


@pytest.mark.parametrize(
    ("event_type", "content"),
    [
        ("", "text"),
        ("   ", "text"),
        ("note", ""),
        ("note", " \n "),
        (None, "text"),
        ("note", 42),
        ("x" * 201, "t"),
    ],
)
def test_blank_or_non_string_fields_are_refused(
    memory: EpisodicMemory, event_type: object, content: object
) -> None:
    memory.remember_episode("note", "already stored")
    with pytest.raises(ValidationError):
        memory.remember_episode(event_type, content)  # type: ignore[arg-type]
    assert memory.count() == 1


def test_naive_created_at_is_refused(memory: EpisodicMemory) -> None:
    with pytest.raises(ValidationError, match="timezone-aware"):
        memory.remember_episode("note", "x", created_at=datetime(2026, 1, 1))
    assert memory.count() == 0


def test_created_at_is_stored_in_utc(memory: EpisodicMemory) -> None:
    from zoneinfo import ZoneInfo

    local = datetime(2026, 3, 1, 9, 30, 15, 123456, tzinfo=ZoneInfo("Europe/Paris"))
    ep = memory.remember_episode("note", "x", created_at=local)
    assert ep.created_at == local
    assert ep.created_at.tzinfo == UTC
    assert memory.get_episode(ep.id).created_at == local  # type: ignore[union-attr]


def test_bad_metadata_is_refused(memory: EpisodicMemory) -> None:
    with pytest.raises(ValidationError, match="metadata"):
        memory.remember_episode("note", "x", metadata={"v": math.nan})
    with pytest.raises(ValidationError, match="metadata"):
        memory.remember_episode("note", "x", metadata={"v": object()})
    assert memory.count() == 0


def test_hostile_strings_are_stored_literally(memory: EpisodicMemory) -> None:
    nasty = "x'); DROP TABLE episodes; --"
    ep = memory.remember_episode(nasty, f"content {nasty} ünïcødé 🚀", tags=[nasty, "NEAR(a b)"])
    hits = memory.recall_episodes(event_type=nasty, tags=[nasty])
    assert [h.episode.id for h in hits] == [ep.id]
    assert hits[0].episode.content == f"content {nasty} ünïcødé 🚀"
    assert memory.count() == 1


def test_duplicate_import_id_is_refused_atomically(memory: EpisodicMemory) -> None:
    memory.remember_episodes([EpisodeInput("note", "first", id="fixed-id")])
    with pytest.raises(DuplicateEpisodeError):
        memory.remember_episodes(
            [EpisodeInput("note", "new one"), EpisodeInput("note", "clash", id="fixed-id")]
        )
    assert memory.count() == 1
    assert memory.get_episode("fixed-id").content == "first"  # type: ignore[union-attr]


def test_batch_validation_names_the_position(memory: EpisodicMemory) -> None:
    with pytest.raises(ValidationError, match="#1"):
        memory.remember_episodes([EpisodeInput("note", "fine"), EpisodeInput("note", "")])
    assert memory.count() == 0


# -- structured lookup ----------------------------------------------------------------------


def test_structured_lookup_is_newest_first_by_created_at(memory: EpisodicMemory) -> None:
    old = memory.remember_episode("note", "old", created_at=T0 - timedelta(days=10))
    new = memory.remember_episode("note", "new", created_at=T0 - timedelta(days=1))
    mid = memory.remember_episode("note", "mid", created_at=T0 - timedelta(days=5))
    hits = memory.recall_episodes()
    assert [h.episode.id for h in hits] == [new.id, mid.id, old.id]
    assert all(h.breakdown is None and h.score is None for h in hits)


def test_structured_lookup_never_calls_the_embedder(store: Store, make_memory: MemoryFactory) -> None:
    writer = make_memory()
    writer.remember_episode("booking", "flight booked", tags=["travel"])
    reader = make_memory(embedder_=FailingEmbedder())  # same model id, raises if called
    hits = reader.recall_episodes(event_type="booking", tags=["travel"], limit=3)
    assert [h.episode.content for h in hits] == ["flight booked"]
    strict = make_memory(embedder_=FailingEmbedder(), embedding_fallback=False)
    with pytest.raises(EmbeddingError):
        strict.recall_episodes("flight")
    # With the default fallback, a ranked recall survives the failure (see test_hybrid_contract.py).
    (hit,) = reader.recall_episodes("flight")
    assert hit.breakdown is not None and hit.breakdown.fallback


def test_limit_defaults_and_validation(make_memory: MemoryFactory) -> None:
    memory = make_memory(default_limit=3)
    for i in range(6):
        memory.remember_episode("note", f"note {i}")
    assert len(memory.recall_episodes()) == 3
    assert len(memory.recall_episodes("note")) == 3
    assert len(memory.recall_episodes(limit=5)) == 5
    for bad in (0, -1, True, 1.5, "3"):
        with pytest.raises(ValidationError, match="limit"):
            memory.recall_episodes(limit=bad)  # type: ignore[arg-type]


# -- filters --------------------------------------------------------------------------------


def test_tags_filter_with_and(memory: EpisodicMemory) -> None:
    both = memory.remember_episode("note", "flight to Rome paid", tags=["travel", "payment"])
    memory.remember_episode("note", "flight to Oslo", tags=["travel"])
    memory.remember_episode("note", "invoice paid", tags=["payment"])
    for query in (None, "flight paid"):
        hits = memory.recall_episodes(query, tags=["Travel", "PAYMENT"], limit=10)
        assert [h.episode.id for h in hits] == [both.id]
    assert len(memory.recall_episodes(tags=["travel"], limit=10)) == 2
    assert memory.recall_episodes(tags=["travel", "nope"]) == []


def test_event_type_is_an_exact_match(memory: EpisodicMemory) -> None:
    memory.remember_episode("booking", "a")
    memory.remember_episode("booking_failed", "b")
    memory.remember_episode("Booking", "c")
    for query in (None, "a b c"):
        hits = memory.recall_episodes(query, event_type="booking", limit=10)
        assert [h.episode.content for h in hits] == ["a"]


def test_ranking_never_surfaces_filtered_out_episodes(memory: EpisodicMemory) -> None:
    # The most relevant, newest and most important episode fails the filter.
    memory.remember_episode("other", "window seat window seat", tags=["travel"], importance=10)
    kept = memory.remember_episode(
        "pref", "aisle", tags=["travel"], importance=1, created_at=T0 - timedelta(days=400)
    )
    hits = memory.recall_episodes("window seat", event_type="pref", tags=["travel"], limit=5)
    assert [h.episode.id for h in hits] == [kept.id]


# -- scopes ---------------------------------------------------------------------------------


@pytest.fixture
def three_contexts(make_memory: MemoryFactory) -> dict[str, str]:
    ids = {}
    for tenant, session in (("t1", "s1"), ("t1", "s2"), ("t2", "s1")):
        ep = make_memory(tenant_id=tenant, session_id=session).remember_episode(
            "note", f"hotel note from {tenant}/{session}", tags=["hotel"]
        )
        ids[f"{tenant}/{session}"] = ep.id
    return ids


@pytest.mark.parametrize(
    ("scope", "visible"),
    [("session", {"t1/s1"}), ("tenant", {"t1/s1", "t1/s2"}), ("global", {"t1/s1", "t1/s2", "t2/s1"})],
)
def test_scope_isolation(
    make_memory: MemoryFactory, three_contexts: dict[str, str], scope: str, visible: set[str]
) -> None:
    memory = make_memory(tenant_id="t1", session_id="s1", scope=scope)
    expected = {three_contexts[k] for k in visible}
    for query in (None, "hotel note"):
        hits = memory.recall_episodes(query, tags=["hotel"], limit=10)
        assert {h.episode.id for h in hits} == expected
    assert memory.count() == len(expected)
    for key, episode_id in three_contexts.items():
        assert (memory.get_episode(episode_id) is not None) == (key in visible)


def test_session_ids_are_per_tenant(make_memory: MemoryFactory) -> None:
    make_memory(tenant_id="t2", session_id="shared").remember_episode("note", "tenant two secret")
    mine = make_memory(tenant_id="t1", session_id="shared")
    assert mine.recall_episodes() == []
    assert mine.recall_episodes("secret") == []


# -- ranking --------------------------------------------------------------------------------


def test_ranked_breakdown_follows_the_formula(memory: EpisodicMemory, embedder: HashingEmbedder) -> None:
    ep = memory.remember_episode(
        "note", "window seat please", importance=8, created_at=T0 - timedelta(days=30)
    )
    (hit,) = memory.recall_episodes("window seat please")
    b = hit.breakdown
    assert b is not None and hit.episode.id == ep.id
    assert b.dense == pytest.approx(1.0, abs=1e-6)  # identical text -> cosine 1 -> calibrated 1
    assert b.keyword is not None and 0.0 < b.keyword < 1.0
    # the lone candidate matches the query's terms (coverage 1): its words tell it from nothing else,
    # so the convex fusion's dense share is 1 - 0.6 * (1 - 1) = 1
    assert b.own_relevance == pytest.approx(b.dense)
    assert b.relevance == pytest.approx(b.own_relevance)  # a lone episode: no context
    assert b.recency == pytest.approx(0.995**30, rel=1e-9)
    assert b.recency == pytest.approx(0.8604, abs=1e-4)
    assert b.importance == pytest.approx(0.8)
    assert b.score == pytest.approx((b.relevance + 0.1 * (b.recency + b.importance) / 3) / 1.1)


def test_unrated_importance_is_neutral(memory: EpisodicMemory) -> None:
    memory.remember_episode("note", "alpha")
    (hit,) = memory.recall_episodes("alpha")
    assert hit.breakdown is not None and hit.breakdown.importance == 0.5


def test_ranking_is_relevance_first(memory: EpisodicMemory) -> None:
    relevant_old = memory.remember_episode("note", "window seat", created_at=T0 - timedelta(days=365))
    recent_important = memory.remember_episode("note", "dinner reservation", importance=10)
    by_relevance = memory.recall_episodes("window seat", weights="relevance_only", limit=2)
    assert by_relevance[0].episode.id == relevant_old.id
    # Weights only break near-ties: importance never lifts a clearly less relevant episode.
    by_importance = memory.recall_episodes("window seat", weights={"importance": 1.0}, limit=2)
    assert [h.episode.id for h in by_importance] == [relevant_old.id, recent_important.id]
    scores = [h.score for h in memory.recall_episodes("window seat", limit=2)]
    assert scores == sorted(scores, reverse=True)


def test_bad_weights_are_refused(memory: EpisodicMemory) -> None:
    memory.remember_episode("note", "x")
    for bad in ("nope", {"relevance": -1.0}, {"relevance": 0.0}, {"bogus": 1.0}):
        with pytest.raises(ValidationError):
            memory.recall_episodes("x", weights=bad)  # type: ignore[arg-type]


def test_recall_sees_writes_made_after_the_first_recall(memory: EpisodicMemory) -> None:
    memory.remember_episode("note", "first thing")
    assert len(memory.recall_episodes("thing", limit=10)) == 1
    memory.remember_episode("note", "second thing")
    assert len(memory.recall_episodes("thing", limit=10)) == 2


def test_other_store_objects_see_each_others_writes(backend_db: object, embedder: HashingEmbedder) -> None:
    from tests.backends import BackendDB

    assert isinstance(backend_db, BackendDB)
    a = EpisodicMemory(backend_db.open(), embedder, tenant_id="t", session_id="s")
    b = EpisodicMemory(backend_db.open(), embedder, tenant_id="t", session_id="s")
    a.remember_episode("note", "one apple")
    assert len(b.recall_episodes("apple", limit=10)) == 1
    a.remember_episode("note", "two apples apple")
    assert len(b.recall_episodes("apple", limit=10)) == 2
    a.close()
    b.close()


# -- retention ------------------------------------------------------------------------------


def test_prune_deletes_only_expired_episodes(make_memory: MemoryFactory, store: Store) -> None:
    memory = make_memory(retention_days=30, prune_probability=0.0)
    old = memory.remember_episode("note", "old", created_at=T0 - timedelta(days=31))
    other_tenant = make_memory(tenant_id="t9", retention_days=30, prune_probability=0.0)
    other_old = other_tenant.remember_episode("note", "other old", created_at=T0 - timedelta(days=40))
    fresh = memory.remember_episode("note", "fresh", created_at=T0 - timedelta(days=29))
    # Expired episodes are hidden from recall even before pruning.
    assert [h.episode.id for h in memory.recall_episodes(limit=10)] == [fresh.id]
    assert memory.count() == 1  # expired: gone from every read path (test_retention_contract.py)
    assert store.count(EpisodeFilter()) == 3  # ... but stored until pruned
    assert memory.prune() == 2  # table-wide: the other tenant's expired episode goes too
    assert memory.get_episode(old.id) is None
    assert other_tenant.get_episode(other_old.id) is None
    assert memory.get_episode(fresh.id) is not None
    assert make_memory().prune() == 0  # no retention configured -> nothing deleted


def test_opportunistic_prune_on_write(make_memory: MemoryFactory, store: Store) -> None:
    quiet = make_memory(retention_days=7, prune_probability=0.0)
    quiet.remember_episode("note", "expired", created_at=T0 - timedelta(days=8))
    assert store.count(EpisodeFilter()) == 1
    eager = make_memory(retention_days=7, prune_probability=1.0)
    eager.remember_episode("note", "today")
    assert store.count(EpisodeFilter()) == 1
    assert [h.episode.content for h in eager.recall_episodes("expired today", limit=5)] == ["today"]


# -- embedding model binding ----------------------------------------------------------------


def test_a_different_embedding_model_is_refused(store: Store, memory: EpisodicMemory) -> None:
    memory.remember_episode("note", "x")
    with pytest.raises(EmbeddingModelMismatchError):
        EpisodicMemory(store, HashingEmbedder(dims=32), owns_store=False)
    with pytest.raises(EmbeddingModelMismatchError):
        EpisodicMemory(store, HashingEmbedder(dims=64, model_id="other-model"), owns_store=False)
    assert memory.count() == 1


# -- export ---------------------------------------------------------------------------------


def test_iter_episodes_is_oldest_first_and_stats_count(make_memory: MemoryFactory, store: Store) -> None:
    memory = make_memory(scope="global")
    for i in range(5):
        memory.remember_episode(
            "note",
            f"n{i}",
            tags=[f"t{i % 2}"],
            importance=i + 1,
            created_at=T0 - timedelta(days=5 - i),
            metadata={"i": i},
        )
    exported = [ep.to_dict() for ep in memory.iter_episodes()]
    assert [e["content"] for e in exported] == ["n0", "n1", "n2", "n3", "n4"]
    other = make_memory(tenant_id="elsewhere", scope="global")
    assert other.count() == 5
    stats = store.stats(EpisodeFilter())
    assert stats.episodes == 5 and stats.with_vectors == 5
    assert stats.event_types == {"note": 5}
    assert stats.embedding_model == ("hashing-64", 64)


def test_nul_characters_are_refused_on_every_backend(memory: EpisodicMemory) -> None:
    for kwargs in ({"content": "a\x00b"}, {"event_type": "no\x00te"}, {"tags": ["t\x00g"]}):
        args = {"event_type": "note", "content": "fine"} | kwargs
        with pytest.raises(ValidationError, match="NUL"):
            memory.remember_episode(**args)  # type: ignore[arg-type]
    assert memory.count() == 0
