"""Rendering: rich tables for people, JSON documents for machines.

JSON is written with :func:`click.echo` (never through rich, which would wrap long lines).

Tables are laid out for an 80-column terminal and wrap rather than cut: every column that
holds text wraps at word boundaries and folds (never truncates with an ellipsis) a word longer
than the column; ids (episode ids, session ids) sit on a line of their own inside a wide
column, so they stay whole and can be copied; only short values (numbers, ``YYYY-MM-DD HH:MM``
times) get fixed columns that never wrap.

rich is imported by the functions that draw (a command's ``--help`` imports this module, through
the command, but draws nothing: issue #24 item 7); the console class is :mod:`memlane.cli.console`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from memlane.config import MemoryConfig
    from memlane.models import Episode, RecallHit, ScoreBreakdown
    from memlane.recall import Fusion, RankingWeights
    from memlane.stores import StoreStats

__all__ = [
    "compact_table",
    "decision",
    "echo_json",
    "episode_table",
    "escape",
    "format_weights",
    "hits_table",
    "minute",
    "ranking_formula",
    "ranking_terms",
    "stats_table",
    "stats_to_dict",
    "truncate_words",
]

CONTENT_WIDTH = 160
"""Content longer than this many characters is shortened at a word boundary, with an ellipsis, in tables."""


def ranking_terms(config: MemoryConfig | None = None) -> list[tuple[str, str]]:
    """How a recall with ``config`` ranks, as ``(signal, definition)`` pairs (:mod:`memlane.recall.ranking`).

    Built from the configuration and the ranking module, so it cannot drift from the code:
    the fusion named by ``config.retrieval``/``config.fusion`` (convex by default) with its
    parameters, the time-window boost, the recency decay (or the forgetting half-life) and
    the neutral importance of unrated episodes. Each definition fits an 80-column line.

    Args:
        config: The memory's configuration; default :class:`MemoryConfig` ``()``.

    Returns:
        Pairs such as ``("recency", "0.995^age_days")``; the first is the score.
    """
    from memlane.config import MemoryConfig

    config = config or MemoryConfig()
    profile = config.profile
    dense_cal = profile.dense
    span = dense_cal.ceil - dense_cal.floor
    dense = ("dense", f"clip((cosine of query and episode - {dense_cal.floor:g}) / {span:g}, 0, 1)")
    keyword = ("keyword", f"per-scope BM25 / best * (1 - exp(-best / {profile.keyword_saturation:g}))")
    band = profile.tie_band
    terms = [("score", f"(relevance + {band:g}*(w_rec*recency + w_imp*importance)/sum(w)) / {1 + band:g}")]
    if config.retrieval == "dense":
        terms += [("relevance", "dense"), dense]
    elif config.retrieval == "keyword":
        terms += [("relevance", "keyword"), keyword]
    else:
        terms += [("relevance", _fusion_term(profile.fusion)), dense, keyword]
    terms.append(("relevance~", "blended with session neighbours +-1/+-2 and the group's best"))
    terms.append(
        (
            "relevance^",
            f"entity: 1-(1-relevance)*(1-{profile.boosts.entity:g}) if the query names its one tag",
        )
    )
    if config.temporal:
        terms.append(
            (
                "relevance*",
                f"time_window: 1-(1-relevance)*(1-{profile.boosts.time_window:g})"
                " in a window the query names",
            )
        )
    if profile.boosts.graph > 0:
        terms.append(
            (
                "relevance+",
                f"1 - (1 - relevance)*(1 - {profile.boosts.graph:g}*graph), graph = the share of the "
                "query's entities (and 1-hop neighbours) the episode is linked to",
            )
        )
    speakers = profile.speakers
    if speakers.agent_discount > 0:
        terms.append(
            (
                "relevance-",
                f"{1 - speakers.agent_discount:g}*relevance if tagged {speakers.agent_tag!r}, "
                "the query not about 'you'",
            )
        )
    if config.forgetting:
        terms.append(("recency", "0.5^(age_days / half_life)   (forgetting policy)"))
    else:
        terms.append(("recency", f"{profile.decay_per_day:g}^age_days"))
    terms.append(("importance", f"rating/10, unrated {_unrated_importance():g}"))
    return terms


def _fusion_term(fusion: Fusion) -> str:
    """The hybrid base relevance of ``fusion`` as a formula."""
    if fusion.method == "noisy_or":
        return f"1 - (1 - dense)*(1 - {fusion.keyword_weight:g}*keyword)   (hybrid, noisy-OR)"
    w = fusion.dense_weight
    if fusion.method == "rrf":
        k = fusion.rrf_k
        return f"({w:g}/({k:g} + rank_dense) + {1 - w:g}/({k:g} + rank_keyword)) * {k + 1:g}   (rrf)"
    if fusion.coverage_power == 0.0:
        return f"{w:g}*dense + {1 - w:g}*keyword   (hybrid, convex)"
    power = "" if fusion.coverage_power == 1.0 else f"^{fusion.coverage_power:g}"
    # coverage: the share of the recall's candidates that match a query term
    return f"w*dense + (1-w)*keyword, w = 1 - {1 - w:g}*(1-coverage){power}   (convex)"


def ranking_formula(config: MemoryConfig | None = None) -> str:
    """:func:`ranking_terms` on one line: ``score = ...; relevance = ...; ...`` (plain text)."""
    return "; ".join(f"{name} = {definition}" for name, definition in ranking_terms(config))


def _unrated_importance() -> float:
    import numpy as np  # lazily, with the ranking: rendering help text needs neither

    from memlane.recall import importance_signal

    return float(importance_signal(np.array([np.nan]))[0])


def escape(text: str) -> str:
    """``text`` with its rich markup escaped (:func:`rich.markup.escape`), to print it as written."""
    from rich.markup import escape as escape_markup

    return escape_markup(text)


def echo_json(document: Any) -> None:
    """Print one JSON document on stdout (UTF-8, not ASCII-escaped)."""
    click.echo(json.dumps(document, ensure_ascii=False, indent=2))


def truncate_words(text: str, width: int = CONTENT_WIDTH) -> str:
    """Flatten whitespace and shorten ``text`` to at most ``width`` characters at a word boundary.

    A single word longer than ``width`` is cut (an ellipsis marks every shortening).
    """
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    cut = flat[: width - 1]
    space = cut.rfind(" ")
    if space > width // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + "…"


def _importance(value: float | None) -> str:
    return "—" if value is None else f"{value:g}"


def minute(value: datetime) -> str:
    """``YYYY-MM-DD HH:MM`` (the table format of times; callers say which timezone, UTC)."""
    return value.strftime("%Y-%m-%d %H:%M")


def format_weights(weights: RankingWeights, preset: str | None = None) -> str:
    """Describe weights as ``relevance 0.6 · recency 0.2 · importance 0.2 (preset)``."""
    text = (
        f"relevance {weights.relevance:g} · recency {weights.recency:g} · importance {weights.importance:g}"
    )
    if weights.formula == "seed":
        text += " · seed formula (weighted mean)"
    elif weights.tie_band is not None:
        text += f" · tie band {weights.tie_band:g}"
    return f"{text} ({preset})" if preset else text


def episode_table(episode: Episode) -> Table:
    """A two-column field/value table of one stored episode."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

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


def compact_table(title: str | None = None) -> Table:
    """A table with a header rule, a blank line between rows, no outer padding and two spaces between columns.

    The narrow gaps leave an 80-column terminal room for a 32-character id beside four
    numeric columns; the blank lines keep rows of several lines apart.
    """
    from rich import box
    from rich.table import Table

    return Table(
        title=title,
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
        show_lines=True,
    )


WIDE_TABLE_COLUMNS = 150
"""From this console width on, event_type, created_at and tags get their own columns."""


def decision(b: ScoreBreakdown) -> str:
    """What put a hit where it is, from its breakdown: ``decided by relevance, lead 0.263; boosted: entity``.

    Args:
        b: A ranked hit's breakdown.
    """
    text = f"decided by {b.decided_by}"
    if b.lead is not None:
        text += f", lead {b.lead:.3f}"
    if b.boosts:
        text += "; boosted: " + ", ".join(boost.name for boost in b.boosts)
    if b.agent_discount is not None:
        text += "; agent turn discounted"
    return text


def _content(hit: RecallHit, show_ids: bool) -> Text:
    """The content cell: shortened content, what decided a ranked hit's place, and the id."""
    from rich.text import Text

    content = Text(truncate_words(hit.episode.content))
    if hit.breakdown is not None and hit.breakdown.decided_by is not None:
        content.append("\n" + decision(hit.breakdown), style="dim")
    if show_ids:
        content.append("\n" + hit.episode.id, style="dim")
    return content


def hits_table(
    hits: Sequence[RecallHit], *, title: str | None = None, width: int = 80, show_ids: bool = True
) -> Table:
    """A table of recall hits.

    Ranked hits (with a breakdown) get the columns score, relevance, recency and
    importance, plus dense and keyword on wide consoles (signals in [0, 1]; ``—`` = not
    available; a ``*`` after relevance marks an episode inside the time window the query
    named); a structured lookup (no query) lists episodes newest first with their raw
    importance rating (1-10, ``—`` = unrated) instead; a ranked hit's cell ends with what
    decided its place (:func:`decision`, read from its breakdown). On consoles
    narrower than :data:`WIDE_TABLE_COLUMNS`, event_type, created_at and tags are shown
    above the content in one ``episode`` column. The episode's id is the last line of its
    cell, whole. Content is shortened at a word boundary after :data:`CONTENT_WIDTH` characters.

    Args:
        hits: The hits, in rank order.
        title: Table title (rich markup).
        width: Console width in characters.
        show_ids: Show each episode's id.
    """
    from rich.text import Text

    ranked = any(hit.breakdown is not None for hit in hits)
    wide = width >= WIDE_TABLE_COLUMNS
    table = compact_table(title)
    table.add_column("#", justify="right", no_wrap=True)
    if ranked:
        for name in ("score", "relevance", "recency", "importance", "dense", "keyword")[: 6 if wide else 4]:
            table.add_column(name, justify="right", no_wrap=True, style="bold" if name == "score" else None)
    else:
        table.add_column("importance", justify="right", no_wrap=True)
    if wide:
        table.add_column("event_type", style="cyan", max_width=24, overflow="fold")
        table.add_column("created_at", no_wrap=True)
        table.add_column("tags", style="magenta", max_width=32, overflow="fold")
        table.add_column("content", min_width=30, overflow="fold")
    else:
        table.add_column("episode", overflow="fold")
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
        date = ep.created_at.date().isoformat() if ranked else minute(ep.created_at)
        tags = ", ".join(ep.tags)
        content = _content(hit, show_ids)
        if wide:
            cells: list[str | Text] = [Text(ep.event_type), date, Text(tags), content]
        else:
            cell = Text()
            cell.append(ep.event_type, style="cyan")
            cell.append(f" · {date}")
            if tags:
                cell.append(" · ")
                cell.append(tags, style="magenta")
            cell.append("\n")
            cell.append_text(content)
            cells = [cell]
        table.add_row(str(position), *signals, *cells)
    return table


Owners = Sequence[tuple[str, str, int]]
"""``(agent_id, user_id, sessions)`` of the tenant's stored conversations (``SessionMemory.owners``)."""


_OWNERS_SHOWN = 10


def stats_to_dict(stats: StoreStats, *, scope: str, owners: Owners = ()) -> dict[str, Any]:
    """The JSON form of :class:`StoreStats` (timestamps ISO 8601, model as ``{model_id, dims}``),
    with the tenant's stored conversations (``conversations``: their count; ``conversation_owners``)."""
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
        "conversations": sum(n for _, _, n in owners),
        "conversation_owners": [{"agent_id": a, "user_id": u, "sessions": n} for a, u, n in owners],
    }


def stats_table(stats: StoreStats, *, scope: str, owners: Owners = ()) -> Table:
    """A field/value table of :class:`StoreStats`, with per-event-type counts and stored conversations."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    data = stats_to_dict(stats, scope=scope, owners=owners)
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
    table.add_row("sessions", f"{stats.sessions} (with episodes)")
    table.add_row("stored conversations", f"{data['conversations']} (this tenant)")
    for agent_id, user_id, count in owners[:_OWNERS_SHOWN]:
        table.add_row(Text(f"  --agent {agent_id} --user {user_id}", style="cyan"), str(count))
    if len(owners) > _OWNERS_SHOWN:
        table.add_row("  …", f"{len(owners) - _OWNERS_SHOWN} more owners ('memlane --json stats' lists all)")
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
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

    with Progress(  # imported here: most commands draw no bar (issue #24 item 7)
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
