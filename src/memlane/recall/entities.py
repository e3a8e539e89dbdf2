"""The knowledge-graph entity signal of recall: episodes linked to the query's entities and their neighbours.

A recall stage between candidate retrieval and context (:mod:`memlane.recall.pipeline`), on when the
profile's :attr:`~memlane.config.profile.Boosts.graph` is above 0:

1. **Query entities** (:func:`query_entity_keys`): the offline extractor that links episodes on write,
   :func:`memlane.mentions.extract_mentions`, run over the query (one set of rules for both),
   each mention reduced to its :func:`~memlane.mentions.entity_key`.
2. **Resolution** (:func:`resolve_query_entities`): the keys that are stored aliases in the recall's
   tenant, each with every entity merged into it (its *members*) and its 1-hop neighbours over the
   object-facts valid and current at the recall's time slice, in the recall's session when the
   memory is session-scoped (:meth:`memlane.stores.graph_base.GraphStore.neighbours`). Under
   ``global`` scope the stage does not run (the graph is per tenant).
3. **Candidates** (:meth:`memlane.stores.base.Store.linked_episodes`): the links of the recall's
   candidates to those entities, plus up to ``pool // 5`` further episodes passing the recall's
   filter that are linked to them (most entities first, then newest) with their cosine to the query.
   Everything is one statement per step, never one per candidate.
4. **Signal** (:func:`graph_signal`, pure)::

       g_i = sum_q w_q * s_q(i) / m,   s_q(i) = 1 if linked to a member of q,
                                               nu if only to a 1-hop neighbour of q, else 0

   over the ``m`` query entities linked to at least one candidate (one known only to another session
   does not dilute the others), with ``nu`` the profile's
   :attr:`~memlane.config.profile.Boosts.graph_neighbours` and ``w_q`` the specificity of q among the
   candidates (:func:`entity_weights`): ``w_q = 1 - df_q / (n + 1)`` (``df_q`` the candidates linked to
   q or its neighbours, ``n`` the candidates), so an entity most candidates mention (the speaker of a
   two-person chat) lifts little and a rare one lifts its few episodes fully.
   The ranking lifts relevance by ``1 - (1 - r) * (1 - b * g_i)``
   (:func:`memlane.recall.relevance.boost_factor`) and lists it among the hit's boosts as ``"graph"``
   with strength ``b * g_i``.

Scope isolation: only the recall's tenant's aliases, facts and links are read; the links count only
for episodes that pass the recall's filter (its session under ``session`` scope), and the facts only
in its session under that scope; the weights are computed over the recall's own candidates.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memlane.config.profile import RankingProfile
from memlane.mentions import extract_mentions
from memlane.recall.candidates import MergedCandidates, with_extra
from memlane.stores.base import EpisodeFilter, LinkedEpisodes, Store
from memlane.stores.graph_base import FactFilter, GraphStore, SupportsGraph

__all__ = [
    "MAX_QUERY_ENTITIES",
    "GraphStage",
    "QueryEntity",
    "entity_weights",
    "graph_signal",
    "graph_stage",
    "links_by_candidate",
    "query_entity_keys",
    "resolve_query_entities",
]

FloatArray = NDArray[np.float64]

MAX_QUERY_ENTITIES = 8
"""At most this many of the query's mentions are resolved (first found first)."""

_TIME_FIELDS = (
    "valid_at",
    "still_valid_at",
    "recorded_by",
    "current_at",
    "retained_after",
    "never_forget_from",
)
"""The recall's time slice and retention, which its facts follow too (``recorded_at`` for ``created_at``)."""


@dataclass(frozen=True, slots=True)
class QueryEntity:
    """An entity the query names, resolved in the recall's scope.

    Attributes:
        key: The canonical entity id the mention resolved to.
        members: Entity ids that stand for it (it and every entity merged into it).
        neighbours: Entity ids one object-fact away from a member (members excluded).
    """

    key: str
    members: frozenset[str]
    neighbours: frozenset[str] = frozenset()

    @property
    def ids(self) -> frozenset[str]:
        """Every entity id whose links count for it (members and neighbours)."""
        return self.members | self.neighbours


def query_entity_keys(query: str) -> list[str]:
    """The entity keys of the mentions the offline extractor finds in ``query`` (first found first).

    The same rules as on write (:func:`memlane.mentions.extract_mentions`: speakers, e-mails,
    ids, quoted and capitalised names), at most :data:`MAX_QUERY_ENTITIES`.
    """
    return [m.key for m in extract_mentions(query, limit=MAX_QUERY_ENTITIES)]


def _fact_filter(flt: EpisodeFilter, tenant_id: str, ids: Sequence[str]) -> FactFilter:
    """The facts a recall under ``flt`` may walk: its tenant, its session, its time slice, its retention."""
    times: dict[str, Any] = {name: getattr(flt, name) for name in _TIME_FIELDS}
    return FactFilter(tenant_id, flt.session_id, tuple(ids), **times)


def resolve_query_entities(
    graph: GraphStore, flt: EpisodeFilter, tenant_id: str, keys: Sequence[str], hops: int = 1
) -> list[QueryEntity]:
    """The stored entities ``keys`` stand for in ``tenant_id``, with members and ``hops``-hop neighbours.

    Args:
        graph: The store's graph.
        flt: The recall's filter: its session and time slice limit the facts walked.
        tenant_id: The recall's tenant.
        keys: Entity keys (:func:`query_entity_keys`).
        hops: Neighbourhood depth (0: none).

    Returns:
        One :class:`QueryEntity` per distinct canonical entity, in the order of ``keys``.

    Raises:
        StoreError: the store failed.
    """
    if not keys:
        return []
    resolved = graph.resolve(tenant_id, list(keys))
    canon = list(dict.fromkeys(resolved[k] for k in keys if k in resolved))
    out: list[QueryEntity] = []
    for key in canon:
        members = frozenset(graph.members(tenant_id, key))
        near: frozenset[str] = frozenset()
        if hops > 0:
            found = graph.neighbours(_fact_filter(flt, tenant_id, sorted(members)), hops)
            near = frozenset(node for node, n in found.items() if n > 0) - members
        out.append(QueryEntity(key, members, near))
    return out


def links_by_candidate(keys: NDArray[np.int64], linked: LinkedEpisodes) -> list[frozenset[str]]:
    """``[n]`` the entity ids each candidate (by row key, parallel to ``keys``) is linked to."""
    found: dict[int, set[str]] = {}
    for key, entity in linked.links:
        found.setdefault(key, set()).add(entity)
    return [frozenset(found.get(int(k), ())) for k in keys]


def _shares(links: Sequence[Collection[str]], entity: QueryEntity, neighbour_share: float) -> FloatArray:
    """``[n]`` s_q: 1 for a link to a member, ``neighbour_share`` for one to a neighbour only, else 0."""
    return np.fromiter(
        (
            1.0 if entity.members & set(ids) else neighbour_share if entity.neighbours & set(ids) else 0.0
            for ids in links
        ),
        dtype=np.float64,
        count=len(links),
    )


def entity_weights(links: Sequence[Collection[str]], entities: Sequence[QueryEntity]) -> FloatArray:
    """``[m]`` the specificity ``1 - df_q / (n + 1)`` of each query entity among the ``n`` candidates.

    ``df_q``: the candidates linked to q's members or neighbours. In (0, 1]: ``1 / (n + 1)`` when every
    candidate is linked to it (smoothed as if one more candidate were not, so a small scope where
    every candidate is about the entity still lifts them a little), 1 when none is.
    """
    n = len(links)
    df = np.array([sum(1 for ids in links if e.ids & set(ids)) for e in entities], dtype=np.float64)
    return np.asarray(1.0 - df / (n + 1), dtype=np.float64)


def graph_signal(
    links: Sequence[Collection[str]],
    entities: Sequence[QueryEntity],
    neighbour_share: float,
    weights: FloatArray | None = None,
) -> FloatArray:
    """``[n]`` the graph entity signal ``g_i`` in [0, 1] of the candidates (module docstring, step 4).

    Args:
        links: ``[n]`` the entity ids each candidate is linked to (:func:`links_by_candidate`).
        entities: The query's resolved entities (:func:`resolve_query_entities`).
        neighbour_share: ``nu`` in [0, 1]: what a link to a 1-hop neighbour counts for.
        weights: ``[m]`` per-entity weights ``w_q`` >= 0, or ``None`` for :func:`entity_weights`.

    Returns:
        ``sum_q w_q s_q(i) / m``, ``m`` the query entities linked to at least one candidate (an entity
        no episode of the recall's scope is linked to says nothing about it: it may exist only in
        another session); all 0 without such entities.
    """
    n = len(links)
    if not entities or n == 0:
        return np.zeros(n)
    w = entity_weights(links, entities) if weights is None else np.asarray(weights, dtype=np.float64)
    shares = np.vstack([_shares(links, e, neighbour_share) for e in entities])
    present = shares.max(axis=1) > 0.0
    if not present.any():
        return np.zeros(n)
    signal = (w[present] / int(present.sum())) @ shares[present]
    return np.asarray(np.clip(signal, 0.0, 1.0), dtype=np.float64)


@dataclass(frozen=True, slots=True)
class GraphStage:
    """The graph stage of one episode recall (module docstring, steps 1-4).

    Attributes:
        store: The episode store (its :meth:`~memlane.stores.base.Store.linked_episodes` and vectors).
        graph: Its knowledge graph.
        tenant_id: The recall's tenant.
        neighbour_share: ``nu`` (:attr:`memlane.config.profile.Boosts.graph_neighbours`).
        extra: At most this many episodes found only through the graph join the candidates.
    """

    store: Store
    graph: GraphStore
    tenant_id: str
    neighbour_share: float
    extra: int

    def run(
        self,
        flt: EpisodeFilter,
        query: str,
        candidates: MergedCandidates,
        vector: NDArray[np.float32] | None,
    ) -> tuple[MergedCandidates, FloatArray | None]:
        """The candidates (with the graph's extra episodes) and their graph signal (``None``: no entity).

        Raises:
            StoreError: the store failed.
        """
        entities = resolve_query_entities(self.graph, flt, self.tenant_id, query_entity_keys(query))
        if not entities:
            return candidates, None
        ids = sorted({i for e in entities for i in e.ids})
        linked = self.store.linked_episodes(
            flt, self.tenant_id, ids, [int(k) for k in candidates.keys], self.extra
        )
        merged = with_extra(
            candidates,
            linked.extra_keys,
            self._cosines(linked.extra_ids, vector),
            linked.created_at_seconds,
            linked.importance,
        )
        links = links_by_candidate(merged.keys, linked)
        return merged, graph_signal(links, entities, self.neighbour_share)

    def _cosines(self, ids: Sequence[str], vector: NDArray[np.float32] | None) -> FloatArray:
        """``[k]`` cosine of each episode's stored vector to the query (NaN: no vector or no query vector)."""
        out = np.full(len(ids), np.nan)
        if vector is None or not ids:
            return out
        found = self.store.vectors(list(ids))
        q = np.asarray(vector, dtype=np.float64)
        for i, eid in enumerate(ids):
            v = found.get(eid)
            if v is not None:
                norm = float(np.linalg.norm(v)) * float(np.linalg.norm(q))
                out[i] = float(np.dot(v, q) / norm) if norm > 0 else np.nan
        return out


def graph_stage(store: Store, flt: EpisodeFilter, profile: RankingProfile, top_n: int) -> GraphStage | None:
    """The graph stage of a recall under ``flt``, or ``None`` when it does not run.

    It runs when the profile's :attr:`~memlane.config.profile.Boosts.graph` is above 0, the store keeps
    a knowledge graph and the recall has one tenant (not ``global`` scope). Extra candidates: ``top_n // 5``.
    """
    if profile.boosts.graph <= 0.0 or flt.tenant_id is None or not isinstance(store, SupportsGraph):
        return None
    return GraphStage(store, store.graph_store, flt.tenant_id, profile.boosts.graph_neighbours, top_n // 5)
