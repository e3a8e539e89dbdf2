"""Moving episodes in and out as JSONL: ``ingest`` and ``export`` (format: :mod:`memlane.cli.jsonl`)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, BinaryIO

import click
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from memlane import EpisodeInput
from memlane.cli.app import CliState, pass_state
from memlane.cli.jsonl import LineError, dump_episode, parse_episode_line
from memlane.cli.output import echo_json
from memlane.errors import DuplicateEpisodeError, ValidationError

if TYPE_CHECKING:
    from memlane import EpisodicMemory

__all__ = ["IngestReport", "count_episode_lines", "export", "ingest", "ingest_stream"]

logger = logging.getLogger(__name__)

_ITEM_ERRORS = (ValidationError, DuplicateEpisodeError)
"""Errors that condemn a single line; any other error (embedder, disk) aborts the ingest."""


@dataclass
class IngestReport:
    """Outcome of an ingest.

    Attributes:
        stored: Episodes stored.
        rejected: ``(line_number, reason)`` for each refused line (1-based line numbers).
    """

    stored: int = 0
    rejected: list[tuple[int, str]] = field(default_factory=list)


def _store_batch(
    memory: EpisodicMemory,
    batch: list[tuple[int, EpisodeInput]],
    report: IngestReport,
    on_reject: Callable[[int, str], None],
) -> None:
    """Store a batch in one call; if an item is bad, retry the items one by one to keep the good ones."""
    try:
        memory.remember_episodes([item for _, item in batch])
    except _ITEM_ERRORS as exc:
        if len(batch) == 1:
            on_reject(batch[0][0], str(exc))
            return
        logger.debug("batch of %d failed (%s); retrying its items one by one", len(batch), exc)
    else:
        report.stored += len(batch)
        return
    for line_number, item in batch:
        try:
            memory.remember_episodes([item])
        except _ITEM_ERRORS as exc:
            on_reject(line_number, str(exc))
        else:
            report.stored += 1


def ingest_stream(
    memory: EpisodicMemory,
    stream: BinaryIO,
    *,
    batch_size: int = 64,
    on_reject: Callable[[int, str], None] | None = None,
    on_progress: Callable[[int], None] | None = None,
) -> IngestReport:
    """Remember every good line of a JSONL stream, in batches of ``batch_size`` (one embedder call each).

    Rejections are reported in line order: a batch's lines are parsed, the batch is stored,
    and only then are its malformed and refused lines reported, sorted by line number.

    Args:
        memory: Where to store the episodes.
        stream: Binary JSONL (see :mod:`memlane.cli.jsonl`); blank lines are skipped.
        batch_size: Episodes per :meth:`EpisodicMemory.remember_episodes` call, >= 1.
        on_reject: Called with ``(line_number, reason)`` for each refused line, in line order.
        on_progress: Called after each batch with the number of episodes (non-blank lines)
            handled so far, stored or rejected.

    Returns:
        The :class:`IngestReport` (rejections in line order).

    Raises:
        EmbeddingError, StoreError: a failure not tied to one line; earlier batches stay stored.
    """
    report = IngestReport()
    lines = _PendingLines(memory, report, on_reject, on_progress)
    handled = 0
    for line_number, raw in enumerate(stream, start=1):
        if not raw.strip():
            continue
        handled += 1
        try:
            lines.batch.append((line_number, parse_episode_line(raw)))
        except LineError as exc:
            lines.hold(line_number, str(exc))
        if len(lines.batch) >= batch_size:
            lines.flush(handled)
    if lines.batch or lines.rejected:
        lines.flush(handled)
    return report


class _PendingLines:
    """The lines read since the last stored batch: their episodes, and their rejections held back
    until the batch is stored, so rejections are reported in line order."""

    def __init__(
        self,
        memory: EpisodicMemory,
        report: IngestReport,
        on_reject: Callable[[int, str], None] | None,
        on_progress: Callable[[int], None] | None,
    ) -> None:
        self.memory = memory
        self.report = report
        self.on_reject = on_reject
        self.on_progress = on_progress
        self.batch: list[tuple[int, EpisodeInput]] = []
        self.rejected: list[tuple[int, str]] = []

    def hold(self, line_number: int, reason: str) -> None:
        self.rejected.append((line_number, reason))

    def flush(self, handled: int) -> None:
        """Store the batch, report its rejections in line order, then the progress (``handled`` lines)."""
        if self.batch:
            _store_batch(self.memory, self.batch, self.report, self.hold)
        for line_number, reason in sorted(self.rejected):
            self.report.rejected.append((line_number, reason))
            if self.on_reject is not None:
                self.on_reject(line_number, reason)
        self.batch, self.rejected = [], []
        if self.on_progress is not None:
            self.on_progress(handled)


def count_episode_lines(stream: BinaryIO) -> int | None:
    """Count the non-blank lines of a seekable stream and rewind it; ``None`` for pipes and stdin.

    Used as the total of ``ingest``'s progress bar, which counts episodes (one per line).
    """
    try:
        if not stream.seekable():
            return None
        start = stream.tell()
        count = sum(1 for raw in stream if raw.strip())
        stream.seek(start)
    except (OSError, ValueError):
        return None
    return count


def _print_rejection(console: Console, line_number: int, reason: str) -> None:
    console.print(f"[red]line {line_number}:[/] {escape(reason)}")


@click.command()
@click.argument("file", type=click.File("rb"))
@click.option(
    "--batch-size",
    type=click.IntRange(min=1),
    default=64,
    show_default=True,
    help="Episodes embedded and stored per call, >= 1.",
)
@pass_state
@click.pass_context
def ingest(ctx: click.Context, state: CliState, file: BinaryIO, batch_size: int) -> None:
    """Remember the episodes of a JSONL FILE ('-' for stdin), one JSON object per line.

    Fields: event_type and content (required); tags, importance (1-10), created_at
    (ISO 8601 with timezone; default now), metadata (object), and id/tenant_id/session_id
    as written by 'memlane export' (lines without them go to --tenant/--session).

    Bad lines (invalid JSON, missing or unknown fields, invalid values, ids that already
    exist) are reported on stderr with their line numbers, in line order, and skipped;
    good lines are stored. On a terminal, a progress bar counts episodes (lines) stored
    or rejected. Exit code 0 if every line was stored, 1 if some were rejected.
    """
    memory = state.memory()
    console = state.err
    progress = Progress(
        TextColumn("ingesting"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("episodes"),
        TimeRemainingColumn(),
        console=console,
        disable=state.json_output or not console.is_terminal,
        transient=True,
    )
    with progress:
        task = progress.add_task("ingest", total=count_episode_lines(file))
        report = ingest_stream(
            memory,
            file,
            batch_size=batch_size,
            on_reject=lambda n, reason: _print_rejection(progress.console, n, reason),
            on_progress=lambda done: progress.update(task, completed=done),
        )
    if report.stored:
        memory.optimize()  # the indexes are built here, at write time, not by the first recall
    if state.json_output:
        echo_json(
            {
                "stored": report.stored,
                "rejected": len(report.rejected),
                "errors": [{"line": n, "error": reason} for n, reason in report.rejected],
            }
        )
    else:
        state.out.print(f"{report.stored} stored, {len(report.rejected)} rejected")
    if report.rejected:
        ctx.exit(1)


@click.command()
@click.option(
    "--out",
    type=click.Path(dir_okay=False, allow_dash=True),
    default="-",
    show_default=True,
    help="Output file ('-' = stdout). Written atomically: complete or not at all.",
)
@click.option("--event-type", default=None, help="Only episodes of exactly this event type.")
@click.option(
    "--tag", "tags", multiple=True, metavar="TAG", help="Only episodes carrying ALL these tags (repeatable)."
)
@pass_state
def export(state: CliState, out: str, event_type: str | None, tags: tuple[str, ...]) -> None:
    """Write every episode in scope as JSONL, oldest first (created_at, then insertion order).

    One Episode.to_dict() object per line, including id, tenant_id and session_id, so
    'memlane ingest' into a fresh database followed by 'memlane export' reproduces the
    file byte for byte. The output is JSONL even with --json; with --out FILE a summary
    goes to stderr (or, with --json, a JSON object to stdout).
    """
    memory = state.memory(must_exist=True)
    count = 0
    with click.open_file(out, "wb", atomic=out != "-") as fh:
        for episode in memory.iter_episodes(event_type=event_type, tags=list(tags)):
            fh.write(dump_episode(episode))
            count += 1
    if out == "-":
        return
    if state.json_output:
        echo_json({"exported": count, "out": out})
    else:
        state.err.print(f"exported {count} episode(s) to {escape(out)}")
