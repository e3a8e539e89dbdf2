"""The knowledge graph: entities and bi-temporal facts beside the episodes.

* :mod:`memlane.graph.predicates`: the predicate registry (cardinality, opposites, synonyms).
* :mod:`memlane.mentions` (a leaf, beside the text analysis, since recall reads a query's entities with
  the same rules): canonical entity keys and offline mention extraction.
* :mod:`memlane.graph.contradiction`: structural contradictions (pure).
* :mod:`memlane.graph.walks`: the bounds and defaults of ``neighbours`` and ``find_paths``.
* :mod:`memlane.graph.methods`: the operations behind :class:`memlane.EpisodicMemory`.

Storage: :mod:`memlane.stores.graph_base` (the ``GraphStore`` protocol, both backends).
"""

from typing import TYPE_CHECKING

from memlane.lazy import lazy_exports

if TYPE_CHECKING:
    from memlane.graph.methods import MIN_CONFIDENCE, FactResult, GraphStats, Neighbour
    from memlane.graph.predicates import DEFAULT_REGISTRY, FACT_METHODS, PredicateRegistry, PredicateSpec
    from memlane.graph.walks import (
        DEFAULT_NEIGHBOUR_DEPTH,
        DEFAULT_PATH_DEPTH,
        DEFAULT_PATH_LIMIT,
        MAX_GRAPH_DEPTH,
        MAX_PATHS,
    )
    from memlane.mentions import Mention, extract_mentions
    from memlane.stores.graph_base import Entity, Fact

_HOMES: dict[str, tuple[str, ...]] = {
    "memlane.mentions": ("Mention", "extract_mentions"),
    "memlane.graph.methods": ("MIN_CONFIDENCE", "FactResult", "GraphStats", "Neighbour"),
    "memlane.graph.predicates": ("DEFAULT_REGISTRY", "FACT_METHODS", "PredicateRegistry", "PredicateSpec"),
    "memlane.graph.walks": (
        "DEFAULT_NEIGHBOUR_DEPTH",
        "DEFAULT_PATH_DEPTH",
        "DEFAULT_PATH_LIMIT",
        "MAX_GRAPH_DEPTH",
        "MAX_PATHS",
    ),
    "memlane.stores.graph_base": ("Entity", "Fact"),
}
__getattr__, __dir__ = lazy_exports(__name__, globals(), _HOMES)
"""Names imported on first use (:mod:`memlane.lazy`): the request declarations read
:data:`FACT_METHODS` and the walks' bounds without importing the engine (``memlane --help``
loads no numpy)."""

__all__ = [
    "DEFAULT_NEIGHBOUR_DEPTH",
    "DEFAULT_PATH_DEPTH",
    "DEFAULT_PATH_LIMIT",
    "DEFAULT_REGISTRY",
    "FACT_METHODS",
    "MAX_GRAPH_DEPTH",
    "MAX_PATHS",
    "MIN_CONFIDENCE",
    "Entity",
    "Fact",
    "FactResult",
    "GraphStats",
    "Mention",
    "Neighbour",
    "PredicateRegistry",
    "PredicateSpec",
    "extract_mentions",
]
