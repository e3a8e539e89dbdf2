"""Property tests (hypothesis): filters and scopes hold for any mix of episodes, on every backend."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memlane import Episode, EpisodeInput, EpisodicMemory, MemoryConfig, Scope
from memlane.embeddings.fake import HashingEmbedder
from tests.backends import BackendDB
from tests.conftest import T0

TAGS = ["red", "green", "blue"]
TYPES = ["a", "b"]
CONTEXTS = [("t1", "s1"), ("t1", "s2"), ("t2", "s1")]
WORDS = ["seat", "flight", "card", "hotel", "rome"]

# Every episode stored so far per database: hypothesis reuses the fixture's database across examples.
_STORED: dict[str, list[Episode]] = {}

episode_st = st.tuples(
    st.sampled_from(CONTEXTS),
    st.sampled_from(TYPES),
    st.lists(st.sampled_from(TAGS), max_size=3, unique=True),
    st.one_of(st.none(), st.integers(min_value=1, max_value=10)),
    st.integers(min_value=0, max_value=500),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=4),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    episodes=st.lists(episode_st, min_size=1, max_size=25),
    scope=st.sampled_from(list(Scope)),
    event_type=st.one_of(st.none(), st.sampled_from(TYPES)),
    tags=st.lists(st.sampled_from(TAGS), max_size=2, unique=True),
    query=st.one_of(st.none(), st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join)),
    limit=st.integers(min_value=1, max_value=30),
)
def test_recall_returns_exactly_what_passes_scope_and_filters(
    backend_db: BackendDB,
    episodes: list[tuple[tuple[str, str], str, list[str], int | None, int, list[str]]],
    scope: Scope,
    event_type: str | None,
    tags: list[str],
    query: str | None,
    limit: int,
) -> None:
    store = backend_db.open()
    embedder = HashingEmbedder()
    writer = EpisodicMemory(store, embedder, owns_store=False, config=MemoryConfig(scope="global"))
    # A fresh tenant namespace per example for the session and tenant scopes.
    run = writer.count()
    stored = writer.remember_episodes(
        EpisodeInput(
            event_type=etype,
            content=" ".join(words),
            tags=etags,
            importance=imp,
            created_at=T0 - timedelta(days=age),
            tenant_id=f"{tenant}-{run}",
            session_id=session,
        )
        for (tenant, session), etype, etags, imp, age, words in episodes
    )
    reader = EpisodicMemory(
        store,
        embedder,
        tenant_id=f"t1-{run}",
        session_id="s1",
        config=MemoryConfig(scope=scope),
        owns_store=False,
    )

    history = _STORED.setdefault(backend_db.location, [])
    history.extend(stored)

    def visible(ep: Episode) -> bool:
        if scope is Scope.GLOBAL:
            return True
        if ep.tenant_id != f"t1-{run}":
            return False
        return scope is Scope.TENANT or ep.session_id == "s1"

    expected = {
        ep.id
        for ep in history
        if visible(ep) and (event_type is None or ep.event_type == event_type) and set(tags) <= set(ep.tags)
    }
    hits = reader.recall_episodes(query, event_type=event_type, tags=tags, limit=limit)
    got = [h.episode.id for h in hits]
    assert len(got) == len(set(got))
    assert set(got) <= expected
    assert len(got) == min(limit, len(expected))
    if query is not None:
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
        for h in hits:
            b = h.breakdown
            assert b is not None
            assert min(b.relevance, b.recency, b.importance, b.score) >= 0.0
            assert max(b.relevance, b.recency, b.importance, b.score) <= 1.0
    else:
        times = [h.episode.created_at for h in hits]
        assert times == sorted(times, reverse=True)
    store.close()
