"""The knowledge graph's pure rules: predicate folding, entity keys, mention extraction, the write plan."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from memlane.graph.contradiction import plan
from memlane.graph.predicates import DEFAULT_REGISTRY, normalise_predicate
from memlane.mentions import entity_key, extract_mentions
from memlane.stores.graph_base import Fact

T = datetime(2025, 1, 1, tzinfo=UTC)


def fact(fid: str, predicate: str, target: str, *, at: datetime = T, confidence: float = 1.0) -> Fact:
    return Fact(fid, "t", "s", "user", predicate, target, None, at, None, at, confidence=confidence)


@pytest.mark.parametrize(
    ("given", "canonical"),
    [
        ("Works At", "works_at"),
        ("works for", "works_at"),
        ("moved-to", "lives_in"),
        ("enjoys", "likes"),
        ("Favorite Color", "favourite_colour"),
        ("migrated_to", "uses_database"),
        ("visited", "visited"),
        ("!!", "!!"),
    ],
)
def test_predicates_fold_to_their_canonical_name(given: str, canonical: str) -> None:
    assert DEFAULT_REGISTRY.canonical(given) == canonical


def test_cardinality_and_opposites_are_declared() -> None:
    assert DEFAULT_REGISTRY.is_single("lives_in") and DEFAULT_REGISTRY.is_single("subscription_tier")
    assert not DEFAULT_REGISTRY.is_single("likes") and not DEFAULT_REGISTRY.is_single("never_declared")
    assert DEFAULT_REGISTRY.spec("likes").opposite == "dislikes"
    assert DEFAULT_REGISTRY.spec("dislikes").opposite == "likes"
    assert DEFAULT_REGISTRY.spec("married_to").cardinality == "single"
    assert normalise_predicate("  Is  fond-of ") == "is_fond_of"


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("Acme Corp", "acme corp"),
        (" ACME  corp ", "acme corp"),
        ("The Acme, Corp.", "acme corp"),
        ("the", "the"),
    ],
)
def test_entity_keys_fold_case_spacing_and_punctuation(name: str, key: str) -> None:
    assert entity_key(name) == key


def test_mentions_are_found_without_a_model() -> None:
    found = extract_mentions(
        "Alice: I met Bob Smith at Acme Corp. Ticket INV-2024-001 for customer_123 went to "
        'bob@acme.io re "Falcon".',
        ["work"],
    )
    assert [(m.name, m.entity_type) for m in found] == [
        ("work", "tag"),
        ("Alice", "speaker"),
        ("bob@acme.io", "email"),
        ("INV-2024-001", "id"),
        ("customer_123", "id"),
        ("Falcon", "quoted"),
        ("Bob Smith", "name"),
        ("Acme Corp", "name"),
    ]
    assert extract_mentions("The weather is nice. Then we left on Monday.") == []


def test_a_single_valued_value_supersedes_and_an_older_one_becomes_history() -> None:
    old = replace(fact("a", "lives_in", "paris", at=T), predicate="lives_in")
    new = fact("b", "lives_in", "berlin", at=T + timedelta(days=9))
    decided = plan(new, [old], DEFAULT_REGISTRY, 0.7)
    assert [c.old_id for c in decided.closures] == ["a"]
    assert decided.closures[0].valid_until == new.valid_from
    assert decided.closures[0].reason == "lives_in is single-valued: 'paris' -> 'berlin'"
    older = fact("c", "lives_in", "rome", at=T - timedelta(days=9))
    history = plan(older, [old], DEFAULT_REGISTRY, 0.7)
    assert history.closures == () and history.fact.valid_until == old.valid_from


def test_duplicates_opposites_multi_values_and_weak_facts() -> None:
    likes = fact("a", "likes", "coffee")
    assert plan(fact("b", "likes", "coffee"), [likes], DEFAULT_REGISTRY, 0.7).duplicate_of == likes
    assert plan(fact("b", "likes", "tea"), [likes], DEFAULT_REGISTRY, 0.7).closures == ()
    flipped = plan(fact("b", "dislikes", "coffee"), [likes], DEFAULT_REGISTRY, 0.7)
    assert [c.old_id for c in flipped.closures] == ["a"]
    assert plan(fact("b", "dislikes", "tea"), [likes], DEFAULT_REGISTRY, 0.7).closures == ()
    weak = fact("b", "works_at", "globex", confidence=0.5)
    assert plan(weak, [fact("a", "works_at", "acme")], DEFAULT_REGISTRY, 0.7).closures == ()
