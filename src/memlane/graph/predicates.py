"""The predicate registry: what each predicate means structurally (pure, no I/O).

A fact's predicate is first folded to its canonical name (:meth:`PredicateRegistry.canonical`:
lower-case, spaces and hyphens to ``_``, then a declared synonym such as ``enjoys -> likes`` or
``moved_to -> lives_in``). The canonical predicate then declares:

* its **cardinality**: ``single`` (a subject holds one current value: ``lives_in``,
  ``works_at``, ``subscription_tier``, ``uses_database``, ``diet``...) or ``multi`` (``likes``,
  ``knows``...). A new value of a single-valued predicate supersedes the current one, with the
  reason recorded; a multi-valued one is added beside it. Undeclared predicates are ``multi``:
  nothing is ever retired on a predicate memlane knows nothing about.
* its **opposite**, if any (``likes``/``dislikes``, ``owns``/``sold``, ``married_to``/
  ``divorced_from``...): a fact closes the current fact of the opposite predicate with the same
  subject and object.

Nothing here compares texts by similarity: a contradiction is a structural rule over canonical
predicates and resolved entities, so a weak textual match never retires a fact.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "DEFAULT_REGISTRY",
    "FACT_METHODS",
    "Cardinality",
    "PredicateRegistry",
    "PredicateSpec",
    "normalise_predicate",
]

FACT_METHODS = ("explicit", "llm", "import")
"""How a fact got in (its ``method``): entered explicitly, formed by an LLM, or imported."""

Cardinality = Literal["single", "multi"]

_SEPARATORS = re.compile(r"[\s\-]+")
_STRIP = re.compile(r"[^\w]+")


def normalise_predicate(predicate: str) -> str:
    """``"Works At"`` -> ``"works_at"``: lower-case, separators to ``_``, other punctuation dropped
    (a predicate of punctuation only keeps it, lower-cased: ``"!!"`` -> ``"!!"``)."""
    text = _SEPARATORS.sub("_", predicate.strip().casefold())
    return _STRIP.sub("", text).strip("_") or text


@dataclass(frozen=True, slots=True)
class PredicateSpec:
    """One canonical predicate.

    Attributes:
        name: Canonical name (``"lives_in"``).
        cardinality: ``"single"`` or ``"multi"``.
        opposite: The canonical predicate it excludes for the same subject and object, or ``None``.
    """

    name: str
    cardinality: Cardinality = "multi"
    opposite: str | None = None


@dataclass(frozen=True, slots=True)
class PredicateRegistry:
    """Declared predicates, their synonyms and opposites.

    Attributes:
        specs: ``{canonical name: spec}``.
        synonyms: ``{normalised alias: canonical name}`` (``"enjoys" -> "likes"``).
    """

    specs: Mapping[str, PredicateSpec] = field(default_factory=dict)
    synonyms: Mapping[str, str] = field(default_factory=dict)

    def canonical(self, predicate: str) -> str:
        """The canonical name of ``predicate`` (normalised, then its synonym if declared)."""
        name = normalise_predicate(predicate)
        return self.synonyms.get(name, name)

    def spec(self, canonical: str) -> PredicateSpec:
        """The spec of a canonical predicate (an undeclared one is multi-valued, with no opposite)."""
        return self.specs.get(canonical) or PredicateSpec(canonical)

    def is_single(self, canonical: str) -> bool:
        """Whether the predicate holds one current value per subject."""
        return self.spec(canonical).cardinality == "single"


def _registry() -> PredicateRegistry:
    single = (
        "lives_in",
        "works_at",
        "job_title",
        "subscription_tier",
        "uses_database",
        "diet",
        "relationship_status",
        "married_to",
        "partner_of",
        "drives",
        "primary_language",
        "timezone",
        "email",
        "phone",
        "age",
        "manager",
        "status",
        "favourite_colour",
        "favourite_food",
        "uses_editor",
        "uses_cloud",
    )
    opposites = {
        "likes": "dislikes",
        "owns": "sold",
        "married_to": "divorced_from",
        "supports": "opposes",
        "member_of": "left",
        "allergic_to": "not_allergic_to",
    }
    specs: dict[str, PredicateSpec] = {name: PredicateSpec(name, "single") for name in single}
    for a, b in opposites.items():
        specs[a] = PredicateSpec(a, specs.get(a, PredicateSpec(a)).cardinality, b)
        specs[b] = PredicateSpec(b, specs.get(b, PredicateSpec(b)).cardinality, a)
    synonyms = {
        "enjoys": "likes",
        "loves": "likes",
        "is_fond_of": "likes",
        "prefers": "likes",
        "likes_to_eat": "likes",
        "hates": "dislikes",
        "detests": "dislikes",
        "does_not_like": "dislikes",
        "lives_at": "lives_in",
        "resides_in": "lives_in",
        "moved_to": "lives_in",
        "based_in": "lives_in",
        "home_city": "lives_in",
        "works_for": "works_at",
        "employed_at": "works_at",
        "employed_by": "works_at",
        "employer": "works_at",
        "joined_company": "works_at",
        "tier": "subscription_tier",
        "plan": "subscription_tier",
        "subscription": "subscription_tier",
        "subscription_plan": "subscription_tier",
        "database": "uses_database",
        "migrated_to": "uses_database",
        "database_is": "uses_database",
        "eats": "diet",
        "diet_is": "diet",
        "is_married_to": "married_to",
        "spouse": "married_to",
        "wife": "married_to",
        "husband": "married_to",
        "divorced": "divorced_from",
        "dating": "partner_of",
        "boyfriend": "partner_of",
        "girlfriend": "partner_of",
        "bought": "owns",
        "has": "owns",
        "sold_the": "sold",
        "title": "job_title",
        "role": "job_title",
        "works_as": "job_title",
        "drives_a": "drives",
        "car": "drives",
        "editor": "uses_editor",
        "cloud_provider": "uses_cloud",
        "favorite_color": "favourite_colour",
        "favorite_food": "favourite_food",
        "reports_to": "manager",
        "knows_person": "knows",
    }
    return PredicateRegistry(specs, synonyms)


DEFAULT_REGISTRY = _registry()
"""memlane's built-in predicates (single-valued, opposites, synonyms); see the README's table."""
