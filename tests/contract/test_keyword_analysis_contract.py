"""One text analysis on every backend: tricky queries, CJK, per-scope BM25, neighbours, min_relevance.

Every test runs on SQLite and PostgreSQL; the same table of queries must find the same episodes.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from memlane import EpisodeInput, EpisodicMemory, LocalEmbedder
from memlane.analysis import query_terms
from memlane.stores.base import EpisodeFilter, Store
from tests.conftest import MemoryFactory

DOCS = {
    "hook": "Don't run the pre-edit hook on C++ files (see docs/setup.md)",
    "tea": "用户喜欢喝绿茶，每天早上一杯",  # noqa: RUF001 - the issue's sentence, full-width comma kept
    "game": "しりとり",
    "deploy": "重跑deploy失败后回滚",
    "party": 'The "launch" party 🎉 was NEAR the harbour',
    "thai": "ภาษาไทย",
}

QUERIES = [
    ("don't", {"hook"}),
    ("docs/setup.md", {"hook"}),
    ("C++", {"hook"}),
    ("pre-edit", {"hook"}),
    ("绿茶", {"tea"}),
    ("茶", {"tea"}),
    ("しりとり", {"game"}),
    ("deploy", {"deploy"}),
    ("回滚", {"deploy"}),
    ('"launch"', {"party"}),
    ("NEAR", {"party"}),
    ("harbour*", {"party"}),
    ("🎉", set()),
    ("*", set()),
    ("ไทย", {"thai"}),
    ("hooks running", {"hook"}),  # stemmed: hooks -> hook, running -> run
]


@pytest.mark.parametrize(("query", "expected"), QUERIES)
def test_tricky_queries_find_the_same_episodes_on_every_backend(
    make_memory: MemoryFactory, query: str, expected: set[str]
) -> None:
    memory = make_memory()
    ids = {name: memory.remember_episode("note", text).id for name, text in DOCS.items()}
    hits = memory.recall_episodes(query, retrieval="keyword", limit=10)
    assert {h.episode.id for h in hits} == {ids[name] for name in expected}


def test_caption_metadata_is_searched_with_the_content(memory: EpisodicMemory) -> None:
    ep = memory.remember_episode(
        "turn", "look at this!", metadata={"caption": "a golden retriever on a beach"}
    )
    hits = memory.recall_episodes("retriever", retrieval="keyword")
    assert [h.episode.id for h in hits] == [ep.id]


def test_another_tenants_rows_never_change_keyword_results_or_scores(make_memory: MemoryFactory) -> None:
    b = make_memory(tenant_id="B")
    plan = b.remember_episode("note", "kubernetes upgrade plan for the payments cluster")
    b.remember_episode("note", "lunch with the design team")
    before = [
        (h.episode.id, h.breakdown.keyword)
        for h in b.recall_episodes("kubernetes upgrade", retrieval="keyword")
    ]
    a = make_memory(tenant_id="A")
    a.remember_episodes(EpisodeInput("note", f"kubernetes node {i} drained") for i in range(100))
    after = [
        (h.episode.id, h.breakdown.keyword)
        for h in b.recall_episodes("kubernetes upgrade", retrieval="keyword")
    ]
    assert before == after
    assert after[0][0] == plan.id


def test_document_frequencies_are_per_scope(store: Store, make_memory: MemoryFactory) -> None:
    a, b = make_memory(tenant_id="A"), make_memory(tenant_id="B")
    a.remember_episodes(EpisodeInput("note", f"zebra sighting {i}") for i in range(3))
    a.remember_episode("note", "giraffe")
    b.remember_episode("note", "zebra crossing")
    b.remember_episodes(EpisodeInput("note", f"other note {i}") for i in range(3))
    terms = query_terms("zebra")
    only_b = store.keyword_candidates(EpisodeFilter(tenant_id="B"), terms, 10)
    only_a = store.keyword_candidates(EpisodeFilter(tenant_id="A"), terms, 10)
    assert len(only_b) == 1 and len(only_a) == 3
    # B: df 1 of N 4 -> a higher IDF than A's df 3 of N 4.
    assert float(only_b.score[0]) > float(only_a.score.max())


def test_neighbours_follow_insertion_order_within_tenant_and_session(
    store: Store, make_memory: MemoryFactory
) -> None:
    s1 = make_memory(tenant_id="T", session_id="s1")
    other = make_memory(tenant_id="T", session_id="s2")
    elsewhere = make_memory(tenant_id="U", session_id="s1")
    ids = []
    for i in range(5):
        ids.append(s1.remember_episode("turn", f"turn {i}").id)
        other.remember_episode("turn", f"other {i}")
        elsewhere.remember_episode("turn", f"elsewhere {i}")
    flt = EpisodeFilter(tenant_id="T", session_id="s1")
    keys = store.keyword_candidates(flt, query_terms("turn"), 10).keys
    by_id = {ep.id: key for key, ep in store.fetch([int(k) for k in keys]).items()}
    key_of = [by_id[i] for i in ids]
    found = store.neighbours(flt, [key_of[2], key_of[0]], radius=2)
    rows = {int(k): [int(a) for a in adj] for k, adj in zip(found.keys, found.adjacent, strict=True)}
    assert rows[key_of[2]] == [key_of[0], key_of[1], key_of[3], key_of[4]]
    assert rows[key_of[0]] == [-1, -1, key_of[1], key_of[2]]
    assert set(found.session_ids) == {"s1"}
    # The neighbours are the stored turns of the key's own (tenant, session), whatever the
    # filter says: the ranking drops a neighbour that is not itself a candidate.
    narrow = store.neighbours(EpisodeFilter(tenant_id="T", event_type="other"), [key_of[2]], radius=1)
    assert narrow.adjacent.tolist() == [[key_of[1], key_of[3]]]


@pytest.fixture(scope="module")
def local_embedder() -> LocalEmbedder:
    return LocalEmbedder()


def test_min_relevance_means_something_on_a_small_store(
    make_memory: MemoryFactory, local_embedder: LocalEmbedder, clock: object
) -> None:
    memory = make_memory(embedder_=local_embedder)
    episodes = [
        "User prefers window seats",
        "User's dog is called Rex",
        "Booking BK-4471 failed: card declined",
    ]
    ids = [memory.remember_episode("note", text).id for text in episodes]
    assert memory.recall_episodes("what is the user's favourite colour?", min_relevance=0.3) == []
    (hit,) = memory.recall_episodes("BK-4471", min_relevance=0.3)  # a rare shared word still finds it
    assert hit.episode.id == ids[2]
    (dog,) = memory.recall_episodes("what is the dog called?", min_relevance=0.3)
    assert dog.episode.id == ids[1]
    assert dog.breakdown is not None and dog.breakdown.own_relevance >= 0.3


def test_session_neighbours_lift_the_answer_next_to_the_match(
    make_memory: MemoryFactory, local_embedder: LocalEmbedder
) -> None:
    memory = make_memory(embedder_=local_embedder)
    start = memory.clock.now() - timedelta(days=30)  # type: ignore[attr-defined]
    memory.remember_episodes(
        EpisodeInput("turn", text, created_at=start + timedelta(minutes=i))
        for i, text in enumerate(["Where did you go on holiday?", "We went hiking in Patagonia."])
    )
    hits = memory.recall_episodes("where did they go on holiday?", limit=2)
    assert {h.episode.content for h in hits} == {
        "Where did you go on holiday?",
        "We went hiking in Patagonia.",
    }
    answer = next(h for h in hits if "Patagonia" in h.episode.content)
    assert answer.breakdown is not None and answer.breakdown.relevance > answer.breakdown.own_relevance


def test_scope_statistics_follow_writes_and_deletes(store: Store, make_memory: MemoryFactory) -> None:
    """The kept statistics (rows, tokens, df) after deletes equal those of never having written the rows."""
    memory = make_memory(tenant_id="S", session_id="one")
    keep = [memory.remember_episode("note", f"zebra sighting number {i}").id for i in range(3)]
    memory.remember_episodes(EpisodeInput("note", f"filler entry about lunch {i}") for i in range(6))
    gone = [memory.remember_episode("note", f"zebra crossing repaint {i} soon").id for i in range(4)]
    for episode_id in gone:
        assert memory.delete_episode(episode_id)
    fresh = make_memory(tenant_id="S2", session_id="one")
    for i in range(3):
        fresh.remember_episode("note", f"zebra sighting number {i}")
    fresh.remember_episodes(EpisodeInput("note", f"filler entry about lunch {i}") for i in range(6))
    terms = query_terms("zebra sighting")
    after_deletes = store.keyword_candidates(EpisodeFilter(tenant_id="S", session_id="one"), terms, 10)
    never_written = store.keyword_candidates(EpisodeFilter(tenant_id="S2", session_id="one"), terms, 10)
    assert len(after_deletes) == 3
    assert after_deletes.score.tolist() == pytest.approx(never_written.score.tolist(), rel=1e-12)
    assert {k for k, ep in store.fetch([int(k) for k in after_deletes.keys]).items() if ep.id in keep} == set(
        int(k) for k in after_deletes.keys
    )


def test_filters_choose_candidates_not_statistics(store: Store, make_memory: MemoryFactory) -> None:
    """An event-type filter narrows the candidates; a hit's BM25 stays the scope's (issue 11)."""
    memory = make_memory(tenant_id="F", session_id="s")
    memory.remember_episodes(EpisodeInput("error", f"payment gateway timeout {i}") for i in range(5))
    memory.remember_episode("note", "payment gateway contract renewed")
    memory.remember_episodes(EpisodeInput("note", f"unrelated note {i}") for i in range(4))
    terms = query_terms("payment gateway renewed")
    scope = EpisodeFilter(tenant_id="F", session_id="s")
    everything = store.keyword_candidates(scope, terms, 10)
    notes = store.keyword_candidates(
        EpisodeFilter(tenant_id="F", session_id="s", event_type="note"), terms, 10
    )
    assert len(notes) == 1 and len(everything) == 6
    by_key = dict(zip(everything.keys.tolist(), everything.score.tolist(), strict=True))
    assert float(notes.score[0]) == pytest.approx(by_key[int(notes.keys[0])], rel=1e-12)
