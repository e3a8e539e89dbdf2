"""Keyword and hybrid recall, embedder fallback, min_relevance, presets and time windows.

Part of the store contract: every test runs on each backend (``tests/backends.py``) through
``EpisodicMemory`` with the deterministic hashing embedder.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from memlane import PRESETS, EmbeddingError, EpisodicMemory, ValidationError
from memlane.embeddings.fake import FailingEmbedder
from memlane.recall.temporal import parse_time_window
from tests.conftest import T0, MemoryFactory

HOSTILE_QUERIES = [
    '"',
    '"unbalanced quote',
    "NEAR(window seat, 2)",
    "window*",
    "*",
    "content:window",
    "id:1 OR tenant_id:t2",
    "window AND OR NOT seat",
    "NOT window",
    "-window",
    "((window",
    "window))",
    "^window",
    "win:dow",
    "& | ! <-> :* window",
    "'; DROP TABLE episodes; --",
    "\\",
    "{window} [seat]",
    "window's seat",
    "ünïcødé 🚀 window",
    "NEAR",
    "AND",
    "-",
    "...",
]


@pytest.fixture
def seats(memory: EpisodicMemory) -> dict[str, str]:
    ids = {
        "window": memory.remember_episode("preference", "User prefers a window seat on flights").id,
        "dinner": memory.remember_episode("note", "Dinner booked at the Italian place").id,
        "near": memory.remember_episode("note", "The hotel is near the station").id,
    }
    return ids


# -- keyword recall -------------------------------------------------------------------------


def test_keyword_recall_never_embeds(
    store: object, make_memory: MemoryFactory, seats: dict[str, str]
) -> None:
    reader = make_memory(embedder_=FailingEmbedder(), retrieval="keyword")
    hits = reader.recall_episodes("window seat", limit=5)
    assert [h.episode.id for h in hits] == [seats["window"]]
    b = hits[0].breakdown
    assert b is not None
    assert (b.retrieval, b.fallback, b.dense) == ("keyword", False, None)
    # The best match gets the absolute saturation of its own per-scope BM25, never 1 by fiat.
    assert b.keyword is not None and 0.0 < b.keyword < 1.0
    assert b.relevance == pytest.approx(b.keyword) == b.own_relevance


@pytest.mark.parametrize("query", HOSTILE_QUERIES)
@pytest.mark.parametrize("retrieval", ["keyword", "hybrid"])
def test_fts_syntax_in_user_text_never_errors_nor_changes_meaning(
    memory: EpisodicMemory, seats: dict[str, str], query: str, retrieval: str
) -> None:
    hits = memory.recall_episodes(query, limit=5, retrieval=retrieval)
    ids = {h.episode.id for h in hits}
    if "window" in query.lower() and retrieval == "keyword":
        # Operators are plain words: NOT/-/column filters never exclude or redirect the term.
        assert seats["window"] in ids
    if query == "NEAR" and retrieval == "keyword":
        assert ids == {seats["near"]}  # the word, not the operator


def test_keyword_candidates_respect_filters(memory: EpisodicMemory) -> None:
    kept = memory.remember_episode("pref", "aisle seat please", tags=["travel"])
    memory.remember_episode("other", "aisle seat please", tags=["travel"])
    memory.remember_episode("pref", "aisle seat please", tags=["food"])
    for retrieval in ("keyword", "hybrid", "dense"):
        hits = memory.recall_episodes(
            "aisle seat", event_type="pref", tags=["travel"], limit=10, retrieval=retrieval
        )
        assert [h.episode.id for h in hits] == [kept.id], retrieval


@pytest.mark.parametrize(
    ("scope", "visible"),
    [("session", {"t1/s1"}), ("tenant", {"t1/s1", "t1/s2"}), ("global", {"t1/s1", "t1/s2", "t2/s1"})],
)
def test_keyword_recall_respects_scope(make_memory: MemoryFactory, scope: str, visible: set[str]) -> None:
    ids = {}
    for tenant, session in (("t1", "s1"), ("t1", "s2"), ("t2", "s1")):
        writer = make_memory(tenant_id=tenant, session_id=session)
        ids[f"{tenant}/{session}"] = writer.remember_episode("note", f"hotel booking {tenant} {session}").id
    reader = make_memory(tenant_id="t1", session_id="s1", scope=scope, retrieval="keyword")
    hits = reader.recall_episodes("hotel booking", limit=10)
    assert {h.episode.id for h in hits} == {ids[k] for k in visible}


def test_deleted_and_pruned_episodes_leave_the_keyword_index(make_memory: MemoryFactory) -> None:
    memory = make_memory(retention_days=30, prune_probability=0.0, retrieval="keyword")
    gone = memory.remember_episode("note", "zebra crossing")
    old = memory.remember_episode("note", "zebra stripes", created_at=T0 - timedelta(days=40))
    kept = memory.remember_episode("note", "zebra herd")
    assert memory.delete_episode(gone.id)
    # Expired episodes are hidden before pruning, and gone from the index after it.
    assert {h.episode.id for h in memory.recall_episodes("zebra", limit=10)} == {kept.id}
    assert memory.prune() == 1
    everything = make_memory(retrieval="keyword")  # no retention: would see `old` if it were left
    assert {h.episode.id for h in everything.recall_episodes("zebra", limit=10)} == {kept.id}
    assert everything.get_episode(old.id) is None


def test_hybrid_breakdown_shows_both_parts(memory: EpisodicMemory) -> None:
    ep = memory.remember_episode("note", "window seat please")
    memory.remember_episode("note", "an unrelated dinner note")
    hit = memory.recall_episodes("window seat", limit=1)[0]
    b = hit.breakdown
    assert hit.episode.id == ep.id and b is not None
    assert b.retrieval == "hybrid" and not b.fallback and b.in_window is None
    assert b.dense is not None and b.keyword is not None and 0.0 < b.keyword < 1.0
    # convex base relevance; one of the two candidates matches a term: dense share 1 - 0.6 * (1 - 1/2)
    assert b.own_relevance == pytest.approx(0.7 * b.dense + 0.3 * b.keyword)
    assert b.score == pytest.approx((b.relevance + 0.1 * (b.recency + b.importance) / 3) / 1.1)
    assert b.decided_by == "relevance"


# -- graceful degradation -------------------------------------------------------------------


def test_episode_stored_without_vector_when_the_embedder_fails(
    make_memory: MemoryFactory, caplog: pytest.LogCaptureFixture
) -> None:
    broken = make_memory(embedder_=FailingEmbedder())
    with caplog.at_level(logging.WARNING, logger="memlane.memory"):
        ep = broken.remember_episode("note", "passport renewal due in March")
    assert ep.embedding_model is None  # the flag: stored without a vector
    assert "without vectors" in caplog.text
    healthy = make_memory()
    assert healthy.get_episode(ep.id) == ep
    (hit,) = healthy.recall_episodes("passport renewal")  # hybrid finds it through keywords
    assert hit.episode.id == ep.id
    assert hit.breakdown is not None and hit.breakdown.dense is None
    assert hit.breakdown.keyword is not None and hit.breakdown.keyword > 0.0
    assert healthy.recall_episodes("passport renewal", retrieval="dense") == []


def test_query_time_embedder_failure_falls_back_to_keywords(
    make_memory: MemoryFactory, caplog: pytest.LogCaptureFixture
) -> None:
    ep = make_memory().remember_episode("note", "gate change to B12")
    reader = make_memory(embedder_=FailingEmbedder())
    with caplog.at_level(logging.WARNING, logger="memlane.memory"):
        (hit,) = reader.recall_episodes("gate change")
    assert "keywords only" in caplog.text
    b = hit.breakdown
    assert hit.episode.id == ep.id and b is not None
    assert (b.retrieval, b.fallback, b.dense) == ("keyword", True, None)
    for retrieval in ("dense", "hybrid"):
        (again,) = reader.recall_episodes("gate change", retrieval=retrieval)
        assert again.breakdown is not None and again.breakdown.fallback


def test_fallback_can_be_turned_off(make_memory: MemoryFactory) -> None:
    strict = make_memory(embedder_=FailingEmbedder(), embedding_fallback=False)
    with pytest.raises(EmbeddingError):
        strict.remember_episode("note", "x")
    assert strict.count() == 0
    with pytest.raises(EmbeddingError):
        strict.recall_episodes("x")
    assert strict.recall_episodes("x", retrieval="keyword") == []  # keyword recall needs no embedder


# -- min_relevance --------------------------------------------------------------------------


def test_min_relevance_drops_weak_hits_per_call_and_in_config(make_memory: MemoryFactory) -> None:
    memory = make_memory()
    exact = memory.remember_episode("note", "quarterly revenue report")
    memory.remember_episode("note", "the cat sat on the mat")
    all_hits = memory.recall_episodes("quarterly revenue report", limit=10)
    assert len(all_hits) == 2
    strong = memory.recall_episodes("quarterly revenue report", limit=10, min_relevance=0.5)
    assert [h.episode.id for h in strong] == [exact.id]
    assert all(h.breakdown is not None and h.breakdown.own_relevance >= 0.5 for h in strong)
    configured = make_memory(min_relevance=0.5)
    assert [h.episode.id for h in configured.recall_episodes("quarterly revenue report", limit=10)] == [
        exact.id
    ]
    assert len(configured.recall_episodes("quarterly revenue report", limit=10, min_relevance=0.0)) == 2
    for bad in (-0.1, 1.5, "0.5", True, float("nan")):
        with pytest.raises(ValidationError, match="min_relevance"):
            memory.recall_episodes("x", min_relevance=bad)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="retrieval"):
        memory.recall_episodes("x", retrieval="sparse")


# -- presets --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("preset", "first"),
    [
        ("relevance_only", "recent"),  # equal relevance: the newer one
        ("specific_question", "important"),
        ("balanced", "important"),
        ("conversation", "recent"),
        ("agent_context", "important"),
        ("cold_start", "important"),
    ],
)
def test_presets_change_the_order_of_equally_relevant_hits(
    memory: EpisodicMemory, preset: str, first: str
) -> None:
    # Same content, so the same relevance on every backend; the preset decides within the tie band.
    ids = {
        "important": memory.remember_episode(
            "note", "window seat preference", importance=10, created_at=T0 - timedelta(days=300)
        ).id,
        "recent": memory.remember_episode("note", "window seat preference", importance=1).id,
        "unrated": memory.remember_episode(
            "note", "window seat preference", created_at=T0 - timedelta(days=150)
        ).id,
    }
    hits = memory.recall_episodes("window seat preference", limit=3, weights=preset, retrieval="dense")
    assert hits[0].episode.id == ids[first]
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)


def test_a_clearly_more_relevant_hit_is_never_buried(memory: EpisodicMemory) -> None:
    old = memory.remember_episode(
        "note", "the user's passport expires in March", importance=1, created_at=T0 - timedelta(days=400)
    )
    for i in range(3):
        memory.remember_episode("note", f"lunch order number {i}", importance=10)
    for preset, weights in PRESETS.items():
        if weights.formula == "seed":  # the seed's plain mean lets importance bury relevance, as it says
            continue
        hits = memory.recall_episodes("when does the passport expire?", limit=2, weights=preset)
        assert hits[0].episode.id == old.id, preset


# -- time windows ---------------------------------------------------------------------------


def test_a_named_time_boosts_its_window(make_memory: MemoryFactory) -> None:
    memory = make_memory()
    in_2025 = memory.remember_episode(
        "note", "team offsite planning", created_at=datetime(2025, 7, 1, tzinfo=UTC)
    )
    later = memory.remember_episode(
        "note", "team offsite planning", created_at=datetime(2026, 4, 1, tzinfo=UTC)
    )
    hits = memory.recall_episodes("team offsite planning in 2025", limit=2, weights="relevance_only")
    assert [h.episode.id for h in hits] == [in_2025.id, later.id]
    flags = [h.breakdown.in_window for h in hits if h.breakdown is not None]
    assert flags == [True, False]
    plain = make_memory(temporal=False).recall_episodes(
        "team offsite planning in 2025", limit=2, weights="relevance_only"
    )
    assert [h.episode.id for h in plain] == [later.id, in_2025.id]  # a tie, broken by recency
    assert all(h.breakdown is not None and h.breakdown.in_window is None for h in plain)


LA = ZoneInfo("America/Los_Angeles")


def test_time_expressions_resolve_in_the_zone_of_now(make_memory: MemoryFactory) -> None:
    """ "yesterday" at 23:59 in Los Angeles is the Los Angeles day before (January 9), not the UTC one."""
    memory = make_memory()
    now = datetime(2025, 1, 10, 23, 59, tzinfo=LA)  # 2025-01-11 07:59 UTC
    dentist = memory.remember_episode(
        "note", "dentist appointment", created_at=datetime(2025, 1, 9, 12, 0, tzinfo=LA)
    )
    early = memory.remember_episode(  # 2025-01-09 02:00 UTC: still January 8 in Los Angeles
        "note", "dentist appointment booked", created_at=datetime(2025, 1, 9, 2, 0, tzinfo=UTC)
    )
    for retrieval in ("hybrid", "dense", "keyword"):
        hits = memory.recall_episodes("dentist yesterday", now=now, limit=5, retrieval=retrieval)
        flags = {h.episode.id: h.breakdown.in_window for h in hits if h.breakdown is not None}
        assert flags == {dentist.id: True, early.id: False}, retrieval
    window = parse_time_window("dentist yesterday", now)
    assert window is not None
    assert (window.start, window.end) == (
        datetime(2025, 1, 9, 8, tzinfo=UTC),  # January 9 in Los Angeles (PST, UTC-8)
        datetime(2025, 1, 10, 8, tzinfo=UTC),
    )
    # the same instant given in UTC names the UTC day before
    utc_window = parse_time_window("dentist yesterday", now.astimezone(UTC))
    assert utc_window is not None and utc_window.start == datetime(2025, 1, 10, tzinfo=UTC)


def test_calendar_windows_follow_daylight_saving_in_the_zone_of_now() -> None:
    now = datetime(2025, 3, 12, 9, 0, tzinfo=LA)  # the week after the spring-forward Sunday (March 9)
    window = parse_time_window("what happened last week", now)
    assert window is not None and window.granularity == "week"
    assert window.start == datetime(2025, 3, 3, tzinfo=LA).astimezone(UTC)  # PST: 08:00 UTC
    assert window.end == datetime(2025, 3, 10, tzinfo=LA).astimezone(UTC)  # PDT: 07:00 UTC
