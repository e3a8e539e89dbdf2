"""``memlane eval``: retrieval-quality benchmarks (``memlane eval locomo``, ``memlane eval beam``)."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from memlane.cli.app import CliError, CliState, pass_state
from memlane.cli.output import echo_json, stage_progress
from memlane.evaluation.configurations import DEFAULT_CONFIGURATIONS, EvalConfiguration
from memlane.recall import PRESETS

__all__ = ["eval_group"]

FC = TypeVar("FC", bound=Callable[..., Any])


def write_report(state: CliState, stem: Path, document: dict[str, Any], markdown: str) -> None:
    """Write ``<stem>.json`` and ``<stem>.md`` (creating the folder), then print the JSON or the Markdown."""
    stem.parent.mkdir(parents=True, exist_ok=True)
    stem.with_suffix(".json").write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    stem.with_suffix(".md").write_text(markdown, encoding="utf-8")
    if state.json_output:
        echo_json(document)
    else:
        click.echo(markdown)
        state.err.print(f"wrote {stem.with_suffix('.json')} and {stem.with_suffix('.md')}")


_WORKDIR = click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where the eval database goes (default: a temp dir).",
)


def _out_dir(stem: str, partial: str) -> Callable[[FC], FC]:
    """The ``--out-dir`` option of a benchmark writing ``<stem>.json`` and ``<stem>.md``."""
    return click.option(
        "--out-dir",
        "--out",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help=f"Where {stem}.json and {stem}.md are written. Default: benchmarks/results for a full run, "
        f"{partial}.",
    )


@click.group(name="eval")
def eval_group() -> None:
    """Measure retrieval quality on public benchmarks."""


def _positions(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        out: list[int] = []
        for part in text.split(","):
            lo, _, hi = part.partition("-")
            out.extend(range(int(lo), int(hi or lo) + 1))
        return out
    except ValueError:
        raise click.BadParameter(f"expected positions like '0-4' or '5,7', got {text!r}") from None


@eval_group.command(name="locomo")
@click.argument("path", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--preset",
    "presets",
    multiple=True,
    type=click.Choice(sorted(PRESETS)),
    help="Also compare these weight presets with the library's retrieval defaults (repeatable).",
)
@click.option(
    "--configuration",
    "names",
    multiple=True,
    type=click.Choice(list(DEFAULT_CONFIGURATIONS)),
    help="Compare only these configurations (repeatable). Default: all of them, unless --preset is given.",
)
@click.option("--conversations", help="Conversation positions 0-9 to run, e.g. '0-4' or '5,7'. Default: all.")
@click.option(
    "--unit",
    type=click.Choice(["turn", "session"]),
    default="turn",
    show_default=True,
    help="turn: turn-level retrieval (locomo.json/.md). session: session-level Hit@k of search_sessions "
    "(locomo_sessions.json/.md; only --preset applies).",
)
@_out_dir(
    "locomo",
    "locomo-partial/ for a partial one (--conversations, --configuration, --preset), so a partial run "
    "never overwrites the committed results",
)
@_WORKDIR
@pass_state
def locomo(
    state: CliState,
    path: Path | None,
    presets: tuple[str, ...],
    names: tuple[str, ...],
    conversations: str | None,
    unit: str,
    out_dir: Path | None,
    workdir: Path | None,
) -> None:
    """Remember every LoCoMo turn, ask every category 1-4 question, compare recall configurations.

    Reports recall@5/@10, NDCG@10 and Hit@10 overall, per category and per split (tune 0-4,
    held-out 5-9), with recall latency p50/p95 per configuration (query embedding included).

    PATH defaults to ../shared/datasets/locomo/locomo10.json when present (LoCoMo, CC BY-NC 4.0:
    read in place, never copied). Takes a few minutes on 2 cores with the bundled model.
    """
    from memlane.evaluation.locomo import default_locomo_path
    from memlane.evaluation.locomo_run import report_to_markdown, run_locomo  # the runner loads the engine

    source = path or default_locomo_path()
    if source is None or not source.is_file():
        raise CliError(
            "LoCoMo data not found: pass PATH to locomo10.json "
            "(default ../shared/datasets/locomo/locomo10.json)"
        )
    partial = bool(conversations or names or presets)
    if out_dir is None:
        out_dir = Path("locomo-partial") if partial else Path("benchmarks/results")
    if unit == "session":
        from memlane.cli.sessions import run_session_eval

        positions = _positions(conversations)
        run_session_eval(
            state, source, presets=presets, conversations=positions, out_dir=out_dir, workdir=workdir
        )
        return
    configurations: dict[str, EvalConfiguration | str] = {n: DEFAULT_CONFIGURATIONS[n] for n in names}
    configurations.update({p: p for p in presets})
    if not configurations:
        configurations = dict(DEFAULT_CONFIGURATIONS)
    show = not state.json_output
    with (
        tempfile.TemporaryDirectory(prefix="memlane-locomo-") as tmp,
        stage_progress(state.err, disable=not show) as progress,
    ):
        report = run_locomo(
            source,
            embedder=state.make_embedder(),
            workdir=workdir or tmp,
            configurations=configurations,
            conversations=_positions(conversations),
            progress=progress,
        )
    write_report(state, out_dir / "locomo", report.to_dict(), report_to_markdown(report))


@eval_group.command(name="beam")
@click.argument("path", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--conversations", help="Conversation numbers to run, e.g. '1-5' or '2,7'. Default: all.")
@_out_dir(
    "beam",
    "beam-partial/ for a partial one (--conversations)",
)
@_WORKDIR
@pass_state
def beam(
    state: CliState, path: Path | None, conversations: str | None, out_dir: Path | None, workdir: Path | None
) -> None:
    """Remember every BEAM message, ask every question with evidence, compare defaults with dense and keyword.

    Reports R@5/R@10 overall and per question type for the library defaults (the headline row),
    retrieval="dense" and retrieval="keyword", with per-conversation paired bootstrap 95% CIs of
    defaults minus each baseline.

    PATH defaults to ../shared/datasets/beam/100K (BEAM, no licence: read in place, never copied).
    """
    from memlane.evaluation import beam_report_to_markdown, default_beam_path, run_beam

    source = path or default_beam_path()
    if source is None or not source.is_dir():
        raise CliError(
            "BEAM data not found: pass PATH to the 100K directory (default ../shared/datasets/beam/100K)"
        )
    if out_dir is None:
        out_dir = Path("beam-partial") if conversations else Path("benchmarks/results")
    with (
        tempfile.TemporaryDirectory(prefix="memlane-beam-") as tmp,
        stage_progress(state.err, disable=state.json_output) as progress,
    ):
        report = run_beam(
            source,
            embedder=state.make_embedder(),
            workdir=workdir or tmp,
            conversations=_positions(conversations),
            progress=progress,
        )
    write_report(state, out_dir / "beam", report.to_dict(), beam_report_to_markdown(report))
