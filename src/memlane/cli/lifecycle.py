"""Memory lifecycle commands: ``history`` (the supersede chain of an episode), ``forget`` and ``compact``."""

from __future__ import annotations

from datetime import datetime

import click

from memlane.cli.app import CliError, CliState, pass_state
from memlane.cli.confirm import confirm_destructive
from memlane.cli.output import compact_table, echo_json, escape, minute
from memlane.cli.params import ISO_DATETIME
from memlane.config import DEFAULT_COMPACT_SIMILARITY
from memlane.errors import EpisodeNotFoundError, ValidationError

__all__ = ["compact", "forget", "history"]


@click.command()
@click.argument("episode_id")
@pass_state
def history(state: CliState, episode_id: str) -> None:
    """Show the supersede chain through EPISODE_ID, oldest first.

    Each row shows the episode's id, content and why it was superseded, when the fact was
    true (valid_from → valid_until; open = still true) and when memlane recorded and
    retired it (times in UTC, to the minute; --json gives them exactly). Nothing in the
    chain is ever deleted by superseding.
    """
    from rich.text import Text

    memory = state.memory(must_exist=True)
    try:
        chain = memory.history(episode_id)
    except (EpisodeNotFoundError, ValidationError) as exc:
        raise CliError(str(exc), kind=type(exc).__name__, json_output=state.json_output) from exc
    if state.json_output:
        echo_json([ep.to_dict() for ep in chain])
        return
    table = compact_table(f"history of {escape(episode_id)} — {len(chain)} episode(s), oldest first")
    table.add_column("episode", overflow="fold")
    table.add_column("valid from → until", no_wrap=True)
    table.add_column("recorded → retired", no_wrap=True)
    for ep in chain:
        cell = Text(ep.id, style="bold")
        cell.append("\n" + ep.content, style="")
        if ep.supersede_reason:
            cell.append(f"\nreason: {ep.supersede_reason}", style="dim")
        until = "open" if ep.valid_until is None else minute(ep.valid_until)
        retired = "—" if ep.invalidated_at is None else minute(ep.invalidated_at)
        table.add_row(
            cell,
            f"{minute(ep.valid_from)}\n→ {until}",
            f"{minute(ep.recorded_at)}\n→ {retired}",
        )
    state.out.print(table)


@click.command()
@click.option("--dry-run", is_flag=True, help="Only show what would be forgotten; change nothing.")
@click.option(
    "--threshold",
    type=click.FloatRange(0.0, 1.0, min_open=True, max_open=True),
    default=None,
    help="Strength in (0, 1) below which episodes are forgotten. Default: from the config (0.05).",
)
@click.option(
    "--now", type=ISO_DATETIME, default=None, help="Reference time (ISO 8601 with timezone). Default: now."
)
@click.option(
    "--force",
    is_flag=True,
    help="Forget even though forgetting is off in the configuration (forgetting: false, the default).",
)
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation (asked only on a terminal).")
@pass_state
def forget(
    state: CliState, dry_run: bool, threshold: float | None, now: datetime | None, force: bool, yes: bool
) -> None:
    """Archive (or delete, if configured) episodes in scope whose strength faded.

    Strength = 0.5 ** (age_days / half_life), the half-life set by importance: 9-10 never
    forgotten, 7-8 30 days, 4-6 7 days, 1-3 1 day, unrated 7 days (configurable with
    forgetting_policy). Archived episodes leave recall but stay in the database and exports.

    Forgetting is off by default: unless the configuration says 'forgetting: true', only
    --dry-run runs, and changing anything needs --force. On a terminal the command asks
    before archiving or deleting unless --yes is given.
    """
    from rich.text import Text

    memory = state.memory(must_exist=True)
    if not dry_run and not force and not memory.config.forgetting:
        raise CliError(
            "forgetting is off in the configuration (forgetting: false, the default); preview with "
            "--dry-run, or pass --force to forget anyway",
            kind="ForgettingOff",
            json_output=state.json_output,
        )
    if not dry_run:
        preview = memory.forget(now=now, dry_run=True, threshold=threshold)
        if preview.count:
            verb = {"archive": "Archive", "delete": "Delete"}[preview.action]
            confirm_destructive(
                f"{verb} {preview.count} episode(s) with strength < {preview.threshold:g}?",
                yes=yes,
                json_output=state.json_output,
            )
    report = memory.forget(now=now, dry_run=dry_run, threshold=threshold)
    if state.json_output:
        echo_json(report.to_dict())
        return
    verb = {"archive": "archived", "delete": "deleted"}[report.action]
    head = f"would be {verb}" if report.dry_run else verb
    state.out.print(f"{report.count} episode(s) {head} (strength < {report.threshold:g})")
    for episode, strength in report.forgotten:
        state.out.print(Text(f"  {strength:.4f}  {episode.id}  {episode.content}"))


@click.command()
@click.option(
    "--similarity",
    type=click.FloatRange(0.0, 1.0, min_open=True, max_open=True),
    default=DEFAULT_COMPACT_SIMILARITY,
    show_default=True,
    help="Merge episodes of one tenant and event type whose embeddings have cosine above this.",
)
@click.option(
    "--older-than-days",
    type=click.FloatRange(0.0, min_open=True),
    default=None,
    help="Also archive never-retrieved episodes older than this many days (never importance >= 9).",
)
@click.option("--dry-run", is_flag=True, help="Only show what would change; change nothing.")
@click.option(
    "--now", type=ISO_DATETIME, default=None, help="Reference time (ISO 8601 with timezone). Default: now."
)
@pass_state
def compact(
    state: CliState, similarity: float, older_than_days: float | None, dry_run: bool, now: datetime | None
) -> None:
    """Merge near-duplicate episodes in scope and archive stale ones.

    Each cluster of near-duplicates becomes one episode (the most important member's text,
    tags united, highest importance, earliest valid_from, retrieval counts summed); the
    originals are archived with a pointer to it (see `memlane history ID`), never deleted.
    """
    from rich.text import Text

    memory = state.memory(must_exist=True)
    report = memory.compact(
        similarity=similarity, never_retrieved_older_than_days=older_than_days, dry_run=dry_run, now=now
    )
    if state.json_output:
        echo_json(report.to_dict())
        return
    head = "would be" if report.dry_run else "were"
    state.out.print(
        f"{report.merged_originals} episode(s) {head} merged into {len(report.merges)}, "
        f"{len(report.stale)} stale episode(s) {head} archived; "
        f"active episodes {report.active_before} -> {report.active_after}"
    )
    for group in report.merges:
        state.out.print(Text(f"  merged {len(group.originals)} -> {group.merged.id}  {group.merged.content}"))
    for episode in report.stale:
        state.out.print(Text(f"  stale  {episode.id}  {episode.content}"))
