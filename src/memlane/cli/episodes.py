"""Everyday commands: ``remember``, ``recall``, ``stats`` and ``prune``."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import click

from memlane.cli.app import CliError, CliState, pass_state
from memlane.cli.confirm import confirm_destructive
from memlane.cli.output import (
    echo_json,
    episode_table,
    escape,
    format_weights,
    hits_table,
    stats_table,
    stats_to_dict,
)
from memlane.cli.params import IMPORTANCE, ISO_DATETIME, JSON_OBJECT, WEIGHTS, FieldType, field_option
from memlane.errors import EpisodeNotFoundError, ValidationError
from memlane.recall import RankingWeights, resolve_weights

__all__ = ["prune", "recall", "remember", "stats"]

_TAG_HELP = "Tag (repeatable). Tags are case-insensitive and whitespace-normalised."


@click.command()
@click.argument("event_type")
@click.argument("content")
@click.option("--tag", "tags", multiple=True, metavar="TAG", help=_TAG_HELP)
@click.option(
    "--importance",
    type=IMPORTANCE,
    default=None,
    help=(
        "Rating from 1 (trivial) to 10 (crucial), clamped to that range, or 'auto' (estimated from the "
        "content). Omit for unrated (scored 0.5) or the configured default."
    ),
)
@click.option(
    "--created-at",
    type=ISO_DATETIME,
    default=None,
    help="When it happened: ISO 8601 with a timezone, e.g. 2025-03-15T12:00:00Z. Default: now.",
)
@click.option("--metadata", type=JSON_OBJECT, default=None, help="A JSON object stored with the episode.")
@click.option(
    "--valid-from",
    type=ISO_DATETIME,
    default=None,
    help="When the fact became true (ISO 8601 with timezone). Default: --created-at.",
)
@click.option(
    "--supersedes",
    "supersedes",
    multiple=True,
    metavar="ID",
    help="Retire this episode (repeatable): its validity ends where this one's begins; kept as history.",
)
@pass_state
def remember(  # noqa: PLR0913  (a click command: one parameter per option)
    state: CliState,
    event_type: str,
    content: str,
    tags: tuple[str, ...],
    importance: float | str | None,
    created_at: datetime | None,
    metadata: dict[str, Any] | None,
    valid_from: datetime | None,
    supersedes: tuple[str, ...],
) -> None:
    """Remember one episode and print it as stored (with its new id).

    EVENT_TYPE is a category label (1-200 chars, case-sensitive), e.g. preference or
    booking_failed. CONTENT is the text to remember; it is embedded for semantic recall.
    The episode is recorded under --tenant/--session. With --supersedes, the old episodes'
    validity is closed in the same transaction (see 'memlane history').
    """
    try:
        episode = state.memory().remember_episode(
            event_type,
            content,
            list(tags),
            importance,
            created_at=created_at,
            metadata=metadata,
            valid_from=valid_from,
            supersedes=list(supersedes) or None,
        )
    except (ValidationError, EpisodeNotFoundError) as exc:
        raise CliError(str(exc), kind=type(exc).__name__, json_output=state.json_output) from exc
    if state.json_output:
        echo_json(episode.to_dict())
    else:
        state.out.print(episode_table(episode))


@click.command()
@click.argument("query", required=False, type=FieldType("RecallBody", "query"))
@field_option("RecallBody", "event_type")
@click.option(
    "--tag", "tags", multiple=True, metavar="TAG", help="Only episodes carrying ALL these tags (repeatable)."
)
@field_option("RecallBody", "limit")
@field_option("RecallBody", "preset")
@click.option(
    "--weights",
    type=WEIGHTS,
    default=None,
    help="Custom weights relevance,recency,importance, e.g. 2,1,1 (each >= 0, not all 0; only ratios count).",
)
@field_option(
    "RecallBody",
    "retrieval",
    help_suffix="Hybrid is w dense + (1-w) keyword, w = 1 - 0.6 (1 - share of candidates matching a "
    "query term), unless the config's fusion says otherwise. "
    "Default: from the config (hybrid).",
)
@field_option("RecallBody", "min_relevance", help_suffix="Default: from the config (0).")
@field_option("RecallBody", "now", help_suffix="Also the reference for time expressions like 'last May'.")
@field_option("RecallBody", "as_of", help_suffix="Default: what is still true now.")
@field_option("RecallBody", "known_at")
@pass_state
def recall(  # noqa: PLR0913  (a click command: one parameter per option)
    state: CliState,
    query: str | None,
    event_type: str | None,
    tags: tuple[str, ...],
    limit: int | None,
    preset: str | None,
    weights: RankingWeights | None,
    retrieval: str | None,
    min_relevance: float | None,
    now: datetime | None,
    as_of: datetime | None,
    known_at: datetime | None,
) -> None:
    """Recall episodes in scope: ranked by QUERY, or newest first without one.

    By default only episodes still true now and not superseded are recalled; --as-of asks
    what was true then, --known-at what memlane knew then.

    With QUERY, each hit shows its score breakdown, every signal in [0, 1]:
    relevance = how well it matches QUERY and decides the order; hybrid retrieval (the
    default) combines dense = clip((cosine - 0.1)/0.6) and keyword = saturated per-scope
    BM25 as relevance = w dense + (1 - w) keyword, w = 1 - 0.6 (1 - coverage), coverage
    the share of the candidates that match a query term (the config's fusion: noisy_or or
    rrf chooses another), blended with the episode's session neighbours and lifted when
    QUERY names its tag or a time it lies in ("last May", "in 2023"); recency =
    0.995^age_days and importance = rating/10 (unrated 0.5) only break near-ties (at most
    0.1 of relevance). --min-relevance filters on the episode's own relevance. If the
    embedding model fails, recall falls back to keywords and says so.

    Without QUERY, a structured lookup by --event-type/--tag, newest first; the
    embedding model is not used (and --preset/--weights are ignored).
    """
    if preset is not None and weights is not None:
        raise click.UsageError("use either --preset or --weights, not both")
    chosen: RankingWeights | str | None = weights if weights is not None else preset
    memory = state.memory(must_exist=True)
    try:
        hits = memory.recall_episodes(
            query,
            event_type,
            list(tags),
            limit,
            now=now,
            weights=chosen,
            retrieval=retrieval,
            min_relevance=min_relevance,
            as_of=as_of,
            known_at=known_at,
        )
    except ValidationError as exc:
        raise CliError(str(exc), kind=type(exc).__name__, json_output=state.json_output) from exc
    if state.json_output:
        echo_json([hit.to_dict() for hit in hits])
        return
    if query is None:
        title = f"newest first (structured lookup) — {len(hits)} episode(s)"
    else:
        resolved = resolve_weights(chosen, memory.config.ranking_weights)
        mode = retrieval or memory.config.retrieval
        title = (
            f'recall "{escape(query)}" — {len(hits)} hit(s) · weights {format_weights(resolved, preset)}'
            f" · {mode}"
        )
        if any(h.breakdown is not None and h.breakdown.fallback for h in hits):
            title += " · [yellow]embedding model failed: keyword-only fallback[/]"
    if not hits:
        state.out.print(f"{title}\n[dim]no episodes match (scope: {state.scope.value})[/]")
        return
    state.out.print(hits_table(hits, title=title, width=state.out.width))


@click.command()
@pass_state
def stats(state: CliState) -> None:
    """Summarise the episodes in scope.

    Shows the episode count (and how many have vectors) split into active, archived
    (forgotten or stale) and superseded (replaced by a newer episode), distinct tenants and
    sessions, counts per event type, the oldest and newest created_at (UTC), the embedding
    model the database is bound to, its schema version and its path; and the tenant's stored
    conversations ('memlane sessions import'), with the --agent/--user ids they belong to.
    """
    memory = state.memory(must_exist=True)
    summary, owners = memory.stats(), memory.sessions.owners()
    if state.json_output:
        echo_json(stats_to_dict(summary, scope=state.scope.value, owners=owners))
    else:
        state.out.print(stats_table(summary, scope=state.scope.value, owners=owners))


@click.command()
@click.option(
    "--retention-days",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Delete episodes whose created_at is more than this many days (> 0) before now.",
)
@click.option(
    "--now", type=ISO_DATETIME, default=None, help="Reference time (ISO 8601 with timezone). Default: now."
)
@click.option("--dry-run", is_flag=True, help="Only count what would be deleted; change nothing.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation (asked only on a terminal).")
@pass_state
def prune(
    state: CliState, retention_days: float | None, now: datetime | None, dry_run: bool, yes: bool
) -> None:
    """Delete old episodes and print how many were deleted.

    Retention is table-wide: it deletes matching episodes of EVERY tenant and session,
    whatever --scope says. Without --retention-days the configured retention applies
    (none by default, so nothing is deleted). Never-forget episodes (importance >= 9)
    are kept. --dry-run reports the count and deletes nothing; on a terminal the command
    asks before deleting unless --yes is given.
    """
    memory = state.memory(must_exist=True)
    if retention_days is not None:
        memory = memory.with_context(config=state.config(retention_days=retention_days))
    days = memory.config.retention_days
    at = now or memory.clock.now()
    cutoff = None if days is None else at - timedelta(days=days)
    would = memory.prune(now=at, dry_run=True)
    if not dry_run and would:
        from memlane.stores import EpisodeFilter

        total = memory.store.stats(EpisodeFilter()).episodes
        assert cutoff is not None
        confirm_destructive(
            f"Delete {would} of {total} episode(s), of ALL tenants, created before {cutoff.isoformat()}?",
            yes=yes,
            json_output=state.json_output,
        )
    sessions = memory.sessions.prune(now=at, dry_run=True)  # expired conversations go with prune()
    deleted = would if dry_run else memory.prune(now=at)
    verb = "would delete" if dry_run else "deleted"
    if state.json_output:
        echo_json(
            {
                "deleted": 0 if dry_run else deleted,
                "would_delete": deleted if dry_run else None,
                "sessions": sessions,
                "dry_run": dry_run,
                "retention_days": days,
                "cutoff": None if cutoff is None else cutoff.isoformat(),
            }
        )
    elif cutoff is None:
        state.out.print(f"{verb} 0 episodes (no retention configured; pass --retention-days N)")
    else:
        state.out.print(
            f"{verb} {deleted} episode(s) created before {cutoff.isoformat()} and {sessions} stored "
            "conversation(s) ended before it (all tenants)"
        )
