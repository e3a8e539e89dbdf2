"""The knowledge graph, written once and run against every backend (SQLite file, real PostgreSQL).

Every test goes through the public facade over the parametrised ``store`` fixture with a
frozen clock; the time model is the episodes' (valid time and transaction time).
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from memlane import EpisodicMemory, FrozenClock, ValidationError
from memlane.errors import FactNotFoundError
from tests.conftest import T0, MemoryFactory

DAY = timedelta(days=1)


@pytest.fixture
def graph(make_memory: MemoryFactory) -> EpisodicMemory:
    return make_memory(scope="tenant")


def test_a_fact_round_trips_with_its_provenance(graph: EpisodicMemory) -> None:
    result = graph.remember_fact(
        "Customer_123",
        "subscription tier",
        value="enterprise",
        valid_from=T0 - 30 * DAY,
        confidence=0.9,
        importance=8,
        source_episode_id="ep-1",
        source_session_id="chat-7",
        subject_type="customer",
    )
    fact = result.fact
    assert (fact.subject, fact.predicate, fact.value, fact.object) == (
        "customer_123",
        "subscription_tier",
        "enterprise",
        None,
    )
    assert (fact.valid_from, fact.valid_until, fact.recorded_at, fact.invalidated_at) == (
        T0 - 30 * DAY,
        None,
        T0,
        None,
    )
    assert (fact.confidence, fact.importance, fact.method) == (0.9, 8.0, "explicit")
    assert (fact.source_episode_id, fact.source_session_id, fact.tenant_id, fact.session_id) == (
        "ep-1",
        "chat-7",
        "t1",
        "s1",
    )
    assert graph.query_facts("CUSTOMER_123 ") == [fact]
    assert graph.query_facts("customer_123", predicate="Subscription Tier") == [fact]
    assert graph.query_facts("customer_123", predicate="lives_in") == []
    assert graph.query_facts("nobody") == []


def test_a_single_valued_change_closes_the_old_fact_and_keeps_it(
    graph: EpisodicMemory, clock: FrozenClock
) -> None:
    old = graph.remember_fact("team", "uses_database", value="MySQL", valid_from=T0 - 100 * DAY).fact
    clock.advance(timedelta(hours=1))
    new = graph.remember_fact("team", "migrated_to", value="PostgreSQL", valid_from=T0 - 10 * DAY)
    assert [f.id for f in new.superseded] == [old.id]
    retired = new.superseded[0]
    assert retired.valid_until == T0 - 10 * DAY
    assert retired.invalidated_at == T0 + timedelta(hours=1)
    assert retired.superseded_by == new.fact.id
    assert retired.supersede_reason == "uses_database is single-valued: 'MySQL' -> 'PostgreSQL'"
    assert [f.value for f in graph.query_facts("team")] == ["PostgreSQL"]
    # valid time: what was true 50 days ago, retired rows included
    assert [f.value for f in graph.query_facts("team", as_of=T0 - 50 * DAY)] == ["MySQL"]
    # transaction time: what memlane held before it learned of the migration
    assert [f.value for f in graph.query_facts("team", known_at=T0 + timedelta(minutes=30))] == ["MySQL"]
    timeline = graph.entity_timeline("team")
    assert [(f.value, f.superseded_by) for f in timeline] == [("MySQL", new.fact.id), ("PostgreSQL", None)]
    assert timeline[0] == retired  # the store holds exactly what remember_fact reported


def test_multi_valued_facts_accumulate_and_opposites_close(graph: EpisodicMemory) -> None:
    tea = graph.remember_fact("user", "likes", "tea").fact
    spicy = graph.remember_fact("user", "likes", "spicy food")
    assert spicy.superseded == ()
    coffee = graph.remember_fact("user", "dislikes", "coffee").fact
    flipped = graph.remember_fact("user", "loves", "coffee")
    assert [f.id for f in flipped.superseded] == [coffee.id]
    assert flipped.superseded[0].supersede_reason.startswith("opposite predicate")
    current = {(f.predicate, f.object) for f in graph.query_facts("user")}
    assert current == {("likes", "tea"), ("likes", "spicy food"), ("likes", "coffee")}
    assert tea.id in {f.id for f in graph.query_facts("tea")}  # as object too


def test_a_duplicate_is_merged_not_stored(graph: EpisodicMemory) -> None:
    first = graph.remember_fact("user", "likes", "coffee").fact
    again = graph.remember_fact("User", "enjoys", "Coffee")
    assert again.duplicate and again.fact == first
    assert len(graph.entity_timeline("user")) == 1
    stats = graph.graph_stats()
    assert (stats.facts, stats.duplicates_merged) == (1, 1)


def test_a_backfilled_older_value_is_stored_as_history(graph: EpisodicMemory) -> None:
    now_fact = graph.remember_fact("ana", "lives_in", "Lisbon", valid_from=T0 - 10 * DAY).fact
    older = graph.remember_fact("ana", "lives_in", "Berlin", valid_from=T0 - 400 * DAY)
    assert older.superseded == ()
    assert older.fact.valid_until == now_fact.valid_from
    assert [f.object for f in graph.query_facts("ana")] == ["lisbon"]
    assert [f.object for f in graph.query_facts("ana", as_of=T0 - 200 * DAY)] == ["berlin"]


def test_asserting_a_retired_value_again_stores_nothing(graph: EpisodicMemory) -> None:
    """Re-running an import (or the README's example): history already recorded is a duplicate."""
    for _ in range(2):
        graph.remember_fact("acme", "subscription_tier", value="pro", valid_from=T0 - 400 * DAY)
        graph.remember_fact("acme", "subscription_tier", value="enterprise", valid_from=T0 - 100 * DAY)
    again = graph.remember_fact("acme", "subscription_tier", value="pro", valid_from=T0 - 400 * DAY)
    assert again.duplicate and again.fact.invalidated_at is not None  # the retired fact, not a copy
    assert len(graph.entity_timeline("acme")) == 2
    assert [f.value for f in graph.query_facts("acme", as_of=T0 - 200 * DAY)] == ["pro"]


def test_plan_is_the_subscription_tier(graph: EpisodicMemory) -> None:
    graph.remember_fact("acme", "subscription_tier", value="pro", valid_from=T0 - 10 * DAY)
    changed = graph.remember_fact("acme", "plan", value="enterprise")
    assert changed.fact.predicate == "subscription_tier"
    assert [f.value for f in changed.superseded] == ["pro"]
    assert [f.value for f in graph.query_facts("acme")] == ["enterprise"]


def test_low_confidence_retires_nothing(graph: EpisodicMemory) -> None:
    graph.remember_fact("ana", "works_at", "Acme")
    weak = graph.remember_fact("ana", "works_at", "Globex", confidence=0.4)
    assert weak.superseded == ()
    assert {f.object for f in graph.query_facts("ana")} == {"acme", "globex"}
    stats = graph.graph_stats()
    assert stats.below_confidence == 1 and stats.contradictory == 2
    assert stats.problems  # 3 invalid of 2 current: past the seed's 5 %


def test_neighbours_and_paths_walk_the_object_facts(graph: EpisodicMemory) -> None:
    graph.remember_fact("me", "introduced_to", "Alice")
    graph.remember_fact("Alice", "introduced_me_to", "Bob")
    graph.remember_fact("Bob", "works_at", "Acme")
    graph.remember_fact("Bob", "age", value="41")  # a literal is no edge
    near = {n.entity.id: n.hops for n in graph.neighbours("alice", depth=2)}
    assert near == {"alice": 0, "me": 1, "bob": 1, "acme": 2}
    assert {n.entity.id for n in graph.neighbours("alice")} == {"alice", "me", "bob"}
    paths = graph.find_paths("me", "Acme", max_depth=3)
    assert [[(f.subject, f.object) for f in p] for p in paths] == [
        [("me", "alice"), ("alice", "bob"), ("bob", "acme")]
    ]
    assert graph.find_paths("me", "Acme", max_depth=2) == []
    assert graph.find_paths("me", "nobody") == []


def test_paths_follow_time(graph: EpisodicMemory) -> None:
    graph.remember_fact("bob", "works_at", "Acme", valid_from=T0 - 100 * DAY)
    graph.remember_fact("bob", "works_at", "Globex", valid_from=T0 - 10 * DAY)
    assert graph.find_paths("bob", "acme") == []
    then = graph.find_paths("bob", "acme", as_of=T0 - 50 * DAY)
    assert [[f.object for f in p] for p in then] == [["acme"]]


def test_merged_entities_resolve_and_keep_their_facts(graph: EpisodicMemory) -> None:
    graph.remember_fact("Bob", "lives_in", "Paris")
    graph.remember_fact("Robert Smith", "works_at", "Acme")
    merged = graph.merge_entities("Bob", "Robert Smith", reason="same person")
    assert merged.id == "robert smith" and set(merged.aliases) == {"bob", "robert smith"}
    assert {f.predicate for f in graph.query_facts("bob")} == {"lives_in", "works_at"}
    moved = graph.remember_fact("Robert Smith", "lives_in", "Rome")
    assert [f.object for f in moved.superseded] == ["paris"]  # the merged entity's fact is closed
    assert graph.graph_stats().entities_merged == 1
    assert graph.merge_entities("bob", "Robert Smith") == merged  # already one entity: nothing to record
    assert graph.graph_stats().entities_merged == 1
    store = graph.store.graph_store  # type: ignore[attr-defined]
    with pytest.raises(FactNotFoundError):  # a merged entity cannot be merged again
        store.merge_entity("t1", "bob", "acme", T0, "again")


def test_resolve_follows_merge_chains_among_plain_entities(graph: EpisodicMemory) -> None:
    # Resolve reads which entities are merged in one statement, then walks only their chains.
    for name in ("Bob", "Robert", "Robert Smith", "Carol", "Dave"):
        graph.remember_fact(name, "likes", "tea")
    graph.merge_entities("Bob", "Robert", reason="same")
    graph.merge_entities("Robert", "Robert Smith", reason="same")  # bob -> robert -> robert smith
    store = graph.store.graph_store  # type: ignore[attr-defined]
    assert store.resolve("t1", ["bob", "carol", "robert", "unknown", "dave", "robert smith", "bob"]) == {
        "bob": "robert smith",
        "robert": "robert smith",
        "robert smith": "robert smith",
        "carol": "carol",
        "dave": "dave",
    }


def test_tenants_do_not_see_each_other(make_memory: MemoryFactory) -> None:
    a, b = make_memory(tenant_id="a", scope="tenant"), make_memory(tenant_id="b", scope="tenant")
    a.remember_fact("user", "lives_in", "Oslo")
    b.remember_fact("user", "lives_in", "Rome")
    assert [f.object for f in a.query_facts("user")] == ["oslo"]
    assert [f.object for f in b.query_facts("user")] == ["rome"]
    assert a.neighbours("rome") == [] and b.find_paths("user", "oslo") == []
    assert a.graph_stats().facts == 1


def test_session_scope_reads_its_session_only(make_memory: MemoryFactory) -> None:
    s1, s2 = make_memory(session_id="s1"), make_memory(session_id="s2")
    s1.remember_fact("user", "likes", "jazz")
    s2.remember_fact("user", "likes", "rock")
    assert [f.object for f in s1.query_facts("user")] == ["jazz"]
    assert {f.object for f in make_memory(scope="tenant").query_facts("user")} == {"jazz", "rock"}


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        (("user", "likes", "x"), {"confidence": 1.5}, "confidence"),
        (("user", "likes", "x"), {"valid_from": T0, "valid_until": T0 - DAY}, "valid_until"),
        ((" ", "likes", "x"), {}, "subject"),
        (("user", " ", "x"), {}, "predicate"),
        (("user", "likes", "x"), {"valid_from": T0.replace(tzinfo=None)}, "valid_from"),
        (("user", "likes", "x"), {"method": "magic"}, "method"),
    ],
)
def test_bad_facts_are_refused_and_nothing_is_stored(
    graph: EpisodicMemory, args: tuple[str, ...], kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(ValidationError, match=message.split(" (")[0]):
        graph.remember_fact(*args, **kwargs)  # type: ignore[arg-type]
    assert graph.graph_stats().facts == 0


def test_flags_relations_with_values_and_punctuation_names(graph: EpisodicMemory) -> None:
    flag = graph.remember_fact("user", "is_vegetarian").fact
    assert (flag.object, flag.value) == (None, "true")
    rated = graph.remember_fact("user", "rated", "Dune", value="5").fact
    again = graph.remember_fact("user", "rated", "Dune", value="4")
    assert not again.duplicate and again.superseded == ()  # rated is multi-valued: both kept
    assert (rated.object, rated.value) == ("dune", "5")
    odd = graph.remember_fact("<", "!!", ">").fact
    assert (odd.subject, odd.predicate, odd.object) == ("<", "!!", ">")
    assert graph.query_facts("<") == [odd]


def test_a_nul_is_refused_on_every_backend(graph: EpisodicMemory) -> None:
    with pytest.raises(ValidationError):
        graph.remember_fact("user", "likes", value="a\x00b")
    assert graph.graph_stats().facts == 0


def test_episodes_are_linked_to_their_entities(make_memory: MemoryFactory) -> None:
    memory = make_memory(scope="tenant")
    e1 = memory.remember_episode(
        "note", "Alice: we signed Acme Corp today, ticket INV-2024-001", tags=["sales"]
    )
    memory.remember_episode("note", "Bob booked a flight to Rome")
    assert [e.id for e in memory.episodes_about("acme corp")] == [e1.id]
    assert [e.id for e in memory.episodes_about("Alice")] == [e1.id]
    assert [e.id for e in memory.episodes_about("inv-2024-001")] == [e1.id]
    assert [e.id for e in memory.episodes_about("sales")] == [e1.id]
    assert memory.episodes_about("nobody") == []
    assert memory.graph_stats().episode_links >= 5  # sales, alice, acme corp, inv-2024-001; bob, rome


def test_recall_context_merges_valid_facts_and_episodes(
    make_memory: MemoryFactory, clock: FrozenClock
) -> None:
    memory = make_memory(scope="tenant")
    memory.remember_fact(
        "customer_123", "subscription_tier", value="pro", valid_from=T0 - 400 * DAY, importance=9
    )
    memory.remember_fact("customer_123", "reported", "login_bug", valid_from=T0 - 30 * DAY, confidence=0.8)
    memory.remember_fact("customer_123", "subscription_tier", value="enterprise", valid_from=T0 - 100 * DAY)
    ticket = memory.remember_episode("support", "customer_123 reported a login bug after the SSO change")
    context = memory.recall_context("customer_123")
    assert [e.id for e in context.entities] == ["customer_123"]
    assert [(r.fact.predicate, r.fact.value or r.fact.object) for r in context.facts] == [
        ("subscription_tier", "enterprise"),
        ("reported", "login_bug"),
    ]
    assert context.facts[0].breakdown == {"confidence": 1.0, "importance": 0.5, "score": 0.75}
    assert {h.episode.id for h in context.episodes} | {e.id for e in context.linked} == {ticket.id}
    then = memory.recall_context("what plan was customer_123 on?", as_of=T0 - 200 * DAY)
    assert [r.fact.value for r in then.facts] == ["pro"]
    assert context.to_dict()["facts"][0]["breakdown"]["score"] == 0.75


def test_export_and_import_restore_the_history_exactly(make_memory: MemoryFactory) -> None:
    source = make_memory(tenant_id="a", scope="tenant")
    source.remember_fact("Ana", "lives_in", "Berlin", valid_from=T0 - 300 * DAY)
    source.remember_fact("Ana", "lives_in", "Lisbon", valid_from=T0 - 10 * DAY, importance=7)
    rows = list(source.export_facts())
    target = make_memory(tenant_id="b", scope="tenant")
    report = target.import_facts([*rows, {"id": "broken"}])
    assert (report.stored, report.skipped, len(report.rejected)) == (2, 0, 1)
    assert target.import_facts(rows).skipped == 2
    mine = [{**r, "tenant_id": "a"} for r in target.export_facts()]
    assert mine == rows
    assert [f.object for f in target.query_facts("ana")] == ["lisbon"]


def test_retention_hides_old_facts_and_prune_deletes_them_with_their_links(
    make_memory: MemoryFactory, clock: FrozenClock
) -> None:
    """Facts follow the episodes' retention: past ``retention_days`` (by ``recorded_at``) they are
    gone from every fact read at once and deleted by a prune, unless never-forget (importance >= 9);
    the episode links of pruned episodes go with them, and another tenant's facts are untouched."""
    memory = make_memory(tenant_id="r", scope="tenant", retention_days=30, prune_probability=0.0)
    other = make_memory(tenant_id="r2", scope="tenant", retention_days=30, prune_probability=0.0)
    moved = memory.remember_fact("user", "lives in", "Berlin", importance=5).fact
    allergy = memory.remember_fact("user", "allergic to", "peanuts", importance=10).fact
    other.remember_fact("user", "lives in", "Oslo", importance=5)
    memory.remember_episode("note", "Alice introduced me to Bob")
    clock.advance(timedelta(days=10))
    fresh = memory.remember_fact("user", "likes", "jazz", importance=5).fact
    assert {f.id for f in memory.query_facts("user")} == {moved.id, allergy.id, fresh.id}
    clock.advance(timedelta(days=25))  # moved and the episode: 35 days old; fresh: 25
    kept = {allergy.id, fresh.id}
    assert {f.id for f in memory.query_facts("user")} == kept
    assert {f.id for f in memory.query_facts("user", as_of=T0 + DAY)} == {allergy.id}
    assert {f.id for f in memory.entity_timeline("user")} == kept
    assert {row["id"] for row in memory.export_facts()} == kept
    assert memory.episodes_about("alice") == []
    assert memory.graph_stats().facts == 3  # stored until a prune
    assert memory.prune(all_tenants=False) == 1  # the episode
    stats = memory.graph_stats()
    assert (stats.facts, stats.episode_links) == (2, 0)
    assert {f.id for f in memory.entity_timeline("user")} == kept
    assert other.graph_stats().facts == 1  # a tenant's prune leaves the others' facts


def test_as_of_with_known_at_answers_what_was_believed_true_then(
    graph: EpisodicMemory, clock: FrozenClock
) -> None:
    """Berlin (from a year ago) recorded at T0; at T0 + 30 days Lisbon, valid from T0 + 10 days."""
    graph.remember_fact("Dana", "lives in", "Berlin", valid_from=T0 - 365 * DAY)
    clock.advance(30 * DAY)
    graph.remember_fact("Dana", "lives in", "Lisbon", valid_from=T0 + 10 * DAY)

    def where(as_of: object, known_at: object) -> list[str | None]:
        return [f.object for f in graph.query_facts("dana", as_of=as_of, known_at=known_at)]  # type: ignore[arg-type]

    assert where(T0 + 20 * DAY, T0 + 15 * DAY) == ["berlin"]  # believed then, open-ended
    assert where(T0 + 20 * DAY, T0 + 31 * DAY) == ["lisbon"]
    assert where(T0 - DAY, T0 + 31 * DAY) == ["berlin"]  # history, as known now
    assert where(T0 - DAY, T0 - 2 * DAY) == []  # nothing recorded yet


def test_a_flag_is_refused_for_a_single_valued_predicate(graph: EpisodicMemory) -> None:
    """Without an object or a value a fact is the flag "true"; for lives_in it would retire the real value."""
    from memlane.tools import handle_tool_call

    graph.remember_fact("Dana", "lives_in", "Lisbon")
    with pytest.raises(ValidationError, match="single-valued"):
        graph.remember_fact("Dana", "lives in")
    answer = handle_tool_call(graph, "remember_fact", {"subject": "Dana", "predicate": "lives_in"})
    assert (answer["ok"], answer["error"]["type"]) == (False, "ValidationError")
    assert [f.object for f in graph.query_facts("dana")] == ["lisbon"]
    assert graph.remember_fact("Dana", "is vegetarian").fact.value == "true"  # multi-valued: a flag


def test_a_back_dated_value_ends_where_the_next_recorded_value_starts(graph: EpisodicMemory) -> None:
    """Berlin (from T0 - 4 years) closed by Lisbon (T0 - 1 year); then Paris from T0 - 6 years is history
    up to Berlin's start, not Lisbon's: one answer for every instant."""
    year = 365 * DAY
    graph.remember_fact("Dana", "lives in", "Berlin", valid_from=T0 - 4 * year)
    graph.remember_fact("Dana", "lives in", "Lisbon", valid_from=T0 - year)
    paris = graph.remember_fact("Dana", "lives in", "Paris", valid_from=T0 - 6 * year).fact
    assert paris.valid_until == T0 - 4 * year
    for years_ago, city in ((5, "paris"), (3, "berlin"), (0, "lisbon")):
        assert [f.object for f in graph.query_facts("dana", as_of=T0 - years_ago * year + DAY)] == [city]
    again = graph.remember_fact("Dana", "lives in", "Paris", valid_from=T0 - 6 * year)
    assert again.duplicate and again.fact.id == paris.id  # re-running an import stores nothing


def test_links_written_in_bulk_keep_one_row_per_link(make_memory: MemoryFactory) -> None:
    """A batch of links with repeats, then links already held: one row per (tenant, entity, episode)."""
    from memlane.stores.graph_base import EntityLink

    memory = make_memory(scope="tenant")
    graph = memory.store.graph_store  # type: ignore[attr-defined]
    links = [
        EntityLink("t", f"s{i % 3}", f"ent-{i % 7}", f"ep-{i:04d}", T0 + timedelta(seconds=i))
        for i in range(300)
    ]
    graph.link_episodes([*links, links[0], links[5]])  # repeats within one call
    graph.link_episodes(links[:50])  # links already held are kept, not doubled
    assert graph.counts("t", 0.0).episode_links == 300
    newest = [f"ep-{i:04d}" for i in range(300) if i % 7 == 3][::-1][:5]
    assert graph.linked_episodes("t", None, ["ent-3"], 5) == newest
    in_s1 = [f"ep-{i:04d}" for i in range(300) if i % 7 == 3 and i % 3 == 1][::-1]
    assert graph.linked_episodes("t", "s1", ["ent-3"], 100) == in_s1
    assert graph.linked_episodes("other", None, ["ent-3"], 5) == []
