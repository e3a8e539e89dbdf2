"""Rendering: rich tables for people, JSON documents for machines.

JSON is written with :func:`click.echo` (never through rich, which would wrap long lines).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import click
from rich import box
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from memlane.models import Episode, RecallHit
from memlane.ranking import RankingWeights
from memlane.stores.base import StoreStats

__all__ = [
    "FORMULA",
    "echo_json",
    "episode_table",
    "format_weights",
    "hits_table",
    "stats_table",
    "stats_to_dict",
]

CONTENT_WIDTH = 160
"""Content longer than this many characters is cut with an ellipsis in tables."""

FORMULA = (
    "score = (w_rel*relevance + w_rec*recency + w_imp*importance) / (w_rel + w_rec + w_imp); "
    "relevance = max(0, cosine), recency = 0.995^age_days, importance = rating/10 (unrated 0.5)"
)
"""One-line explanation of the ranking formula (see :mod:`memlane.ranking`)."""


def echo_json(document: Any) -> None:
    """Print one JSON document on stdout (UTF-8, not ASCII-escaped)."""
    click.echo(json.dumps(document, ensure_ascii=False, indent=2))


def _truncate(text: str, width: int = CONTENT_WIDTH) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _importance(value: float | None) -> str:
    return "—" if value is None else f"{value:g}"


def _minute(value: datetime) -> str:
    return value.strftime("%Y-%m-%d %H:%M")


def format_weights(weights: RankingWeights, preset: str | None = None) -> str:
    """Describe weights as ``relevance 0.6 · recency 0.2 · importance 0.2 (preset)``."""
    text = (
        f"relevance {weights.relevance:g} · recency {weights.recency:g} · importance {weights.importance:g}"
    )
    return f"{text} ({preset})" if preset else text


def episode_table(episode: Episode) -> Table:
    """A two-column field/value table of one stored episode."""
    table = Table(box=box.SIMPLE, show_header=False)
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    rows: list[tuple[str, str]] = [
        ("id", episode.id),
        ("tenant / session", f"{episode.tenant_id} / {episode.session_id}"),
        ("event_type", episode.event_type),
        ("content", episode.content),
        ("tags", ", ".join(episode.tags) or "—"),
        (
            "importance",
            _importance(episode.importance) + ("" if episode.importance is not None else " (unrated)"),
        ),
        ("created_at", episode.created_at.isoformat()),
        ("metadata", json.dumps(dict(episode.metadata), ensure_ascii=False) if episode.metadata else "—"),
        ("embedding_model", episode.embedding_model or "—"),
    ]
    for name, value in rows:
        table.add_row(name, Text(value))
    return table


WIDE_TABLE_COLUMNS = 150
"""From this console width on, event_type, created_at and tags get their own columns."""


def hits_table(hits: Sequence[RecallHit], *, title: str | None = None, width: int = 80) -> Table:
    """A table of recall hits.

    Ranked hits (with a breakdown) get the columns score, relevance, recency and
    importance, plus dense and keyword on wide consoles (signals in [0, 1]; ``—`` = not
    available; a ``*`` after relevance marks an episode inside the time window the query
    named); a structured lookup (no query) lists episodes newest first with their raw
    importance rating (1-10, ``—`` = unrated) instead. On consoles
    narrower than :data:`WIDE_TABLE_COLUMNS`, event_type, created_at and tags are shown
    above the content in one ``episode`` column.

    Args:
        hits: The hits, in rank order.
        title: Table title (rich markup).
        width: Console width in characters.
    """
    ranked = any(hit.breakdown is not None for hit in hits)
    wide = width >= WIDE_TABLE_COLUMNS
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("#", justify="right", no_wrap=True)
    if ranked:
        for name in ("score", "relevance", "recency", "importance", "dense", "keyword")[: 6 if wide else 4]:
            table.add_column(name, justify="right", no_wrap=True, style="bold" if name == "score" else None)
    else:
        table.add_column("importance", justify="right", no_wrap=True)
    if wide:
        table.add_column("event_type", no_wrap=True, style="cyan")
        table.add_column("created_at", no_wrap=True)
        table.add_column("tags", style="magenta", max_width=32)
        table.add_column("content", ratio=1, min_width=30)
    else:
        table.add_column("episode", ratio=1, min_width=24)
    for position, hit in enumerate(hits, start=1):
        ep = hit.episode
        signals: list[str]
        if hit.breakdown is not None:
            b = hit.breakdown
            signals = [
                f"{b.score:.3f}",
                f"{b.relevance:.3f}" + ("*" if b.in_window else ""),
                f"{b.recency:.3f}",
                f"{b.importance:.2f}",
                "—" if b.dense is None else f"{b.dense:.3f}",
                "—" if b.keyword is None else f"{b.keyword:.3f}",
            ][: 6 if wide else 4]
        else:
            signals = [_importance(ep.importance)]
        date = ep.created_at.date().isoformat() if ranked else _minute(ep.created_at)
        tags = ", ".join(ep.tags)
        if wide:
            cells: list[str | Text] = [Text(ep.event_type), date, Text(tags), Text(_truncate(ep.content))]
        else:
            cell = Text()
            cell.append(ep.event_type, style="cyan")
            cell.append(f" · {date}")
            if tags:
                cell.append(" · ")
                cell.append(tags, style="magenta")
            cell.append("\n" + _truncate(ep.content))
            cells = [cell]
        table.add_row(str(position), *signals, *cells)
    return table


def stats_to_dict(stats: StoreStats, *, scope: str) -> dict[str, Any]:
    """The JSON form of :class:`StoreStats` (timestamps ISO 8601, model as ``{model_id, dims}``)."""
    model = stats.embedding_model
    return {
        "db": stats.location,
        "scope": scope,
        "episodes": stats.episodes,
        "active": stats.active,
        "archived": stats.archived,
        "superseded": stats.superseded,
        "with_vectors": stats.with_vectors,
        "tenants": stats.tenants,
        "sessions": stats.sessions,
        "event_types": dict(stats.event_types),
        "oldest": None if stats.oldest is None else stats.oldest.isoformat(),
        "newest": None if stats.newest is None else stats.newest.isoformat(),
        "embedding_model": None if model is None else {"model_id": model[0], "dims": model[1]},
        "schema_version": stats.schema_version,
    }


def stats_table(stats: StoreStats, *, scope: str) -> Table:
    """A field/value table of :class:`StoreStats`, with per-event-type counts."""
    data = stats_to_dict(stats, scope=scope)
    model = stats.embedding_model
    table = Table(
        box=box.SIMPLE, show_header=False, title=f"memlane stats ({scope} scope)", title_justify="left"
    )
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    table.add_row("db", Text(stats.location))
    table.add_row("schema version", str(stats.schema_version))
    table.add_row("embedding model", "—" if model is None else f"{model[0]} ({model[1]} dims)")
    table.add_row("episodes", f"{stats.episodes} ({stats.with_vectors} with vectors)")
    table.add_row("  active", str(stats.active))
    table.add_row("  archived", str(stats.archived))
    table.add_row("  superseded", str(stats.superseded))
    table.add_row("tenants", str(stats.tenants))
    table.add_row("sessions", str(stats.sessions))
    table.add_row("oldest", data["oldest"] or "—")
    table.add_row("newest", data["newest"] or "—")
    if stats.event_types:
        table.add_row("event types", str(len(stats.event_types)))
    for event_type, count in stats.event_types.items():
        table.add_row(Text(f"  {event_type}", style="cyan"), str(count))
    return table


StageCallback = Callable[[str, int, int], None]
"""``progress(stage, done, total)``: one progress bar per stage name, advanced to ``done`` of ``total``."""


@contextmanager
def stage_progress(console: Console, *, disable: bool) -> Iterator[StageCallback]:
    """A rich progress display with one bar per named stage (e.g. ``remember``, ``recall``).

    Args:
        console: Where to draw (stderr, so stdout stays machine-readable).
        disable: Draw nothing (e.g. with ``--json``).

    Yields:
        The callback to report progress with.
    """
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=disable,
    ) as bar:
        tasks: dict[str, TaskID] = {}

        def progress(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(stage, total=total)
            bar.update(tasks[stage], completed=done)

        yield progress
