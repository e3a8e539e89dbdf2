"""The knowledge graph on the command line: ``memlane facts ...`` and ``memlane graph check``.

``facts add`` stores one fact (the ``remember_fact`` operation: options generated from
:class:`~memlane.operations.requests.RememberFactBody`), ``facts query`` reads the facts about an
entity at a time (``as_of``/``known_at``), ``facts timeline`` its history, ``facts neighbours`` and
``facts paths`` walk the graph. ``graph stats`` prints :meth:`memlane.EpisodicMemory.graph_stats`;
``graph check`` prints it too and exits 1 when the graph fails one of seed 002's limits (triples per
session, average confidence, share of invalid triples).
"""

from __future__ import annotations

import json
import sys
from datetime import datetime
from typing import TYPE_CHECKING, Any

import click

from memlane.cli.app import CliState, pass_state
from memlane.cli.output import echo_json, escape
from memlane.cli.params import field_option

if TYPE_CHECKING:
    from rich.table import Table

__all__ = ["facts_group", "graph_group"]


@click.group(name="facts")
def facts_group() -> None:
    """Facts about entities in the knowledge graph: add, query, timeline, neighbours, paths."""


def _fact_rows(facts: list[Any], title: str) -> Table:
    from rich.table import Table

    table = Table(title=title, show_lines=False)
    for column in ("subject", "predicate", "object / value", "valid", "recorded", "confidence", "retired"):
        table.add_column(column)
    for f in facts:
        target = f.object if f.value is None else (f.value if f.object is None else f"{f.object} = {f.value}")
        until = "now" if f.valid_until is None else f.valid_until.date().isoformat()
        retired = "" if f.invalidated_at is None else escape(f.supersede_reason or "retired")
        table.add_row(
            escape(f.subject),
            escape(f.predicate),
            escape(target or ""),
            f"{f.valid_from.date().isoformat()} .. {until}",
            f.recorded_at.isoformat(timespec="seconds"),
            f"{f.confidence:.2f}",
            retired,
        )
    return table


@facts_group.command(name="add")
@click.argument("subject")
@click.argument("predicate")
@click.argument("object", required=False)
@field_option("RememberFactBody", "value")
@field_option("RememberFactBody", "valid_from")
@field_option("RememberFactBody", "confidence")
@field_option("RememberFactBody", "importance")
@field_option("RememberFactBody", "source_episode_id")
@field_option("RememberFactBody", "subject_type")
@field_option("RememberFactBody", "object_type")
@pass_state
def add(  # noqa: PLR0913  (a click command: one parameter per option)
    state: CliState,
    subject: str,
    predicate: str,
    object: str | None,
    value: str | None,
    valid_from: datetime | None,
    confidence: float | None,
    importance: float | None,
    source_episode_id: str | None,
    subject_type: str | None,
    object_type: str | None,
) -> None:
    """Store the fact SUBJECT PREDICATE [OBJECT] (or --value), e.g. ``acme plan --value pro``.

    A new value of a single-valued predicate (lives_in, works_at, subscription_tier, ...) closes
    the current one, which stays as history; the same fact again is merged, not stored twice.
    """
    result = state.memory().remember_fact(
        subject,
        predicate,
        object,
        value=value,
        valid_from=valid_from,
        confidence=confidence,
        importance=importance,
        source_episode_id=source_episode_id,
        subject_type=subject_type,
        object_type=object_type,
    )
    if state.json_output:
        echo_json(result.to_dict())
        return
    what = "already known (merged)" if result.duplicate else "stored"
    state.out.print(
        _fact_rows([result.fact, *result.superseded], f"fact {what}; superseded {len(result.superseded)}")
    )


@facts_group.command(name="query")
@click.argument("entity")
@field_option("QueryFactsBody", "as_of")
@field_option("QueryFactsBody", "known_at")
@field_option("QueryFactsBody", "predicate")
@field_option("QueryFactsBody", "limit")
@pass_state
def query(
    state: CliState,
    entity: str,
    as_of: datetime | None,
    known_at: datetime | None,
    predicate: str | None,
    limit: int | None,
) -> None:
    """The facts about ENTITY: current ones, or true at --as-of, or held at --known-at."""
    found = state.memory(must_exist=True).query_facts(
        entity, as_of=as_of, known_at=known_at, predicate=predicate, limit=limit
    )
    if state.json_output:
        echo_json([f.to_dict() for f in found])
        return
    state.out.print(_fact_rows(found, f"facts about {escape(entity)} — {len(found)}"))


@facts_group.command(name="timeline")
@click.argument("entity")
@pass_state
def timeline(state: CliState, entity: str) -> None:
    """Every fact about ENTITY, current and retired, by valid time."""
    found = state.memory(must_exist=True).entity_timeline(entity)
    if state.json_output:
        echo_json([f.to_dict() for f in found])
        return
    state.out.print(_fact_rows(found, f"timeline of {escape(entity)} — {len(found)} fact(s)"))


def _given(**options: Any) -> dict[str, Any]:
    """The options given on the command line (an absent one keeps the facade's default)."""
    return {name: value for name, value in options.items() if value is not None}


@facts_group.command(name="neighbours")
@click.argument("entity")
@field_option("NeighboursBody", "depth")
@field_option("NeighboursBody", "as_of")
@pass_state
def neighbours(state: CliState, entity: str, depth: int | None, as_of: datetime | None) -> None:
    """Entities linked to ENTITY by facts, within --depth hops."""
    found = state.memory(must_exist=True).neighbours(entity, **_given(depth=depth, as_of=as_of))
    if state.json_output:
        echo_json([n.to_dict() for n in found])
        return
    for n in found:
        state.out.print(f"{n.hops}  {escape(n.entity.name)} [dim]({escape(n.entity.entity_type)})[/]")


@facts_group.command(name="paths")
@click.argument("source")
@click.argument("target")
@field_option("FindPathsBody", "max_depth")
@field_option("FindPathsBody", "limit")
@field_option("FindPathsBody", "as_of")
@pass_state
def paths(
    state: CliState,
    source: str,
    target: str,
    max_depth: int | None,
    limit: int | None,
    as_of: datetime | None,
) -> None:
    """Chains of facts from SOURCE to TARGET, shortest first."""
    found = state.memory(must_exist=True).find_paths(
        source, target, **_given(max_depth=max_depth, limit=limit, as_of=as_of)
    )
    if state.json_output:
        echo_json([[f.to_dict() for f in p] for p in found])
        return
    if not found:
        state.out.print("[dim]no path[/]")
    for p in found:
        state.out.print(" -> ".join(escape(f"{f.subject} {f.predicate} {f.object}") for f in p))


@facts_group.command(name="export")
@pass_state
def export_facts(state: CliState) -> None:
    """Write every fact of the tenant as JSONL on stdout (one JSON object per line)."""
    for row in state.memory(must_exist=True).export_facts():
        click.echo(json.dumps(row, ensure_ascii=False, sort_keys=True))


@facts_group.command(name="import")
@click.argument("file", type=click.File("r", encoding="utf-8"))
@pass_state
def import_facts(state: CliState, file: Any) -> None:
    """Restore facts from a JSONL FILE made by ``facts export``.

    Ids already held are skipped; a bad line is reported and makes the exit code 1.
    """
    rows = []
    for number, line in enumerate(file, start=1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except ValueError as exc:
                rows.append({"__line__": number, "__error__": str(exc)})
    report = state.memory().import_facts(rows)
    if state.json_output:
        echo_json(report.to_dict())
    else:
        state.out.print(
            f"stored {report.stored} · skipped {report.skipped} · rejected {len(report.rejected)}"
        )
        for position, reason in report.rejected:
            state.out.print(f"[red]row {position + 1}[/]: {escape(reason)}")
    if report.rejected:
        sys.exit(1)


@click.group(name="graph")
def graph_group() -> None:
    """The knowledge graph's health: stats, and check against seed 002's limits."""


def _print_stats(state: CliState) -> Any:
    stats = state.memory(must_exist=True).graph_stats()
    if state.json_output:
        echo_json(stats.to_dict())
        return stats
    for name, value in stats.to_dict().items():
        if name not in ("per_session", "problems"):
            state.out.print(f"{name:>20}  {value}")
    for problem in stats.problems:
        state.out.print(f"[red]problem[/]  {escape(problem)}")
    return stats


@graph_group.command(name="stats")
@pass_state
def stats_command(state: CliState) -> None:
    """Triples, sessions, average confidence, invalid share, merges."""
    _print_stats(state)


@graph_group.command(name="check")
@pass_state
def check(state: CliState) -> None:
    """Print the graph's stats; exit 1 past seed 002's limits (100 triples per session,
    average confidence 0.6, 5 % invalid triples)."""
    if _print_stats(state).problems:
        sys.exit(1)
