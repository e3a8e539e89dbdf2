"""The knowledge graph: entities and bi-temporal facts beside the episodes.

* :mod:`memlane.graph.predicates`: the predicate registry (cardinality, opposites, synonyms).
* :mod:`memlane.graph.entities`: canonical entity keys and offline mention extraction.
* :mod:`memlane.graph.contradiction`: structural contradictions (pure).
* :mod:`memlane.graph.methods`: the operations behind :class:`memlane.EpisodicMemory`.

Storage: :mod:`memlane.stores.graph_base` (the ``GraphStore`` protocol, both backends).
"""

from memlane.graph.methods import FACT_METHODS, MIN_CONFIDENCE, FactResult, GraphStats, Neighbour
from memlane.graph.predicates import DEFAULT_REGISTRY, PredicateRegistry, PredicateSpec
from memlane.stores.graph_base import Entity, Fact

__all__ = [
    "DEFAULT_REGISTRY",
    "FACT_METHODS",
    "MIN_CONFIDENCE",
    "Entity",
    "Fact",
    "FactResult",
    "GraphStats",
    "Neighbour",
    "PredicateRegistry",
    "PredicateSpec",
]
