"""``memlane reembed``: migrate a store to another embedding model, or fill in missing vectors.

The work is done by :func:`memlane.lifecycle.reembed.reembed` (staging, resumable cursor, one atomic
switch); this module only builds the embedder, shows a progress bar and prints the report.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

import click

from memlane.assembly import build_store
from memlane.cli.app import CliError, CliState, pass_state
from memlane.cli.output import echo_json
from memlane.config import DEFAULT_REEMBED_BATCH_SIZE
from memlane.config.file import is_postgres_url

if TYPE_CHECKING:  # the job (stores, numpy) is imported when the command runs
    from memlane.embeddings import Embedder
    from memlane.lifecycle.reembed import ReembedReport

__all__ = ["reembed_command"]


def _summary(report: ReembedReport) -> str:
    """One line for humans; "texts" are episodes plus the turn windows of session episodes."""
    target = f"{report.model_id} ({report.dims} dims)"
    if report.dry_run:
        if report.mode == "fill":
            return f"would embed {report.total} text(s) missing a vector of {target}"
        staged = f", {report.resumed_from} already staged" if report.resumed_from else ""
        return f"would re-embed {report.total} text(s) with {target}{staged}, then switch"
    if report.mode == "fill":
        return f"embedded {report.embedded} text(s) that had no vector of {target}"
    previous = "" if report.previous_model is None else f" from {report.previous_model[0]}"
    resumed = f" (resumed after {report.resumed_from})" if report.resumed_from else ""
    return (
        f"re-embedded {report.embedded} text(s){resumed} and switched{previous} to {target}; "
        "restart processes that use the old model"
    )


@click.command(name="reembed")
@click.option(
    "--model",
    default=None,
    metavar="NAME",
    help="The new embedding model, named as in the config's episodic_memory.embedding_model "
    "(e.g. all-MiniLM-L6-v2, text-embedding-3-small). Default: the configured model, which only "
    "fills in episodes without a vector of it.",
)
@click.option(
    "--provider",
    type=click.Choice(["local", "openai", "hashing"]),
    default=None,
    help="Embedding provider for --model (default: inferred from the name).",
)
@click.option(
    "--dims", type=click.IntRange(min=1), default=None, help="Vector dimension for --model, if needed."
)
@click.option("--base-url", default=None, help="OpenAI-compatible endpoint for --model (openai provider).")
@click.option(
    "--batch-size",
    type=click.IntRange(min=1),
    default=DEFAULT_REEMBED_BATCH_SIZE,
    show_default=True,
    help="Episodes embedded and committed per batch.",
)
@click.option("--dry-run", is_flag=True, help="Only count what would be embedded; change nothing.")
@click.option(
    "--abort",
    is_flag=True,
    help="Discard an interrupted migration (its staged vectors); recall is unaffected.",
)
@pass_state
def reembed_command(
    state: CliState,
    model: str | None,
    provider: str | None,
    dims: int | None,
    base_url: str | None,
    batch_size: int,
    dry_run: bool,
    abort: bool,
) -> None:
    """Re-embed every episode with another model, resumably, then switch over atomically.

    New vectors are staged batch by batch while recall keeps using the old ones; rerun
    the same command after a crash or Ctrl-C to continue where it stopped. The switch
    happens in one transaction at the end; afterwards, restart every process with the new
    model (episodic_memory.embedding_model), since the store refuses the old one.
    Without --model, episodes missing a vector of the current model (stored while the
    embedder was down) are embedded in place. Applies to every tenant, whatever --scope says.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from memlane.lifecycle.reembed import embedder_for_model, reembed, reembed_backend

    settings = state.settings.store
    if settings.type == "sqlite":
        path = settings.sqlite_path()
        if not is_postgres_url(path) and path != ":memory:" and not Path(path).expanduser().exists():
            raise CliError(f"no database at {path}", json_output=state.json_output)
    embedder: Embedder
    if model is None:
        if provider or dims or base_url:
            raise CliError("--provider, --dims and --base-url need --model", json_output=state.json_output)
        embedder = state.make_embedder()
    else:
        embedder = embedder_for_model(model, provider=provider, dims=dims, base_url=base_url)
    store = build_store(settings)
    try:
        if abort:
            reembed_backend(store).abort()
            if state.json_output:
                echo_json({"aborted": True})
            else:
                state.out.print("discarded the interrupted migration (if any); nothing else changed")
            return
        columns = (
            TextColumn("re-embedding"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
        )
        with Progress(*columns, console=state.err, disable=dry_run or state.json_output) as bar:
            task = bar.add_task("re-embedding", total=None)

            def progress(done: int, total: int) -> None:
                bar.update(task, completed=done, total=total)

            report = reembed(store, embedder, batch_size=batch_size, progress=progress, dry_run=dry_run)
    finally:
        store.close()
    if state.json_output:
        echo_json(dataclasses.asdict(report))
    else:
        state.out.print(_summary(report))
