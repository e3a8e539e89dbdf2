"""Moving episodes in and out as JSONL: ``ingest`` and ``export`` (format: :mod:`memlane.cli.jsonl`)."""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, BinaryIO

import click

from memlane.cli.app import CliError, CliState, pass_state
from memlane.cli.jsonl import LineError, dump_episode, parse_episode_line
from memlane.cli.output import echo_json, escape
from memlane.errors import DuplicateEpisodeError, ValidationError
from memlane.models import Scope

if TYPE_CHECKING:
    from rich.console import Console

    from memlane import EpisodeInput, EpisodicMemory

__all__ = [
    "EXIT_INTERRUPTED",
    "IngestReport",
    "count_episode_lines",
    "export",
    "ingest",
    "ingest_stream",
    "line_episode_id",
]

EXIT_INTERRUPTED = 130
"""``memlane ingest``'s exit code when interrupted (Ctrl-C; 128 + SIGINT, as shells report it)."""

logger = logging.getLogger(__name__)

_ITEM_ERRORS = (ValidationError, DuplicateEpisodeError)
"""Errors that condemn a single line; any other error (embedder, disk) aborts the ingest."""


@dataclass
class IngestReport:
    """Outcome of an ingest.

    Attributes:
        stored: Episodes stored.
        rejected: ``(line_number, reason)`` for each refused line (1-based line numbers).
        skipped: Lines an earlier run of the same file already stored (see :func:`ingest_stream`).
    """

    stored: int = 0
    rejected: list[tuple[int, str]] = field(default_factory=list)
    skipped: int = 0


def line_episode_id(file_key: str, tenant_id: str, session_id: str, line_number: int, raw: bytes) -> str:
    """The id of an episode read from a line without one: the same line of the same file, same id.

    32 hex characters: 8 of sha256(``file_key``, tenant, session), the line number as 12, and 12
    of sha256(line). Ids of one file ascend with the line number (the unique index grows at one
    place, as with :func:`memlane.episode_input.new_episode_id`'s time-ordered ids).
    """
    prefix = hashlib.sha256(f"{file_key}\0{tenant_id}\0{session_id}".encode()).hexdigest()[:8]
    return f"{prefix}{line_number:012x}{hashlib.sha256(raw.strip()).hexdigest()[:12]}"


def _store_batch(
    memory: EpisodicMemory,
    batch: list[tuple[int, EpisodeInput]],
    report: IngestReport,
    on_reject: Callable[[int, str], None],
) -> None:
    """Store a batch in one call; if an item is bad, retry the items one by one to keep the good ones."""
    if not batch:
        return
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
    report: IngestReport | None = None,
) -> IngestReport:
    """Remember every good line of a JSONL stream, in batches of ``batch_size`` (one embedder call each).

    Rejections are reported in line order: a batch's lines are parsed, the batch is stored,
    and only then are its malformed and refused lines reported, sorted by line number.

    Idempotent: a line without an ``id`` gets :func:`line_episode_id` (from the file's first
    line, the tenant, the session, the line number and the line), and a line whose episode
    already exists is skipped (``report.skipped``), so a rerun after an interruption stores
    only what the first run had not (each batch is stored atomically: all of it or none).

    Args:
        memory: Where to store the episodes.
        stream: Binary JSONL (see :mod:`memlane.cli.jsonl`); blank lines are skipped.
        batch_size: Episodes per :meth:`EpisodicMemory.remember_episodes` call, >= 1.
        on_reject: Called with ``(line_number, reason)`` for each refused line, in line order.
        on_progress: Called after each batch with the number of episodes (non-blank lines)
            handled so far, stored or rejected.
        report: The report to fill in (default a new one): given, it holds the counts so far
            when the ingest is interrupted (``KeyboardInterrupt``).

    Returns:
        The :class:`IngestReport` (rejections in line order).

    Raises:
        EmbeddingError, StoreError: a failure not tied to one line; earlier batches stay stored.
    """
    report = IngestReport() if report is None else report
    lines = _PendingLines(memory, report, on_reject, on_progress)
    handled, file_key = 0, None
    for line_number, raw in enumerate(stream, start=1):
        if not raw.strip():
            continue
        handled += 1
        file_key = file_key or hashlib.sha256(raw.strip()).hexdigest()
        try:
            item = parse_episode_line(raw)
        except LineError as exc:
            lines.hold(line_number, str(exc))
        else:
            lines.add(line_number, item, raw, file_key)
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
        self.anywhere = memory.with_context(
            config=dataclasses.replace(memory.config, scope=Scope.GLOBAL.value)
        )

    def hold(self, line_number: int, reason: str) -> None:
        self.rejected.append((line_number, reason))

    def add(self, line_number: int, item: EpisodeInput, raw: bytes, file_key: str) -> None:
        """Queue ``item``; one without an id gets its line's id, and is skipped if already stored."""
        if item.id is None:
            tenant = item.tenant_id or self.memory.tenant_id
            session = item.session_id or self.memory.session_id
            episode_id = line_episode_id(file_key, tenant, session, line_number, raw)
            if self.anywhere.get_episode(episode_id) is not None:
                self.report.skipped += 1
                return
            item = dataclasses.replace(item, id=episode_id)
        self.batch.append((line_number, item))

    def flush(self, handled: int) -> None:
        """Store the batch, report its rejections in line order, then the progress (``handled`` lines)."""
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
    or rejected. A rerun of the same file skips the lines already stored (a line without
    an id gets one from its place in the file), so an interrupted ingest is resumed by
    running it again. Exit code 0 if every line was stored (or skipped), 1 if some were
    rejected, 130 if interrupted (Ctrl-C; the counts so far are printed).
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

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
    report = IngestReport()
    try:
        with progress:
            task = progress.add_task("ingest", total=count_episode_lines(file))
            ingest_stream(
                memory,
                file,
                batch_size=batch_size,
                on_reject=lambda n, reason: _print_rejection(progress.console, n, reason),
                on_progress=lambda done: progress.update(task, completed=done),
                report=report,
            )
    except KeyboardInterrupt:
        _print_report(state, report, interrupted=True)
        ctx.exit(EXIT_INTERRUPTED)
    if report.stored:
        memory.optimize()  # the indexes are built here, at write time, not by the first recall
    _print_report(state, report, interrupted=False)
    if report.rejected:
        ctx.exit(1)


def _print_report(state: CliState, report: IngestReport, *, interrupted: bool) -> None:
    if state.json_output:
        echo_json(
            {
                "stored": report.stored,
                "rejected": len(report.rejected),
                "skipped": report.skipped,
                "interrupted": interrupted,
                "errors": [{"line": n, "error": reason} for n, reason in report.rejected],
            }
        )
        return
    counts = f"{report.stored} stored, {len(report.rejected)} rejected"
    if report.skipped:
        counts += f", {report.skipped} already stored by an earlier run (skipped)"
    if interrupted:
        state.err.print(
            f"interrupted: {counts}; rerun the same command to store the rest "
            "(lines already stored are skipped)"
        )
    else:
        state.out.print(counts)


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
    if out != "-" and os.path.islink(out):  # the atomic write would replace the link's target (#22 item 15)
        raise CliError(
            f"--out {out} is a symbolic link; refusing to write through it (give the target's path)",
            kind="UsageError",
            json_output=state.json_output,
        )
    folder = os.path.dirname(os.path.abspath(out))
    if out != "-" and not os.path.isdir(folder):  # else the error names click's temporary file
        raise CliError(
            f"--out {out}: the directory {folder} does not exist",
            kind="UsageError",
            json_output=state.json_output,
        )
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
