"""Contract: every keyword speed path returns exactly the hits of the plain path, on every backend.

The plain path is memlane's BM25 (:func:`memlane.bm25.score_matches`) over *every* row of the
recall's statistics scope holding a query term, computed here from the episodes' own analysed
text (:func:`memlane.analysis.index_terms`), then filtered and cut to the pool. Each backend's
``keyword_candidates`` must return the same rows, in the same order, with the same float scores,
on generated stores in both text regimes: natural turns (Zipf-distributed words) and common words
(each of 12 words in ~20 % of the rows, as in the scale benchmark's common regime). On SQLite the
in-memory postings (``keyword_index=True``, the default) must also give the same ranked recall
(hits, order, breakdowns) and neighbours as the FTS5 path (``keyword_index=False``), also after
another store object on the same file appended, deleted and archived rows.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import pytest

from memlane import EpisodeInput, EpisodicMemory, FrozenClock, SQLiteStore
from memlane.analysis import index_terms, keyword_text, query_terms
from memlane.bm25 import score_matches
from memlane.embeddings.fake import HashingEmbedder
from memlane.models import Episode
from memlane.stores.base import EpisodeFilter, Store
from memlane.stores.common_terms import CommonTermFilter, statistics_scope
from tests.conftest import T0

VOCABULARY = [
    f"{a}{b}" for a in ("kal", "mor", "tis", "ven", "dru", "pal") for b in ("ak", "el", "om", "ur", "in")
]
COMMON = VOCABULARY[:12]
TENANTS = ("t1", "t2")
SESSIONS = ("s1", "s2", "s3")
POOL = 40


def _text(rng: random.Random, regime: str) -> str:
    if regime == "common":
        words = [w for w in COMMON if rng.random() < 0.2] + rng.sample(VOCABULARY[12:], 2)
    else:  # Zipf: word k drawn with weight 1 / (k + 1)
        words = rng.choices(
            VOCABULARY, weights=[1 / (k + 1) for k in range(len(VOCABULARY))], k=rng.randint(3, 12)
        )
    return " ".join(words)


def _fill(store: Store, regime: str, rows: int, seed: int = 7) -> list[Episode]:
    rng = random.Random(seed)
    stored: list[Episode] = []
    for i in range(rows // 100):
        tenant, session = TENANTS[i % 2], SESSIONS[i % 3]
        memory = _memory(store, tenant, session)
        stored += memory.remember_episodes(
            EpisodeInput(
                rng.choice(("message", "note")),
                _text(rng, regime),
                tags=("red",) if rng.random() < 0.3 else (),
                created_at=T0 - timedelta(minutes=rng.randint(0, 10_000)),
                importance=rng.choice((None, 3.0, 8.0)),
            )
            for _ in range(100)
        )
    return stored


def _memory(store: Store, tenant: str, session: str) -> EpisodicMemory:
    return EpisodicMemory(
        store,
        HashingEmbedder(),
        clock=FrozenClock(T0),
        tenant_id=tenant,
        session_id=session,
        owns_store=False,
    )


def _queries(regime: str) -> list[str]:
    rng = random.Random(11)
    return [_text(rng, regime) for _ in range(12)] + [" ".join(COMMON[:3]), VOCABULARY[-1], "nothing matches"]


def _plain(
    episodes: Sequence[Episode], flt: EpisodeFilter, terms: Sequence[str], top_n: int
) -> list[tuple[str, float]]:
    """The plain path: BM25 over every match of the statistics scope, then the filter, then the pool."""
    tenant, session = statistics_scope(flt)
    scope = [
        e for e in episodes if tenant is None or (e.tenant_id == tenant and session in (None, e.session_id))
    ]
    analysed = {e.id: index_terms(keyword_text(e.content, e.metadata)) for e in scope}
    n = len(scope)
    if not n:
        return []
    avgdl = sum(length for _, length in analysed.values()) / n
    df = CommonTermFilter().kept({t: sum(t in ts for ts, _ in analysed.values()) for t in terms}, n)
    if not df:
        return []
    passing = {e.id for e in scope if _passes(e, flt)}
    keys = {i: e.id for i, e in enumerate(scope)}
    rows = [(i, " ".join(analysed[e.id][0]), analysed[e.id][1], 0.0, None) for i, e in enumerate(scope)]
    scored = score_matches(rows, df, n, avgdl, len(rows))
    return [(keys[k], s) for k, s, _, _ in scored if keys[k] in passing][:top_n]


def _passes(episode: Episode, flt: EpisodeFilter) -> bool:
    return (
        (flt.tenant_id is None or episode.tenant_id == flt.tenant_id)
        and (flt.session_id is None or episode.session_id == flt.session_id)
        and (flt.event_type is None or episode.event_type == flt.event_type)
        and set(flt.tags) <= set(episode.tags)
        and not (flt.exclude_archived and episode.archived_at is not None)
    )


def _found(store: Store, flt: EpisodeFilter, terms: Sequence[str], top_n: int) -> list[tuple[str, float]]:
    found = store.keyword_candidates(flt, terms, top_n)
    episodes = store.fetch(found.keys.tolist())
    return [(episodes[int(k)].id, float(s)) for k, s in zip(found.keys, found.score, strict=True)]


FILTERS = [
    EpisodeFilter(tenant_id="t1"),
    EpisodeFilter(tenant_id="t2", session_id="s2"),
    EpisodeFilter(tenant_id="t1", event_type="note", exclude_archived=True),
    EpisodeFilter(tenant_id="t2", tags=("red",)),
    EpisodeFilter(),
]


@pytest.mark.parametrize("regime", ["natural", "common"])
def test_keyword_candidates_are_the_plain_bm25_top_n(store: Store, regime: str) -> None:
    episodes = _fill(store, regime, 1200)
    for flt in FILTERS:
        for query in _queries(regime):
            terms = list(query_terms(query))
            for top_n in (1, POOL, 2000):
                assert _found(store, flt, terms, top_n) == _plain(episodes, flt, terms, top_n), (
                    flt,
                    query,
                    top_n,
                )


def _ranked(memory: EpisodicMemory, query: str, **kwargs: Any) -> list[tuple[str, Any]]:
    return [(h.episode.id, h.breakdown) for h in memory.recall_episodes(query, limit=10, **kwargs)]


@pytest.mark.parametrize("regime", ["natural", "common"])
def test_sqlite_postings_answer_as_the_fts5_path(tmp_path: Any, regime: str) -> None:
    path = tmp_path / "m.db"
    fast, plain = SQLiteStore(path), SQLiteStore(path, keyword_index=False)
    writer = SQLiteStore(path)
    try:
        episodes = _fill(writer, regime, 1200)

        def same() -> None:
            for tenant, session in (("t1", "s1"), ("t2", "s2")):
                a, b = _memory(fast, tenant, session), _memory(plain, tenant, session)
                for query in _queries(regime):
                    for kwargs in ({"retrieval": "keyword"}, {}, {"tags": ("red",)}, {"event_type": "note"}):
                        assert _ranked(a, query, **kwargs) == _ranked(b, query, **kwargs), (query, kwargs)
            keys = fast.keyword_candidates(
                EpisodeFilter(), list(query_terms(" ".join(COMMON))), 500
            ).keys.tolist()
            mine, theirs = fast.neighbours(EpisodeFilter(), keys), plain.neighbours(EpisodeFilter(), keys)
            assert len(mine) > 0 and mine.keys.tolist() == theirs.keys.tolist()
            assert mine.adjacent.tolist() == theirs.adjacent.tolist()
            assert (mine.session_ids, mine.tags) == (theirs.session_ids, theirs.tags)

        same()
        # Another store object (as another process would) appends, deletes and archives rows.
        episodes += _fill(writer, regime, 300, seed=8)
        for episode in episodes[::7]:
            writer.delete(episode.id, None)
        writer.archive([e.id for e in episodes[1::11]], T0)
        same()
    finally:
        for s in (fast, plain, writer):
            s.close()
