"""What the inspector shows of the knowledge graph, read through memlane's public API only.

Every read goes through :func:`memlane.server.inspector.data.reader` for one tenant (``tenant``
scope, retrievals not tracked): the entity list from ``export_facts``, an entity's page from
``neighbours`` (the entity and its neighbourhood), ``query_facts`` (its current facts, and the
edges between the neighbours), ``entity_timeline`` (its history) and ``episodes_about`` (the
episodes linked to it on write); the entities an episode names from
:func:`memlane.graph.extract_mentions` (the extractor that linked them) resolved by ``neighbours``.
The knowledge graph belongs to one tenant: an admin viewing every tenant picks one first.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from datetime import datetime

from memlane import Episode, EpisodicMemory, StoreError, ValidationError
from memlane.graph import Entity, Fact, Neighbour, extract_mentions
from memlane.server.inspector.data import reader

__all__ = [
    "MAX_GRAPH_NODES",
    "EntityRow",
    "EntityView",
    "entity_rows",
    "entity_view",
    "is_current",
    "mentioned_entities",
]

logger = logging.getLogger(__name__)

MAX_GRAPH_NODES = 40
"""Most entities the neighbourhood graph draws (the nearest first); the page says when it cut."""

_LINKED_EPISODES = 20
_MENTIONS = 12


def is_current(fact: Fact, now: datetime) -> bool:
    """Whether ``fact`` is neither retired nor ended at ``now``."""
    return fact.invalidated_at is None and (fact.valid_until is None or fact.valid_until > now)


def _tenant(tenant: str | None) -> str:
    if tenant is None:
        raise ValidationError(
            "the knowledge graph belongs to one tenant: choose a tenant to view its entities"
        )
    return tenant


@dataclass(frozen=True, slots=True)
class EntityRow:
    """One entity of the list. Attributes: id: Its key. name: Its display name. current: Facts about
    it (as subject or object) now current. total: Every fact about it, retired ones included."""

    id: str
    name: str
    current: int
    total: int


def entity_rows(
    base: EpisodicMemory, tenant: str | None, query: str | None, limit: int
) -> tuple[list[EntityRow], int]:
    """The tenant's entities that facts name (those matching ``query`` in their name or key), most
    current facts first, and how many matched.

    Raises:
        ValidationError: no tenant chosen, or a bad tenant id. StoreError: the store failed.
    """
    memory = reader(base, _tenant(tenant))
    now = base.clock.now()
    names: dict[str, str] = {}
    current: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for row in memory.export_facts():
        live = row["invalidated_at"] is None and (
            row["valid_until"] is None or datetime.fromisoformat(row["valid_until"]) > now
        )
        for key, name in ((row["subject"], row["subject_name"]), (row["object"], row.get("object_name"))):
            if key is not None:
                names.setdefault(key, name or key)
                current[key] += live
                total[key] += 1
    needle = (query or "").casefold()
    found = [
        EntityRow(key, name, current[key], total[key])
        for key, name in names.items()
        if needle in key.casefold() or needle in name.casefold()
    ]
    found.sort(key=lambda r: (-r.current, -r.total, r.name.casefold(), r.id))
    return found[:limit], len(found)


@dataclass(frozen=True, slots=True)
class EntityView:
    """One entity's page.

    Attributes:
        entity: The entity (its aliases, type, merges).
        current: Its facts current now, by ``valid_from``.
        history: Every fact about it, current and retired, by ``valid_from`` (the timeline).
        linked: Episodes linked to it on write, newest first.
        neighbours: Entities within ``depth`` hops, nearest first (itself at 0), at most
            :data:`MAX_GRAPH_NODES`.
        edges: The current facts between two of ``neighbours`` (the graph's edges).
        depth: The hops walked.
        cut: How many more neighbours the walk found than the graph draws.
        now: The memory clock's now.
    """

    entity: Entity
    current: list[Fact]
    history: list[Fact]
    linked: list[Episode]
    neighbours: list[Neighbour]
    edges: list[Fact]
    depth: int
    cut: int
    now: datetime


def _edges(memory: EpisodicMemory, nodes: list[Neighbour]) -> list[Fact]:
    ids = {n.entity.id for n in nodes}
    edges: dict[str, Fact] = {}
    for node in nodes:
        for fact in memory.query_facts(node.entity.id):
            if fact.object is not None and fact.subject in ids and fact.object in ids:
                edges.setdefault(fact.id, fact)
    return sorted(edges.values(), key=lambda f: (f.subject, f.predicate, f.object or "", f.id))


def entity_view(base: EpisodicMemory, tenant: str | None, name: str, depth: int) -> EntityView | None:
    """The page of the entity ``name`` (a name or alias) in ``tenant``, or ``None`` if unknown.

    Raises:
        ValidationError: no tenant chosen, a bad name or depth. StoreError: the store failed.
    """
    memory = reader(base, _tenant(tenant))
    near = memory.neighbours(name, depth)
    if not near:
        return None
    entity = near[0].entity
    shown = near[:MAX_GRAPH_NODES]
    return EntityView(
        entity=entity,
        current=memory.query_facts(entity.id),
        history=memory.entity_timeline(entity.id),
        linked=memory.episodes_about(entity.id, _LINKED_EPISODES),
        neighbours=shown,
        edges=_edges(memory, shown),
        depth=depth,
        cut=len(near) - len(shown),
        now=base.clock.now(),
    )


def mentioned_entities(base: EpisodicMemory, episode: Episode) -> list[Entity]:
    """The known entities ``episode`` names (the offline extractor's mentions, resolved), in order;
    ``[]`` when the store keeps no graph or fails (the episode page still shows the episode)."""
    memory = reader(base, episode.tenant_id)
    found: dict[str, Entity] = {}
    for mention in extract_mentions(episode.content, episode.tags, episode.metadata, limit=_MENTIONS):
        try:
            near = memory.neighbours(mention.name, 1)
        except ValidationError:  # a mention no name may be (e.g. over-long): not an entity
            continue
        except StoreError as exc:  # no graph in this store, or it failed: no entities to list
            logger.warning("inspector: the entities of episode %r were not read: %s", episode.id, exc)
            return []
        if near and near[0].hops == 0:
            found.setdefault(near[0].entity.id, near[0].entity)
    return list(found.values())
