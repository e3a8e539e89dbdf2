"""Facts in and out as JSONL lines (``memlane facts export`` / ``memlane facts import``).

One JSON object per fact: every field of :meth:`memlane.Fact.to_dict` (times as ISO 8601 text) plus
``subject_name`` and ``object_name`` (the entities' display names), so an import recreates the
entities. An import restores the rows exactly as exported — the time axes, the closures and their
reasons — into the memory's tenant, without re-running the contradiction rules (the history is
already decided); a fact whose id is already held is skipped, so importing twice stores nothing new.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC
from typing import Any

from memlane.context import MemoryContext
from memlane.errors import ValidationError
from memlane.graph import methods as graph
from memlane.mentions import entity_key
from memlane.stores.graph_base import EntityWrite, Fact, FactFilter
from memlane.validation import check_fraction, check_identifier, check_text, check_timestamp, clamp_importance

__all__ = ["FactImportReport", "export_facts", "import_facts"]

_EXPORT_LIMIT = 10_000_000


def export_facts(ctx: MemoryContext) -> Iterator[dict[str, Any]]:
    """Every fact of the memory's tenant (its session's only under ``session`` scope), oldest first."""
    store = graph.graph_store(ctx)
    flt = FactFilter(ctx.tenant_id, graph.session_filter(ctx), **graph.retention(ctx))
    facts = store.facts(flt, _EXPORT_LIMIT)
    names = store.entities(ctx.tenant_id, [i for f in facts for i in (f.subject, f.object) if i])
    for fact in facts:
        row = fact.to_dict()
        row["subject_name"] = names[fact.subject].name if fact.subject in names else fact.subject
        if fact.object is not None:
            row["object_name"] = names[fact.object].name if fact.object in names else fact.object
        yield row


@dataclass
class FactImportReport:
    """Outcome of :func:`import_facts`. Attributes: stored: New facts. skipped: Ids already held.
    rejected: ``(position, reason)`` of each refused row (0-based)."""

    stored: int = 0
    skipped: int = 0
    rejected: list[tuple[int, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {"stored": self.stored, "skipped": self.skipped, "rejected": [list(r) for r in self.rejected]}


def _time(row: Mapping[str, Any], name: str, *, required: bool = False) -> Any:
    value = row.get(name)
    if value is None:
        if required:
            raise ValidationError(f"{name} is required")
        return None
    return check_timestamp(value, name).astimezone(UTC)


def _opt(row: Mapping[str, Any], name: str) -> str | None:
    value = row.get(name)
    return None if value is None else check_identifier(value, name)


def _fact(ctx: MemoryContext, row: Mapping[str, Any]) -> tuple[Fact, list[EntityWrite]]:
    if not isinstance(row, Mapping):
        raise ValidationError("a fact line must be a JSON object")
    subject_name = check_identifier(row.get("subject_name", row.get("subject")), "subject")
    object_raw = row.get("object_name", row.get("object"))
    object_name = None if object_raw is None else check_identifier(object_raw, "object")
    recorded = _time(row, "recorded_at", required=True)
    fact = Fact(
        id=check_identifier(row.get("id"), "id"),
        tenant_id=ctx.tenant_id,
        session_id=_opt(row, "session_id") or ctx.session_id,
        subject=entity_key(subject_name),
        predicate=check_identifier(row.get("predicate"), "predicate"),
        object=None if object_name is None else entity_key(object_name),
        value=None if row.get("value") is None else check_text(row["value"], "value"),
        valid_from=_time(row, "valid_from", required=True),
        valid_until=_time(row, "valid_until"),
        recorded_at=recorded,
        invalidated_at=_time(row, "invalidated_at"),
        superseded_by=_opt(row, "superseded_by"),
        supersede_reason=None if row.get("supersede_reason") is None else str(row["supersede_reason"]),
        confidence=1.0 if row.get("confidence") is None else check_fraction(row["confidence"], "confidence"),
        importance=clamp_importance(row.get("importance")),
        source_episode_id=_opt(row, "source_episode_id"),
        source_session_id=_opt(row, "source_session_id"),
        method="import" if row.get("method") is None else check_identifier(row["method"], "method"),
        raw_predicate=str(row.get("raw_predicate") or row.get("predicate")),
    )
    names = [(subject_name, fact.subject)] + (
        [(object_name, fact.object)] if object_name and fact.object else []
    )
    return fact, [EntityWrite(key, name, "thing", key, recorded) for name, key in names]


def import_facts(ctx: MemoryContext, rows: Iterable[Mapping[str, Any]]) -> FactImportReport:
    """:meth:`memlane.EpisodicMemory.import_facts`: valid rows are stored in one transaction."""
    store = graph.graph_store(ctx)
    report = FactImportReport()
    facts: list[Fact] = []
    entities: dict[str, EntityWrite] = {}
    for position, row in enumerate(rows):
        try:
            fact, writes = _fact(ctx, row)
        except ValidationError as exc:
            report.rejected.append((position, str(exc)))
            continue
        facts.append(fact)
        entities.update({w.id: w for w in writes})
    store.write_entities(ctx.tenant_id, list(entities.values()))
    report.stored = store.import_facts(facts)
    report.skipped = len(facts) - report.stored
    return report
