"""The knowledge graph behind :class:`memlane.EpisodicMemory`: free functions over a context.

:func:`remember_fact` (resolve entities, fold the predicate, plan the structural contradictions
of :mod:`memlane.graph.contradiction`, write atomically), :func:`query_facts` (the facts valid
at ``as_of`` and known at ``known_at``), :func:`entity_timeline`, :func:`neighbours`,
:func:`find_paths`, :func:`merge_entities`, :func:`link_episodes` (offline entity extraction on
write) and :func:`graph_stats`. Their documentation is the facade's.

Scope: entities belong to the memory's tenant; facts carry the writer's session, and a memory
with ``session`` scope reads only its session's facts (``tenant`` and ``global`` scope read
the tenant's).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from memlane.context import MemoryContext
from memlane.errors import StoreError, ValidationError
from memlane.graph.contradiction import plan
from memlane.graph.predicates import DEFAULT_REGISTRY, FACT_METHODS, PredicateRegistry
from memlane.graph.walks import DEFAULT_NEIGHBOUR_DEPTH, DEFAULT_PATH_DEPTH, DEFAULT_PATH_LIMIT, MAX_PATHS
from memlane.mentions import Mention, entity_key, extract_mentions_batch
from memlane.models import Episode, Scope
from memlane.stores.graph_base import (
    Entity,
    EntityLink,
    EntityWrite,
    Fact,
    FactFilter,
    GraphStore,
    SupportsGraph,
)
from memlane.validation import (
    MAX_GRAPH_DEPTH,
    check_choice,
    check_fraction,
    check_identifier,
    check_limit,
    check_text,
    check_timestamp,
    clamp_importance,
)

__all__ = [
    "FACT_METHODS",
    "MIN_CONFIDENCE",
    "FactResult",
    "GraphStats",
    "Neighbour",
    "entity_timeline",
    "facts_from_source",
    "find_paths",
    "graph_stats",
    "link_episodes",
    "merge_entities",
    "neighbours",
    "query_facts",
    "remember_fact",
    "resolve_name",
    "session_filter",
]

MIN_CONFIDENCE = 0.7
"""Confidence a fact needs to retire another, and under which a current fact counts as invalid
in :func:`graph_stats` (the seed's minimum confidence to store a triple)."""

FLAG_VALUE = "true"
"""The value of a fact given neither an object nor a value (a flag: ``(user, is_vegetarian)``)."""

_TIMELINE_LIMIT = 10_000
_QUERY_LIMIT = 1000


@dataclass(frozen=True, slots=True)
class FactResult:
    """What :func:`remember_fact` did.

    Attributes:
        fact: The stored fact, or the current one it duplicates (then nothing was stored).
        duplicate: Whether ``fact`` was already held (the duplicate was merged into it, recorded).
        superseded: The facts the new one closed (single-valued predicate or opposite), each
            now with ``invalidated_at``, ``superseded_by`` and ``supersede_reason``.
    """

    fact: Fact
    duplicate: bool = False
    superseded: tuple[Fact, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "fact": self.fact.to_dict(),
            "duplicate": self.duplicate,
            "superseded": [f.to_dict() for f in self.superseded],
        }


@dataclass(frozen=True, slots=True)
class Neighbour:
    """An entity near another. Attributes: entity: It. hops: Distance in facts (0 = the start)."""

    entity: Entity
    hops: int

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {"entity": self.entity.to_dict(), "hops": self.hops}


@dataclass(frozen=True, slots=True)
class GraphStats:
    """The health of a tenant's graph (seed 002's quality gates).

    Attributes:
        facts: Fact rows (current and retired). current: Facts neither retired nor ended.
        sessions: Sessions holding facts. per_session: Fact rows per session.
        max_per_session: Most fact rows of one session (the explosion gate: < 100).
        average_confidence: Mean confidence of the current facts (gate: >= 0.6).
        invalid: Current facts that are dangling, below :data:`MIN_CONFIDENCE`, or one of several
            current values of a single-valued predicate. invalid_share: ``invalid / current``
            (gate: < 0.05). dangling / below_confidence / contradictory: its three parts.
        duplicates_merged: Duplicate facts folded into one held (recorded merges).
        entities_merged: Entities merged into another. entities: Entities. episode_links:
            Episode -> entity links.
        problems: The gates this graph fails (empty = healthy).
    """

    facts: int
    current: int
    sessions: int
    per_session: dict[str, int] = field(default_factory=dict)
    max_per_session: int = 0
    average_confidence: float = 0.0
    invalid: int = 0
    invalid_share: float = 0.0
    dangling: int = 0
    below_confidence: int = 0
    contradictory: int = 0
    duplicates_merged: int = 0
    entities_merged: int = 0
    entities: int = 0
    episode_links: int = 0
    problems: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {name: (list(v) if isinstance(v, tuple) else v) for name, v in _fields(self).items()}


def _fields(stats: GraphStats) -> dict[str, Any]:
    return {name: getattr(stats, name) for name in GraphStats.__dataclass_fields__}


# -- the parts ---------------------------------------------------------------------------------


def graph_store(ctx: MemoryContext) -> GraphStore:
    """The context's store's graph companion.

    Raises:
        StoreClosedError: the memory is closed. StoreError: the store keeps no graph.
    """
    ctx.check_open()
    store = ctx.store
    if not isinstance(store, SupportsGraph):
        raise StoreError(f"{type(store).__name__} does not store a knowledge graph")
    return store.graph_store


def session_filter(ctx: MemoryContext) -> str | None:
    """The session a read is limited to: the memory's under ``session`` scope, else ``None``."""
    return ctx.session_id if Scope(ctx.config.scope) is Scope.SESSION else None


def _name(value: object, what: str) -> tuple[str, str]:
    name = check_identifier(value, what)
    return name, entity_key(name)


def _ensure(
    graph: GraphStore, ctx: MemoryContext, names: Sequence[tuple[str, str, str]], at: datetime
) -> dict[str, str]:
    """``{key: canonical entity id}`` for ``(name, key, type)`` names, creating the unknown ones."""
    keys = [k for _, k, _ in names]
    known = graph.resolve(ctx.tenant_id, keys)
    missing = [EntityWrite(k, n, t, k, at) for n, k, t in names if k not in known]
    if missing:
        graph.write_entities(ctx.tenant_id, missing)
        known.update(graph.resolve(ctx.tenant_id, [w.id for w in missing]))
    return known


def resolve_name(ctx: MemoryContext, name: str) -> str | None:
    """The canonical entity id a name or alias stands for in the memory's tenant, or ``None``."""
    key = entity_key(name)
    return graph_store(ctx).resolve(ctx.tenant_id, [key]).get(key) if key else None


def _resolve(ctx: MemoryContext, graph: GraphStore, entity: object, what: str = "entity") -> list[str]:
    """The entity ids ``entity`` stands for (it and every entity merged into it); empty if unknown."""
    _, key = _name(entity, what)
    found = graph.resolve(ctx.tenant_id, [key]).get(key)
    return [] if found is None else graph.members(ctx.tenant_id, found)


# -- writing -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Input:
    subject: tuple[str, str]
    predicate: str
    raw_predicate: str
    object: tuple[str, str] | None
    value: str | None
    valid_from: datetime
    valid_until: datetime | None
    confidence: float
    importance: float | None
    types: tuple[str, str]
    sources: tuple[str | None, str | None]
    method: str


def _check(args: dict[str, Any], now: datetime, registry: PredicateRegistry) -> _Input:
    """Every field checked on its own first (the interfaces' order of errors), then the cross-field rules."""
    subject = _name(args["subject"], "subject")
    raw = check_identifier(args["predicate"], "predicate")
    obj, value = args.get("object"), args.get("value")
    if obj is None and value is None and registry.is_single(registry.canonical(raw)):
        raise ValidationError(  # a flag would replace the held value with "true" (a fresh user's find)
            f"{raw!r} is single-valued: give an object or a value (a flag without one is for "
            "multi-valued predicates such as 'is_vegetarian')"
        )
    item = _Input(
        subject=subject,
        predicate=registry.canonical(raw),
        raw_predicate=raw,
        object=None if obj is None else _name(obj, "object"),
        value=(None if obj is not None else FLAG_VALUE)
        if value is None
        else check_text(value, "value").strip(),
        valid_from=now if args.get("valid_from") is None else _instant(args["valid_from"], "valid_from"),
        valid_until=_opt_instant(args.get("valid_until"), "valid_until"),
        confidence=1.0
        if args.get("confidence") is None
        else check_fraction(args["confidence"], "confidence"),
        importance=clamp_importance(args.get("importance")),
        types=(
            _opt_id(args.get("subject_type"), "subject_type") or "thing",
            _opt_id(args.get("object_type"), "object_type") or "thing",
        ),
        sources=(
            _opt_id(args.get("source_episode_id"), "source_episode_id"),
            _opt_id(args.get("source_session_id"), "source_session_id"),
        ),
        method="explicit"
        if args.get("method") is None
        else check_choice(args["method"], "method", FACT_METHODS),
    )
    if item.valid_until is not None and item.valid_until < item.valid_from:
        raise ValidationError("valid_until must not be before valid_from")
    return item


def remember_fact(
    ctx: MemoryContext, args: dict[str, Any], *, registry: PredicateRegistry = DEFAULT_REGISTRY
) -> FactResult:
    """:meth:`memlane.EpisodicMemory.remember_fact` (``args`` are its keyword arguments)."""
    from memlane.episode_input import new_episode_ids

    graph = graph_store(ctx)
    now = ctx.now(args.get("now"))
    item = _check(args, now, registry)
    names = [(*item.subject, item.types[0])]
    if item.object is not None:
        names.append((*item.object, item.types[1]))
    ids = _ensure(graph, ctx, names, now)
    fact = Fact(
        id="f" + new_episode_ids(1)[0],
        tenant_id=ctx.tenant_id,
        session_id=ctx.session_id,
        subject=ids[item.subject[1]],
        predicate=item.predicate,
        object=None if item.object is None else ids[item.object[1]],
        value=item.value,
        valid_from=item.valid_from,
        valid_until=item.valid_until,
        recorded_at=now,
        confidence=item.confidence,
        importance=item.importance,
        source_episode_id=item.sources[0],
        source_session_id=item.sources[1],
        method=item.method,
        raw_predicate=item.raw_predicate,
    )
    spec = registry.spec(item.predicate)
    current = [
        f
        for p in (item.predicate, spec.opposite)
        if p is not None
        for f in graph.facts(
            FactFilter(
                ctx.tenant_id,
                entities=tuple(graph.members(ctx.tenant_id, fact.subject)),
                as_object=False,
                predicate=p,
                current_at=now,
                still_valid_at=item.valid_from,
            ),
            _QUERY_LIMIT,
        )
    ]
    decided = plan(fact, current, registry, MIN_CONFIDENCE)
    held = decided.duplicate_of
    if held is None and not decided.closures and decided.fact.valid_until is not None:
        decided = replace(decided, fact=_bounded_by_history(graph, registry, decided.fact))
        held = _recorded_before(graph, ctx.tenant_id, decided.fact)  # history: recorded before?
    if held is not None:
        graph.record_merge(
            ctx.tenant_id,
            "fact",
            f"{item.raw_predicate}:{fact.target}",
            held.id,
            now,
            _dup_reason(item, held),
        )
        return FactResult(held, duplicate=True)
    graph.insert_facts([decided.fact], decided.closures)
    closed = {c.old_id: c for c in decided.closures}
    superseded = tuple(
        _closed(f, closed[f.id].valid_until, now, decided.fact.id, closed[f.id].reason)
        for f in decided.closed
    )
    return FactResult(decided.fact, superseded=superseded)


def _bounded_by_history(graph: GraphStore, registry: PredicateRegistry, fact: Fact) -> Fact:
    """A back-dated value of a single-valued predicate ends where the next recorded value starts,
    closed ones included: Paris from 2018 ends at Berlin's 2020, not at Lisbon's 2024 (a fresh
    user's find: the subject had two answers for 2020-2024)."""
    if fact.valid_until is None or not registry.is_single(fact.predicate):
        return fact
    later = graph.facts(
        FactFilter(
            fact.tenant_id,
            entities=tuple(graph.members(fact.tenant_id, fact.subject)),
            as_object=False,
            predicate=fact.predicate,
            still_valid_at=fact.valid_from,
        ),
        _QUERY_LIMIT,
    )
    starts = [f.valid_from for f in later if fact.valid_from < f.valid_from < fact.valid_until]
    return replace(fact, valid_until=min(starts)) if starts else fact


def _recorded_before(graph: GraphStore, tenant_id: str, fact: Fact) -> Fact | None:
    """A fact already recorded (current or retired) with ``fact``'s subject, predicate, target and
    valid interval: asserting a back-dated value again (re-running an import) stores nothing."""
    held = graph.facts(
        FactFilter(
            tenant_id,
            entities=tuple(graph.members(tenant_id, fact.subject)),
            as_object=False,
            predicate=fact.predicate,
            valid_at=fact.valid_from,
        ),
        _QUERY_LIMIT,
    )
    for old in held:
        same_time = (old.valid_from, old.valid_until) == (fact.valid_from, fact.valid_until)
        if old.target == fact.target and same_time:
            return old
    return None


def _closed(fact: Fact, until: datetime, at: datetime, by: str, reason: str) -> Fact:

    end = until if fact.valid_until is None or fact.valid_until > until else fact.valid_until
    return replace(fact, valid_until=end, invalidated_at=at, superseded_by=by, supersede_reason=reason)


def _dup_reason(item: _Input, held: Fact) -> str:
    if item.raw_predicate != held.raw_predicate:
        return f"duplicate: {item.raw_predicate!r} is {held.predicate!r}"
    return "duplicate: the same fact again"


def _instant(value: object, name: str) -> datetime:
    return check_timestamp(value, name).astimezone(UTC)


def _opt_instant(value: object, name: str) -> datetime | None:
    return None if value is None else _instant(value, name)


def _opt_id(value: object, name: str) -> str | None:
    return None if value is None else check_identifier(value, name)


def merge_entities(ctx: MemoryContext, alias: object, into: object, reason: str | None) -> Entity:
    """:meth:`memlane.EpisodicMemory.merge_entities`."""
    graph = graph_store(ctx)
    now = ctx.now()
    a, b = _name(alias, "alias"), _name(into, "into")
    ids = _ensure(graph, ctx, [(*a, "thing"), (*b, "thing")], now)
    if ids[a[1]] != ids[b[1]]:
        graph.merge_entity(
            ctx.tenant_id, ids[a[1]], ids[b[1]], now, reason or f"merged {a[0]!r} into {b[0]!r}"
        )
    return graph.entities(ctx.tenant_id, [ids[b[1]]])[ids[b[1]]]


# -- reading -----------------------------------------------------------------------------------


def time_filter(
    ctx: MemoryContext, as_of: datetime | None, known_at: datetime | None, now: datetime | None
) -> dict[str, Any]:
    """The time conditions of a read: the episodes' model (see ``recall_episodes``), and retention."""
    at = ctx.now(now)
    valid, known = _opt_instant(as_of, "as_of"), _opt_instant(known_at, "known_at")
    if valid is None and known is None:
        return {"current_at": at, "still_valid_at": at, **retention(ctx, at)}
    return {"valid_at": valid, "recorded_by": known, "current_at": known, **retention(ctx, at)}


def retention(ctx: MemoryContext, at: datetime | None = None) -> dict[str, Any]:
    """The retention conditions of every fact read: facts recorded more than ``retention_days``
    before ``at`` (default the clock) are gone, unless their importance is never-forget (the
    episodes' rule: :func:`memlane.context.retained_after`); empty without retention."""
    cutoff = ctx.retained_after(ctx.now(at))
    if cutoff is None:
        return {}
    return {"retained_after": cutoff, "never_forget_from": ctx.config.policy.never_forget_from}


def query_facts(
    ctx: MemoryContext,
    entity: object,
    *,
    as_of: datetime | None = None,
    known_at: datetime | None = None,
    predicate: str | None = None,
    limit: int | None = None,
    now: datetime | None = None,
) -> list[Fact]:
    """:meth:`memlane.EpisodicMemory.query_facts`."""
    graph = graph_store(ctx)
    times = time_filter(ctx, as_of, known_at, now)
    canonical = (
        None if predicate is None else DEFAULT_REGISTRY.canonical(check_identifier(predicate, "predicate"))
    )
    cap = _QUERY_LIMIT if limit is None else check_limit(limit)
    ids = _resolve(ctx, graph, entity)
    if not ids:
        return []
    return graph.facts(
        FactFilter(ctx.tenant_id, session_filter(ctx), tuple(ids), True, canonical, **times), cap
    )


def entity_timeline(ctx: MemoryContext, entity: object) -> list[Fact]:
    """:meth:`memlane.EpisodicMemory.entity_timeline`."""
    graph = graph_store(ctx)
    ids = _resolve(ctx, graph, entity)
    if not ids:
        return []
    return graph.facts(
        FactFilter(ctx.tenant_id, session_filter(ctx), tuple(ids), **retention(ctx)), _TIMELINE_LIMIT
    )


def neighbours(
    ctx: MemoryContext,
    entity: object,
    depth: int = DEFAULT_NEIGHBOUR_DEPTH,
    *,
    as_of: datetime | None = None,
    now: datetime | None = None,
) -> list[Neighbour]:
    """:meth:`memlane.EpisodicMemory.neighbours`."""
    graph = graph_store(ctx)
    hops = check_limit(depth, "depth", maximum=MAX_GRAPH_DEPTH)
    times = time_filter(ctx, as_of, None, now)  # checked before the entity is looked up
    ids = _resolve(ctx, graph, entity)
    if not ids:
        return []
    flt = FactFilter(ctx.tenant_id, session_filter(ctx), tuple(ids), **times)
    found = graph.neighbours(flt, hops)
    canon = graph.resolve(ctx.tenant_id, list(found))
    best: dict[str, int] = {}
    for node, n in found.items():
        key = canon.get(node, node)
        best[key] = min(n, best.get(key, n))
    entities = graph.entities(ctx.tenant_id, list(best))
    order = sorted(best, key=lambda k: (best[k], k))
    return [Neighbour(entities[k], best[k]) for k in order if k in entities]


def find_paths(
    ctx: MemoryContext,
    source: object,
    target: object,
    max_depth: int = DEFAULT_PATH_DEPTH,
    limit: int = DEFAULT_PATH_LIMIT,
    *,
    as_of: datetime | None = None,
    now: datetime | None = None,
) -> list[list[Fact]]:
    """:meth:`memlane.EpisodicMemory.find_paths`."""
    graph = graph_store(ctx)
    depth = check_limit(max_depth, "max_depth", maximum=MAX_GRAPH_DEPTH)
    cap = check_limit(limit, "limit", maximum=MAX_PATHS)
    times = time_filter(ctx, as_of, None, now)  # checked before the entities are looked up
    starts, ends = _resolve(ctx, graph, source, "source"), _resolve(ctx, graph, target, "target")
    if not starts or not ends:
        return []
    flt = FactFilter(ctx.tenant_id, session_filter(ctx), **times)
    found = graph.paths(flt, starts[0], ends[0], depth, cap)
    by_id = {f.id: f for f in graph.facts(flt, _TIMELINE_LIMIT * 10)} if found else {}
    return [[by_id[i] for i in path if i in by_id] for path in found]


# -- episodes and entities ---------------------------------------------------------------------


def link_episodes(ctx: MemoryContext, episodes: Sequence[Episode]) -> int:
    """Link each episode to the entities :func:`~memlane.mentions.extract_mentions` finds.

    Returns:
        Links written. A store without a graph links nothing (returns 0).
    """
    store = ctx.store
    if not isinstance(store, SupportsGraph) or not episodes:
        return 0
    graph = store.graph_store
    found: list[tuple[Episode, list[Mention]]] = list(
        zip(episodes, extract_mentions_batch((e.content, e.tags, e.metadata) for e in episodes), strict=True)
    )
    names = {m.key: (m.name, m.key, m.entity_type) for _, ms in found for m in ms}
    if not names:
        return 0
    ids = _ensure(graph, ctx, list(names.values()), ctx.now())
    links = [
        EntityLink(e.tenant_id, e.session_id, ids[m.key], e.id, e.created_at) for e, ms in found for m in ms
    ]
    graph.link_episodes(links)
    return len(links)


def facts_from_source(ctx: MemoryContext, source_id: str, method: str) -> list[Fact]:
    """The facts ``method`` took from the episode or session ``source_id`` in the memory's tenant."""
    return graph_store(ctx).facts_from_source(ctx.tenant_id, check_identifier(source_id, "source_id"), method)


def episodes_about(ctx: MemoryContext, entity: object, limit: int = 10) -> list[Episode]:
    """:meth:`memlane.EpisodicMemory.episodes_about`."""
    graph = graph_store(ctx)
    cap = check_limit(limit)
    ids = _resolve(ctx, graph, entity)
    found = graph.linked_episodes(ctx.tenant_id, session_filter(ctx), ids, cap) if ids else []
    episodes = (ctx.get_episode(i) for i in found)
    return [e for e in episodes if e is not None]


# -- health ------------------------------------------------------------------------------------

EXPLOSION_PER_SESSION = 100
"""Seed 002's explosion gate: at most this many triples per conversation."""
MIN_AVERAGE_CONFIDENCE = 0.6
"""Seed 002's gate on the average confidence."""
MAX_INVALID_SHARE = 0.05
"""Seed 002's gate on the share of invalid triples."""


def graph_stats(ctx: MemoryContext, *, registry: PredicateRegistry = DEFAULT_REGISTRY) -> GraphStats:
    """:meth:`memlane.EpisodicMemory.graph_stats`."""
    graph = graph_store(ctx)
    counts = graph.counts(ctx.tenant_id, MIN_CONFIDENCE)
    contradictory = sum(n for _, p, n in counts.multi_current if registry.is_single(p))
    invalid = min(counts.current, counts.dangling + counts.below_confidence + contradictory)
    share = invalid / counts.current if counts.current else 0.0
    most = max(counts.per_session.values(), default=0)
    problems = []
    if most > EXPLOSION_PER_SESSION:
        problems.append(f"graph explosion: {most} triples in one session (limit {EXPLOSION_PER_SESSION})")
    if counts.current and counts.average_confidence < MIN_AVERAGE_CONFIDENCE:
        problems.append(f"average confidence {counts.average_confidence:.2f} < {MIN_AVERAGE_CONFIDENCE}")
    if share >= MAX_INVALID_SHARE:
        problems.append(f"invalid triples {share:.1%} >= {MAX_INVALID_SHARE:.0%}")
    return GraphStats(
        facts=counts.facts,
        current=counts.current,
        sessions=len(counts.per_session),
        per_session=counts.per_session,
        max_per_session=most,
        average_confidence=round(counts.average_confidence, 4),
        invalid=invalid,
        invalid_share=round(share, 4),
        dangling=counts.dangling,
        below_confidence=counts.below_confidence,
        contradictory=contradictory,
        duplicates_merged=counts.merges.get("fact", 0),
        entities_merged=counts.merges.get("entity", 0),
        entities=counts.entities,
        episode_links=counts.episode_links,
        problems=tuple(problems),
    )
