"""The ``GraphStore`` protocol: entities and bi-temporal facts beside the episodes.

A graph store lives beside an episode store and shares its database and connections: a
store that supports the knowledge graph exposes it as its ``graph_store`` attribute
(:class:`SupportsGraph`), e.g. :class:`~memlane.stores.sqlite.graph.SQLiteGraphStore`.

What a backend stores, per tenant (``tenant_id`` leads every key, ready for a tenant-sharded
PostgreSQL):

* **entities**: one row per canonical key (``id``, the normalised name the engine chose), its
  display ``name``, ``entity_type`` and, once merged into another, ``merged_into``;
* **aliases**: normalised name -> entity id (every name an entity was written under);
* **facts**: ``(subject, predicate, object entity | literal value)`` with the episodes' time
  model (Snodgrass 1999): valid time ``valid_from``/``valid_until`` and transaction time
  ``recorded_at``/``invalidated_at``, plus ``superseded_by``/``supersede_reason``;
  ``confidence``, ``importance`` and provenance (``source_episode_id``, ``source_session_id``,
  ``method``). Append-only: a change closes the old row (:class:`FactClosure`), never
  overwrites it;
* **merges**: one row per recorded merge (an entity into another, a duplicate fact into the
  one already held), with its reason;
* **episode links**: which entities each episode mentions (offline extraction on write).

The SQL is written once (:class:`GraphStoreBase`, ``?`` placeholders and ``{table}`` names);
each backend renders it (:meth:`GraphStoreBase._render`) and runs it. Times are bound through
the backend's :class:`~memlane.stores.common.RowCodec` (Unix microseconds in SQLite,
``timestamptz`` in PostgreSQL), so comparisons are the same on both. Stores filter and fetch;
what counts as a contradiction is the engine's (:mod:`memlane.graph`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from memlane.errors import FactNotFoundError
from memlane.stores.common import RowCodec
from memlane.validation import MAX_GRAPH_DEPTH

__all__ = [
    "Entity",
    "EntityLink",
    "EntityWrite",
    "Fact",
    "FactClosure",
    "FactFilter",
    "GraphCounts",
    "GraphStore",
    "GraphStoreBase",
    "SupportsGraph",
]


@dataclass(frozen=True, slots=True)
class Entity:
    """A thing facts are about.

    Attributes:
        id: Canonical key, unique per tenant (the normalised name, e.g. ``"customer_123"``).
        tenant_id: Owner tenant.
        name: Display name as first written (e.g. ``"Customer_123"``).
        entity_type: Kind label (``"person"``, ``"organisation"``, ``"thing"``...).
        created_at: When memlane first recorded it (UTC).
        aliases: Every normalised name that resolves to it (its own ``id`` included).
        merged_into: The entity it was merged into, or ``None``.
    """

    id: str
    tenant_id: str
    name: str
    entity_type: str
    created_at: datetime
    aliases: tuple[str, ...] = ()
    merged_into: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON form: times as ISO 8601 text."""
        return {
            "id": self.id,
            "tenant_id": self.tenant_id,
            "name": self.name,
            "entity_type": self.entity_type,
            "created_at": self.created_at.isoformat(),
            "aliases": list(self.aliases),
            "merged_into": self.merged_into,
        }


@dataclass(frozen=True, slots=True)
class EntityWrite:
    """An entity to create if its ``id`` is new, with an alias to record.

    Attributes:
        id: Canonical key. name: Display name. entity_type: Kind label.
        alias: Normalised name to resolve to ``id`` (``id`` itself for a new entity).
        created_at: Transaction time (UTC).
    """

    id: str
    name: str
    entity_type: str
    alias: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Fact:
    """One bi-temporal triple ``(subject, predicate, object | value)``.

    Attributes:
        id: Unique id. tenant_id / session_id: Scope, like an episode's.
        subject: Subject entity id.
        predicate: Canonical predicate (``"lives_in"``), after synonyms were folded.
        object: Object entity id, or ``None`` for a literal.
        value: Literal value (``"enterprise"``), or ``None`` when ``object`` is set.
        valid_from / valid_until: Valid time (UTC; ``valid_until`` exclusive, ``None`` = still true).
        recorded_at / invalidated_at: Transaction time (UTC; ``None`` = current).
        superseded_by: Id of the fact that retired this one, or ``None``.
        supersede_reason: Why it was retired (recorded with the closure), or ``None``.
        confidence: In [0, 1].
        importance: 1-10, or ``None`` (unrated).
        source_episode_id / source_session_id: Provenance, or ``None``.
        method: How it got in: ``"explicit"``, ``"llm"`` or ``"import"``.
        raw_predicate: The predicate as given (``"enjoys"`` for a fact stored as ``likes``).
    """

    id: str
    tenant_id: str
    session_id: str
    subject: str
    predicate: str
    object: str | None
    value: str | None
    valid_from: datetime
    valid_until: datetime | None
    recorded_at: datetime
    invalidated_at: datetime | None = None
    superseded_by: str | None = None
    supersede_reason: str | None = None
    confidence: float = 1.0
    importance: float | None = None
    source_episode_id: str | None = None
    source_session_id: str | None = None
    method: str = "explicit"
    raw_predicate: str = ""

    @property
    def target(self) -> str:
        """What a duplicate or single-value check compares: the object entity id, the literal value,
        or ``"object=value"`` for a relation that carries both (e.g. a rating of a film)."""
        if self.object is not None and self.value is not None:
            return f"{self.object}={self.value}"
        return self.object if self.object is not None else (self.value or "")

    def is_current(self, now: datetime) -> bool:
        """Not retired and still valid at ``now``."""
        return (self.invalidated_at is None or self.invalidated_at > now) and (
            self.valid_until is None or self.valid_until > now
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON form: times as ISO 8601 text (``None`` kept)."""
        out: dict[str, Any] = {}
        for name in _FACT_FIELDS:
            value = getattr(self, name)
            out[name] = value.isoformat() if isinstance(value, datetime) else value
        return out


_FACT_FIELDS = (
    "id",
    "tenant_id",
    "session_id",
    "subject",
    "predicate",
    "object",
    "value",
    "valid_from",
    "valid_until",
    "recorded_at",
    "invalidated_at",
    "superseded_by",
    "supersede_reason",
    "confidence",
    "importance",
    "source_episode_id",
    "source_session_id",
    "method",
    "raw_predicate",
)
_TIME_FIELDS = frozenset({"valid_from", "valid_until", "recorded_at", "invalidated_at"})


@dataclass(frozen=True, slots=True)
class FactClosure:
    """Retire fact ``old_id`` in favour of ``new_id`` (or of nothing), in the inserting transaction.

    Attributes:
        old_id: The fact to close; it must belong to ``tenant_id`` and not be retired already.
        new_id: The fact that replaces it, or ``None`` (an opposite or an explicit end).
        valid_until: End of its valid time (UTC, exclusive).
        invalidated_at: Transaction time of the retirement (UTC).
        reason: Why (recorded on the old row).
        tenant_id: Its tenant.
    """

    old_id: str
    new_id: str | None
    valid_until: datetime
    invalidated_at: datetime
    reason: str
    tenant_id: str


@dataclass(frozen=True, slots=True)
class FactFilter:
    """Conditions a fact must meet (all of them); the episodes' time model.

    Attributes:
        tenant_id: Exact tenant.
        session_id: Exact session, or ``None`` for every session of the tenant.
        entities: Entity ids the fact must mention (subject, or object when ``as_object``); empty = any.
        as_object: Also match facts whose ``object`` is one of ``entities``.
        predicate: Exact canonical predicate, or ``None``.
        valid_at: Only facts true at this instant (``valid_from <= t < valid_until``).
        still_valid_at: Only facts whose validity has not ended at this instant.
        recorded_by: Only facts recorded at or before this instant.
        current_at: Only facts not retired at this instant.
        retained_after: Retention: only facts recorded at or after this instant (``None`` = all),
            except those of importance >= ``never_forget_from`` (the episodes' rule, as
            :class:`~memlane.stores.base.EpisodeFilter`).
        never_forget_from: Importance from which a fact is kept whatever its age, or ``None``.
    """

    tenant_id: str
    session_id: str | None = None
    entities: tuple[str, ...] = ()
    as_object: bool = True
    predicate: str | None = None
    valid_at: datetime | None = None
    still_valid_at: datetime | None = None
    recorded_by: datetime | None = None
    current_at: datetime | None = None
    retained_after: datetime | None = None
    never_forget_from: float | None = None


@dataclass(frozen=True, slots=True)
class EntityLink:
    """An episode that mentions an entity (offline extraction on write).

    Attributes:
        tenant_id / session_id: The episode's scope. entity_id: The entity.
        episode_id: The episode. created_at: The episode's ``created_at`` (UTC).
    """

    tenant_id: str
    session_id: str
    entity_id: str
    episode_id: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class GraphCounts:
    """What the graph of one tenant holds (the raw counts behind ``graph_stats``).

    Attributes:
        facts: Every fact row (current and retired).
        current: Facts neither retired nor ended.
        per_session: Fact rows per ``session_id``.
        average_confidence: Mean confidence of the current facts (0 when none).
        below_confidence: Current facts under the threshold given to :meth:`GraphStore.counts`.
        dangling: Facts whose subject or object entity does not exist.
        entities: Entities (merged ones included). aliases: Alias rows.
        merges: Recorded merges per kind (``"entity"``, ``"fact"``).
        multi_current: ``(subject, predicate, n)`` with ``n > 1`` current facts.
        episode_links: Episode -> entity links.
    """

    facts: int
    current: int
    per_session: dict[str, int] = field(default_factory=dict)
    average_confidence: float = 0.0
    below_confidence: int = 0
    dangling: int = 0
    entities: int = 0
    aliases: int = 0
    merges: dict[str, int] = field(default_factory=dict)
    multi_current: list[tuple[str, str, int]] = field(default_factory=list)
    episode_links: int = 0


@runtime_checkable
class GraphStore(Protocol):
    """Persistence of entities and facts (see the module docstring).

    Every method raises :class:`memlane.errors.StoreError` (or a subclass) for backend
    failures, never a driver exception; untrusted strings are always bound parameters.
    """

    def write_entities(self, tenant_id: str, entities: Sequence[EntityWrite]) -> None:
        """Create each entity whose ``id`` is new and record each alias not yet taken (atomic)."""
        ...

    def resolve(self, tenant_id: str, aliases: Sequence[str]) -> dict[str, str]:
        """``{alias: entity id}`` for the known aliases, following ``merged_into`` to the end."""
        ...

    def entities(self, tenant_id: str, ids: Sequence[str]) -> dict[str, Entity]:
        """``{id: entity}`` (with its aliases) for the ids that exist."""
        ...

    def merge_entity(self, tenant_id: str, alias_id: str, into_id: str, at: datetime, reason: str) -> None:
        """Merge entity ``alias_id`` into ``into_id``: its aliases move, the merge is recorded.

        Raises:
            FactNotFoundError: either entity is unknown, or ``alias_id`` is merged already.
        """
        ...

    def members(self, tenant_id: str, entity_id: str) -> list[str]:
        """``entity_id`` and every entity merged into it (directly or through others)."""
        ...

    def insert_facts(self, facts: Sequence[Fact], closures: Sequence[FactClosure] = ()) -> None:
        """Append facts and close ``closures`` in one transaction (all or none).

        Raises:
            FactNotFoundError: a closed fact is unknown for its tenant or retired already
                (nothing is written).
        """
        ...

    def import_facts(self, facts: Sequence[Fact]) -> int:
        """Insert facts exactly as given (an export's rows), skipping ids already held; return how many."""
        ...

    def record_merge(
        self, tenant_id: str, kind: str, source: str, into: str, at: datetime, reason: str
    ) -> None:
        """Record one merge (``kind`` ``"entity"`` or ``"fact"``: a duplicate folded into ``into``)."""
        ...

    def facts(self, flt: FactFilter, limit: int) -> list[Fact]:
        """Up to ``limit`` facts passing ``flt``, by ``valid_from``, ``recorded_at``, then insertion order."""
        ...

    def facts_from_source(self, tenant_id: str, source_id: str, method: str) -> list[Fact]:
        """The facts ``method`` extracted from the episode or session ``source_id`` (idempotence)."""
        ...

    def neighbours(self, flt: FactFilter, depth: int) -> dict[str, int]:
        """``{entity id: hops}`` reachable from ``flt.entities`` over object-facts passing ``flt``.

        Edges are followed both ways; ``depth`` in ``1..MAX_GRAPH_DEPTH``; the start entities have 0 hops.
        """
        ...

    def paths(self, flt: FactFilter, source: str, target: str, depth: int, limit: int) -> list[list[str]]:
        """Up to ``limit`` simple paths (as fact id lists) from ``source`` to ``target``, shortest first."""
        ...

    def link_episodes(self, links: Sequence[EntityLink]) -> None:
        """Record which entities each episode mentions (a link already held is kept)."""
        ...

    def linked_episodes(
        self, tenant_id: str, session_id: str | None, entities: Sequence[str], limit: int
    ) -> list[str]:
        """Ids of up to ``limit`` episodes linked to any of ``entities``, newest first."""
        ...

    def counts(self, tenant_id: str, min_confidence: float) -> GraphCounts:
        """The raw counts of the tenant's graph (:class:`GraphCounts`)."""
        ...

    def prune(
        self, cutoff: datetime, keep_importance_from: float | None, tenant_id: str | None, *, dry_run: bool
    ) -> int:
        """Delete (or count) the facts recorded before ``cutoff`` and the links of episodes created before it.

        Retention for the graph (:func:`memlane.lifecycle.retention.prune`): facts of importance
        >= ``keep_importance_from`` stay; a link goes only once its episode is gone.

        Returns:
            The facts deleted (or that would be, with ``dry_run``).
        """
        ...


@runtime_checkable
class SupportsGraph(Protocol):
    """An episode store that also stores the knowledge graph."""

    @property
    def graph_store(self) -> GraphStore:
        """The companion :class:`GraphStore` over the same database and connections."""
        ...


# -- the SQL, written once ----------------------------------------------------------------------

_FACT_COLUMNS = ", ".join(_FACT_FIELDS)
_ENTITY_COLUMNS = "id, tenant_id, name, entity_type, created_at, merged_into"

_RETAINED = "f.recorded_at >= ?"
_RETAINED_OR_KEPT = "(f.recorded_at >= ? OR f.importance >= ?)"
_VALID_AS_KNOWN = "f.valid_from <= ? AND (f.valid_until IS NULL OR f.valid_until > ? OR f.invalidated_at > ?)"
"""``valid_at`` and ``current_at`` together (``as_of`` with ``known_at``), replacing both: valid at
``valid_at`` as known at ``current_at``. A fact closed after ``current_at`` was open-ended then (its
``valid_until`` is written when it is closed); one closed earlier is history up to its ``valid_until``."""
_TIME_CONDITIONS: tuple[tuple[str, str, int], ...] = (
    ("valid_at", "f.valid_from <= ? AND (f.valid_until IS NULL OR f.valid_until > ?)", 2),
    ("still_valid_at", "(f.valid_until IS NULL OR f.valid_until > ?)", 1),
    ("recorded_by", "f.recorded_at <= ?", 1),
    ("current_at", "(f.invalidated_at IS NULL OR f.invalidated_at > ?)", 1),
)


_NEXT = "CASE WHEN f.subject = w.node THEN f.object ELSE f.subject END"
"""The entity one hop from ``w.node`` along fact ``f`` (walks follow edges both ways)."""


class Executor(Protocol):
    """Runs rendered statements inside one transaction."""

    def __call__(self, template: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        """Run ``template`` with ``params``; its rows (empty for a statement without any)."""
        ...

    def many(self, template: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run ``template`` once per parameter row."""
        ...

    def rowcount(self, template: str, params: Sequence[Any]) -> int:
        """Run ``template``; the number of rows it changed."""
        ...


class GraphStoreBase:
    """Every :class:`GraphStore` method over two backend hooks (:meth:`_read`, :meth:`_write`).

    Templates use ``?`` placeholders and ``{facts}``, ``{entities}``, ``{aliases}``,
    ``{merges}``, ``{links}`` table names; a backend renders and runs them.
    """

    codec: RowCodec

    def _read(self, action: str) -> AbstractContextManager[Executor]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _write(self, action: str) -> AbstractContextManager[Executor]:  # pragma: no cover - abstract
        raise NotImplementedError

    # -- rows ----------------------------------------------------------------------------

    def _t(self, value: datetime | None) -> Any:
        return self.codec.opt_time_in(value)

    def _fact_row(self, fact: Fact) -> tuple[Any, ...]:
        return tuple(
            self._t(getattr(fact, name)) if name in _TIME_FIELDS else getattr(fact, name)
            for name in _FACT_FIELDS
        )

    def _fact(self, row: Sequence[Any]) -> Fact:
        values: dict[str, Any] = {
            name: self.codec.opt_time_out(value) if name in _TIME_FIELDS else value
            for name, value in zip(_FACT_FIELDS, row, strict=True)
        }
        values["confidence"] = float(values["confidence"])
        return Fact(**values)

    def _where(self, flt: FactFilter, *, tenant: bool = True) -> tuple[str, list[Any]]:
        clauses = ["f.tenant_id = ?"] if tenant else ["1 = 1"]
        params: list[Any] = [flt.tenant_id] if tenant else []
        if flt.session_id is not None:
            clauses.append("f.session_id = ?")
            params.append(flt.session_id)
        if flt.predicate is not None:
            clauses.append("f.predicate = ?")
            params.append(flt.predicate)
        as_known = flt.valid_at is not None and flt.current_at is not None
        for name, condition, times in _TIME_CONDITIONS:
            value = getattr(flt, name)
            if value is not None and not (as_known and name in ("valid_at", "current_at")):
                clauses.append(condition)
                params.extend([self._t(value)] * times)
        if as_known:
            clauses.append(_VALID_AS_KNOWN)
            params.extend([self._t(flt.valid_at), self._t(flt.valid_at), self._t(flt.current_at)])
        if flt.retained_after is not None:
            clauses.append(_RETAINED if flt.never_forget_from is None else _RETAINED_OR_KEPT)
            params.append(self._t(flt.retained_after))
            if flt.never_forget_from is not None:
                params.append(float(flt.never_forget_from))
        return " AND ".join(clauses), params

    # -- entities ------------------------------------------------------------------------

    def write_entities(self, tenant_id: str, entities: Sequence[EntityWrite]) -> None:
        """Create new entities and record new aliases (see :meth:`GraphStore.write_entities`)."""
        if not entities:
            return
        with self._write("write_entities") as run:
            run.many(
                "INSERT INTO {entities} (tenant_id, id, name, entity_type, created_at) VALUES (?, ?, ?, "
                "?, ?) "
                "ON CONFLICT (tenant_id, id) DO NOTHING",
                [(tenant_id, e.id, e.name, e.entity_type, self._t(e.created_at)) for e in entities],
            )
            run.many(
                "INSERT INTO {aliases} (tenant_id, alias, entity_id, created_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (tenant_id, alias) DO NOTHING",
                [(tenant_id, e.alias, e.id, self._t(e.created_at)) for e in entities],
            )

    def resolve(self, tenant_id: str, aliases: Sequence[str]) -> dict[str, str]:
        """``{alias: canonical entity id}`` (see :meth:`GraphStore.resolve`)."""
        found: dict[str, str] = {}
        with self._read("resolve") as run:
            for chunk in _chunks(list(dict.fromkeys(aliases))):
                marks = ", ".join("?" * len(chunk))
                rows = run(
                    f"SELECT alias, entity_id FROM {{aliases}} WHERE tenant_id = ? AND alias IN ({marks})",
                    [tenant_id, *chunk],
                )
                found.update({str(a): str(e) for a, e in rows})
            merged = self._merged(run, tenant_id, list(dict.fromkeys(found.values())))
            for alias, entity_id in found.items():
                if entity_id in merged:  # only a merged entity has a chain to follow
                    found[alias] = self._canonical(run, tenant_id, entity_id)
        return found

    @staticmethod
    def _merged(run: Executor, tenant_id: str, ids: list[str]) -> set[str]:
        """Those of ``ids`` merged into another entity, one statement per chunk (not one per id)."""
        merged: set[str] = set()
        for chunk in _chunks(ids):
            marks = ", ".join("?" * len(chunk))
            rows = run(
                f"SELECT id FROM {{entities}} WHERE tenant_id = ? AND id IN ({marks}) "
                "AND merged_into IS NOT NULL",
                [tenant_id, *chunk],
            )
            merged.update(str(r[0]) for r in rows)
        return merged

    @staticmethod
    def _canonical(run: Executor, tenant_id: str, entity_id: str) -> str:
        seen = {entity_id}
        while True:
            rows = run(
                "SELECT merged_into FROM {entities} WHERE tenant_id = ? AND id = ?", [tenant_id, entity_id]
            )
            if not rows or rows[0][0] is None or rows[0][0] in seen:
                return entity_id
            entity_id = str(rows[0][0])
            seen.add(entity_id)

    def entities(self, tenant_id: str, ids: Sequence[str]) -> dict[str, Entity]:
        """``{id: entity}`` with aliases (see :meth:`GraphStore.entities`)."""
        out: dict[str, Entity] = {}
        with self._read("entities") as run:
            for chunk in _chunks(list(dict.fromkeys(ids))):
                marks = ", ".join("?" * len(chunk))
                rows = run(
                    f"SELECT {_ENTITY_COLUMNS} FROM {{entities}} WHERE tenant_id = ? AND id IN ({marks})",
                    [tenant_id, *chunk],
                )
                aliases: dict[str, list[str]] = {}
                for alias, entity_id in run(
                    f"SELECT alias, entity_id FROM {{aliases}} WHERE tenant_id = ? AND entity_id IN "
                    f"({marks}) "
                    "ORDER BY alias",
                    [tenant_id, *chunk],
                ):
                    aliases.setdefault(str(entity_id), []).append(str(alias))
                for row in rows:
                    out[str(row[0])] = Entity(
                        id=str(row[0]),
                        tenant_id=str(row[1]),
                        name=str(row[2]),
                        entity_type=str(row[3]),
                        created_at=self.codec.time_out(row[4]),
                        aliases=tuple(aliases.get(str(row[0]), ())),
                        merged_into=row[5],
                    )
        return out

    def merge_entity(self, tenant_id: str, alias_id: str, into_id: str, at: datetime, reason: str) -> None:
        """Merge ``alias_id`` into ``into_id`` (see :meth:`GraphStore.merge_entity`)."""
        with self._write("merge_entity") as run:
            known = run(
                "SELECT id, merged_into FROM {entities} WHERE tenant_id = ? AND id IN (?, ?)",
                [tenant_id, alias_id, into_id],
            )
            state = {str(i): m for i, m in known}
            if alias_id == into_id or set(state) != {alias_id, into_id} or state[alias_id] is not None:
                raise FactNotFoundError(f"cannot merge entity {alias_id!r} into {into_id!r}")
            run.rowcount(
                "UPDATE {entities} SET merged_into = ? WHERE tenant_id = ? AND id = ?",
                [into_id, tenant_id, alias_id],
            )
            run.rowcount(
                "UPDATE {aliases} SET entity_id = ? WHERE tenant_id = ? AND entity_id = ?",
                [into_id, tenant_id, alias_id],
            )
            self._merge_row(run, tenant_id, "entity", alias_id, into_id, at, reason)

    def _merge_row(
        self, run: Executor, tenant_id: str, kind: str, source: str, into: str, at: datetime, reason: str
    ) -> None:
        run.rowcount(
            "INSERT INTO {merges} (tenant_id, kind, source, into_id, merged_at, reason) VALUES (?, ?, ?, "
            "?, ?, ?)",
            [tenant_id, kind, source, into, self._t(at), reason],
        )

    def record_merge(
        self, tenant_id: str, kind: str, source: str, into: str, at: datetime, reason: str
    ) -> None:
        """Record one merge (see :meth:`GraphStore.record_merge`)."""
        with self._write("record_merge") as run:
            self._merge_row(run, tenant_id, kind, source, into, at, reason)

    def members(self, tenant_id: str, entity_id: str) -> list[str]:
        """``entity_id`` and the entities merged into it (see :meth:`GraphStore.members`)."""
        with self._read("members") as run:
            rows = run(
                "WITH RECURSIVE m(id) AS (SELECT id FROM {entities} WHERE tenant_id = ? AND id = ? "
                "UNION SELECT e.id FROM {entities} e JOIN m ON e.merged_into = m.id WHERE e.tenant_id = ?) "
                "SELECT id FROM m",
                [tenant_id, entity_id, tenant_id],
            )
        ids = [str(r[0]) for r in rows]
        return ids or [entity_id]

    # -- facts ---------------------------------------------------------------------------

    def insert_facts(self, facts: Sequence[Fact], closures: Sequence[FactClosure] = ()) -> None:
        """Append facts and close older ones atomically (see :meth:`GraphStore.insert_facts`)."""
        marks = ", ".join("?" * len(_FACT_FIELDS))
        with self._write("insert_facts") as run:
            for closure in closures:
                changed = run.rowcount(
                    "UPDATE {facts} SET valid_until = CASE WHEN valid_until IS NULL OR valid_until > ? "
                    "THEN ? ELSE valid_until END, invalidated_at = ?, superseded_by = ?, "
                    "supersede_reason = ? "
                    "WHERE tenant_id = ? AND id = ? AND invalidated_at IS NULL",
                    [
                        self._t(closure.valid_until),
                        self._t(closure.valid_until),
                        self._t(closure.invalidated_at),
                        closure.new_id,
                        closure.reason,
                        closure.tenant_id,
                        closure.old_id,
                    ],
                )
                if changed != 1:
                    raise FactNotFoundError(f"fact {closure.old_id!r} is unknown or already retired")
            if facts:
                run.many(
                    f"INSERT INTO {{facts}} ({_FACT_COLUMNS}) VALUES ({marks})",
                    [self._fact_row(f) for f in facts],
                )

    def import_facts(self, facts: Sequence[Fact]) -> int:
        """Insert facts as given, skipping held ids (see :meth:`GraphStore.import_facts`)."""
        marks = ", ".join("?" * len(_FACT_FIELDS))
        stored = 0
        with self._write("import_facts") as run:
            for fact in facts:
                stored += run.rowcount(
                    f"INSERT INTO {{facts}} ({_FACT_COLUMNS}) VALUES ({marks}) ON CONFLICT DO NOTHING",
                    self._fact_row(fact),
                )
        return stored

    def facts(self, flt: FactFilter, limit: int) -> list[Fact]:
        """Facts passing ``flt``, oldest ``valid_from`` first (see :meth:`GraphStore.facts`).

        An entity condition is one indexed branch per role (subject, object) joined by ``UNION``,
        so each branch probes its own ``(tenant_id, subject ...)`` / ``(tenant_id, object)`` index.
        """
        where, params = self._where(flt)
        columns = ", ".join(f"f.{c}" for c in (*_FACT_FIELDS, "seq"))
        branches: list[tuple[str, list[Any]]] = []
        if not flt.entities:
            branches.append((f"SELECT {columns} FROM {{facts}} f WHERE {where}", params))
        else:
            marks = ", ".join("?" * len(flt.entities))
            roles = ("subject", "object") if flt.as_object else ("subject",)
            for role in roles:
                sql = f"SELECT {columns} FROM {{facts}} f WHERE {where} AND f.{role} IN ({marks})"
                branches.append((sql, [*params, *flt.entities]))
        query = " UNION ".join(sql for sql, _ in branches)
        with self._read("facts") as run:
            rows = run(
                f"{query} ORDER BY valid_from, recorded_at, seq LIMIT ?",
                [*(p for _, ps in branches for p in ps), max(1, int(limit))],
            )
        return [self._fact(r[:-1]) for r in rows]

    def facts_from_source(self, tenant_id: str, source_id: str, method: str) -> list[Fact]:
        """Facts ``method`` took from ``source_id`` (see :meth:`GraphStore.facts_from_source`)."""
        with self._read("facts_from_source") as run:
            rows = run(
                f"SELECT {_FACT_COLUMNS} FROM {{facts}} WHERE tenant_id = ? AND method = ? "
                "AND (source_episode_id = ? OR source_session_id = ?) ORDER BY recorded_at, seq",
                [tenant_id, method, source_id, source_id],
            )
        return [self._fact(r) for r in rows]

    # -- traversal -------------------------------------------------------------------------

    def _step(self, flt: FactFilter) -> tuple[str, list[Any]]:
        """One hop from ``w.node`` over the facts ``f`` passing ``flt``'s scope and time, either way.

        Returns the join condition and its parameters; the next node is :data:`_NEXT`.
        """
        where, params = self._where(FactFilter(**{**_asdict(flt), "entities": ()}), tenant=False)
        # the tenant only inside each branch of the OR lets SQLite probe both indexes (MULTI-INDEX OR)
        either = "((f.tenant_id = ? AND f.subject = w.node) OR (f.tenant_id = ? AND f.object = w.node))"
        return f"{either} AND f.object IS NOT NULL AND {where}", [flt.tenant_id, flt.tenant_id, *params]

    def neighbours(self, flt: FactFilter, depth: int) -> dict[str, int]:
        """Entities within ``depth`` hops (see :meth:`GraphStore.neighbours`)."""
        if not flt.entities:
            return {}
        step, params = self._step(flt)
        marks = ", ".join("?" * len(flt.entities))
        with self._read("neighbours") as run:
            rows = run(
                f"WITH RECURSIVE walk(node, hops) AS (SELECT id, 0 FROM {{entities}} WHERE tenant_id = ? "
                f"AND id IN ({marks}) UNION SELECT {_NEXT}, w.hops + 1 FROM walk w JOIN {{facts}} f ON "
                f"{step} "
                "WHERE w.hops < ?) SELECT node, min(hops) FROM walk GROUP BY node",
                [flt.tenant_id, *flt.entities, *params, max(1, min(MAX_GRAPH_DEPTH, int(depth)))],
            )
        return {str(n): int(h) for n, h in rows}

    def paths(self, flt: FactFilter, source: str, target: str, depth: int, limit: int) -> list[list[str]]:
        """Simple paths from ``source`` to ``target`` (see :meth:`GraphStore.paths`)."""
        step, params = self._step(flt)
        with self._read("paths") as run:
            rows = run(
                "WITH RECURSIVE walk(node, hops, nodes, fids) AS ("
                "SELECT id, 0, ',' || id || ',', CAST('' AS TEXT) FROM {entities} WHERE tenant_id = ? "
                f"AND id = ? UNION ALL SELECT {_NEXT}, w.hops + 1, w.nodes || {_NEXT} || ',', "
                f"w.fids || f.id || ',' FROM walk w JOIN {{facts}} f ON {step} WHERE w.hops < ? AND "
                "w.node <> ? "
                f"AND length(w.nodes) = length(replace(w.nodes, ',' || {_NEXT} || ',', ''))) "
                "SELECT fids FROM walk WHERE node = ? AND hops > 0 ORDER BY hops, fids LIMIT ?",
                [
                    flt.tenant_id,
                    source,
                    *params,
                    max(1, min(MAX_GRAPH_DEPTH, int(depth))),
                    target,
                    target,
                    max(1, int(limit)),
                ],
            )
        return [[p for p in str(r[0]).split(",") if p] for r in rows]

    # -- episode links -----------------------------------------------------------------------

    def link_episodes(self, links: Sequence[EntityLink]) -> None:
        """Record episode -> entity links (see :meth:`GraphStore.link_episodes`)."""
        if not links:
            return
        with self._write("link_episodes") as run:
            time_in = self.codec.time_in  # one conversion per link: local names (ingest hot path)
            run.many(
                "INSERT INTO {links} (tenant_id, entity_id, episode_id, session_id, created_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (tenant_id, entity_id, episode_id) DO NOTHING",
                [
                    (k.tenant_id, k.entity_id, k.episode_id, k.session_id, time_in(k.created_at))
                    for k in links
                ],
            )

    def linked_episodes(
        self, tenant_id: str, session_id: str | None, entities: Sequence[str], limit: int
    ) -> list[str]:
        """Episodes mentioning any of ``entities``, newest first (see :meth:`GraphStore.linked_episodes`)."""
        if not entities:
            return []
        marks = ", ".join("?" * len(entities))
        session = "" if session_id is None else " AND session_id = ?"
        with self._read("linked_episodes") as run:
            rows = run(
                f"SELECT episode_id, max(created_at) AS at FROM {{links}} WHERE tenant_id = ? "
                f"AND entity_id IN ({marks}){session} GROUP BY episode_id ORDER BY at DESC, episode_id "
                "LIMIT ?",
                [tenant_id, *entities, *([] if session_id is None else [session_id]), max(1, int(limit))],
            )
        return [str(r[0]) for r in rows]

    # -- retention ------------------------------------------------------------------------------

    def prune(
        self, cutoff: datetime, keep_importance_from: float | None, tenant_id: str | None, *, dry_run: bool
    ) -> int:
        """Retention for the graph (see :meth:`GraphStore.prune`): one statement for facts, one for links."""
        facts, params = "f.recorded_at < ?", [self._t(cutoff)]
        if keep_importance_from is not None:
            facts += " AND (f.importance IS NULL OR f.importance < ?)"
            params.append(float(keep_importance_from))
        if tenant_id is not None:
            facts += " AND f.tenant_id = ?"
            params.append(tenant_id)
        with self._write("prune_graph") as run:
            if dry_run:
                return int(run(f"SELECT count(*) FROM {{facts}} f WHERE {facts}", params)[0][0])
            removed = run.rowcount(
                f"DELETE FROM {{facts}} WHERE id IN (SELECT f.id FROM {{facts}} f WHERE {facts})", params
            )
            links = [self._t(cutoff), *([] if tenant_id is None else [tenant_id])]
            run.rowcount(  # the links of the episodes this prune (or an earlier delete) removed
                "DELETE FROM {links} WHERE created_at < ?"
                + ("" if tenant_id is None else " AND tenant_id = ?")
                + " AND NOT EXISTS (SELECT 1 FROM {episodes} e WHERE e.tenant_id = {links}.tenant_id "
                "AND e.id = {links}.episode_id)",
                links,
            )
        return removed

    # -- health --------------------------------------------------------------------------------

    def counts(self, tenant_id: str, min_confidence: float) -> GraphCounts:
        """Raw counts of the tenant's graph (see :meth:`GraphStore.counts`)."""
        current = "f.invalidated_at IS NULL AND f.valid_until IS NULL"
        with self._read("counts") as run:
            per_session = run(
                "SELECT session_id, count(*) FROM {facts} WHERE tenant_id = ? GROUP BY session_id",
                [tenant_id],
            )
            total = run(
                f"SELECT count(*), sum(CASE WHEN {current} THEN 1 ELSE 0 END), "
                f"avg(CASE WHEN {current} THEN f.confidence END), "
                f"sum(CASE WHEN {current} AND f.confidence < ? THEN 1 ELSE 0 END) FROM {{facts}} f WHERE "
                "f.tenant_id = ?",
                [min_confidence, tenant_id],
            )[0]
            dangling = run(
                "SELECT count(*) FROM {facts} f WHERE f.tenant_id = ? AND (NOT EXISTS (SELECT 1 FROM "
                "{entities} e "
                "WHERE e.tenant_id = f.tenant_id AND e.id = f.subject) OR (f.object IS NOT NULL AND NOT "
                "EXISTS "
                "(SELECT 1 FROM {entities} e WHERE e.tenant_id = f.tenant_id AND e.id = f.object)))",
                [tenant_id],
            )[0][0]
            multi = run(
                f"SELECT f.subject, f.predicate, count(*) FROM {{facts}} f WHERE f.tenant_id = ? AND "
                f"{current} "
                "GROUP BY f.subject, f.predicate HAVING count(*) > 1 ORDER BY f.subject, f.predicate",
                [tenant_id],
            )
            merges = run("SELECT kind, count(*) FROM {merges} WHERE tenant_id = ? GROUP BY kind", [tenant_id])
            sizes = run(
                "SELECT (SELECT count(*) FROM {entities} WHERE tenant_id = ?), "
                "(SELECT count(*) FROM {aliases} WHERE tenant_id = ?), "
                "(SELECT count(*) FROM {links} WHERE tenant_id = ?)",
                [tenant_id, tenant_id, tenant_id],
            )[0]
        return GraphCounts(
            facts=int(total[0] or 0),
            current=int(total[1] or 0),
            per_session={str(s): int(n) for s, n in per_session},
            average_confidence=float(total[2] or 0.0),
            below_confidence=int(total[3] or 0),
            dangling=int(dangling or 0),
            entities=int(sizes[0]),
            aliases=int(sizes[1]),
            merges={str(k): int(n) for k, n in merges},
            multi_current=[(str(s), str(p), int(n)) for s, p, n in multi],
            episode_links=int(sizes[2]),
        )


def _chunks(values: list[str], size: int = 400) -> Iterator[list[str]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


def _asdict(flt: FactFilter) -> dict[str, Any]:
    return {name: getattr(flt, name) for name in FactFilter.__dataclass_fields__}
