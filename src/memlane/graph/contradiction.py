"""Structural contradictions between a new fact and the current ones (pure, no I/O).

:func:`plan` decides, for a new fact and the current facts of its subject with the same or the
opposite predicate, what the write does:

1. **duplicate**: a current fact with the same predicate and the same object/value exists ->
   nothing new is stored; the merge is recorded (``(user, enjoys, coffee)`` after
   ``(user, likes, coffee)``);
2. **single-valued predicate** (:class:`~memlane.graph.predicates.PredicateRegistry`): each
   current fact with another value is closed, ``valid_until`` = the new ``valid_from``, reason
   ``"lives_in is single-valued: 'berlin' -> 'lisbon'"``;
3. **opposite predicate**: each current fact of the opposite predicate with the same object is
   closed (``likes coffee`` closes ``dislikes coffee``).

A fact retires another only when its confidence is at least ``min_confidence`` (0.7 by
default, the seed's storage threshold) and it is not older (a back-filled fact whose
``valid_from`` precedes the current one's is stored as history instead: it ends where the
current one starts). Texts are never compared: nothing is retired on a textual match.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from memlane.graph.predicates import PredicateRegistry
from memlane.stores.graph_base import Fact, FactClosure

__all__ = ["Plan", "plan"]


@dataclass(frozen=True, slots=True)
class Plan:
    """What writing one fact does.

    Attributes:
        fact: The fact to insert (its ``valid_until`` possibly set), or the duplicate held.
        duplicate_of: The current fact it duplicates (nothing is inserted), or ``None``.
        closures: Facts to close in the inserting transaction.
        closed: The facts those closures retire (for the caller's report).
    """

    fact: Fact
    duplicate_of: Fact | None = None
    closures: tuple[FactClosure, ...] = ()
    closed: tuple[Fact, ...] = ()


def plan(new: Fact, current: Sequence[Fact], registry: PredicateRegistry, min_confidence: float) -> Plan:
    """Decide the write of ``new`` against the ``current`` facts of its subject (see the module docstring).

    Args:
        new: The fact to write (canonical predicate, resolved entities).
        current: Current facts of the same subject with ``new``'s predicate or its opposite.
        registry: Cardinalities and opposites.
        min_confidence: Confidence in [0, 1] a fact needs to retire another.

    Returns:
        The :class:`Plan`.
    """
    same = [f for f in current if f.predicate == new.predicate]
    for held in same:
        if held.target == new.target:
            return Plan(held, duplicate_of=held)
    spec = registry.spec(new.predicate)
    rivals = [f for f in same if spec.cardinality == "single"]
    rivals += [
        f
        for f in current
        if spec.opposite is not None and f.predicate == spec.opposite and f.target == new.target
    ]
    if new.confidence < min_confidence:
        return Plan(new)
    fact = new
    closures: list[FactClosure] = []
    closed: list[Fact] = []
    for old in rivals:
        if old.valid_from > new.valid_from:  # the new fact is older history: it ends where this one starts
            if fact.valid_until is None or fact.valid_until > old.valid_from:
                fact = replace(fact, valid_until=old.valid_from)
            continue
        closures.append(
            FactClosure(
                old_id=old.id,
                new_id=new.id,
                valid_until=new.valid_from,
                invalidated_at=new.recorded_at,
                reason=_reason(old, new, opposite=old.predicate != new.predicate),
                tenant_id=new.tenant_id,
            )
        )
        closed.append(old)
    return Plan(fact, closures=tuple(closures), closed=tuple(closed))


def _reason(old: Fact, new: Fact, *, opposite: bool) -> str:
    if opposite:
        return f"opposite predicate: {new.predicate} {new.target!r} replaces {old.predicate} {old.target!r}"
    return f"{new.predicate} is single-valued: {old.target!r} -> {new.target!r}"
