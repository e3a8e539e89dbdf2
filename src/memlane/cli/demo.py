"""``memlane demo``: remember a shipped example conversation and show a few explained recalls.

The episodes live in ``memlane/data/demo_episodes.jsonl``: a travel-booking agent's memory
of one user over about two months (preferences, a failed and a retried booking, loyalty
numbers, a complaint, small talk). Recalls are computed as of the fixed :data:`DEMO_NOW`,
so the numbers are the same on every run.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from memlane.cli.app import CliError, CliState, pass_state
from memlane.cli.jsonl import parse_episode_line
from memlane.cli.output import echo_json, escape, format_weights, hits_table, ranking_formula, ranking_terms
from memlane.clock import FrozenClock
from memlane.errors import MemlaneError
from memlane.models import RecallHit
from memlane.recall import RankingWeights, resolve_weights

if TYPE_CHECKING:
    from memlane import EpisodeInput

__all__ = ["DEFAULT_DEMO_DB", "DEMO_NOW", "demo", "load_demo_episodes"]

DEMO_NOW = datetime(2025, 3, 15, 12, 0, tzinfo=UTC)
"""The demo's fixed "now": two days after the last demo episode."""

DEFAULT_DEMO_DB = "memlane-demo.db"
"""Demo database, created in the working directory unless ``--db`` says otherwise."""

_MARKER_ID = "demo-01"
"""Id of the first demo episode; its presence marks a file the demo may delete and recreate."""


@dataclass(frozen=True, slots=True)
class DemoRecall:
    """One recall the demo runs (``query=None`` is a structured lookup)."""

    title: str
    query: str | None
    preset: str | None = None
    event_type: str | None = None
    tags: tuple[str, ...] = ()
    limit: int = 4
    note: str = ""


RECALLS = (
    DemoRecall(
        "A preference, default balanced weights",
        "what seat does the user prefer?",
        note="Relevance finds the window-seat preference; recency and importance break near-ties only.",
    ),
    DemoRecall(
        "A specific question: relevance weighs most",
        "did any payment fail?",
        preset="specific_question",
        note="With relevance at 0.6 the declined card (BK-4471) beats newer, more important payment news.",
    ),
    DemoRecall(
        "Filtered by tags (AND): only episodes tagged travel and lisbon compete",
        "which bookings failed?",
        preset="specific_question",
        tags=("travel", "lisbon"),
        note="Filters apply before ranking: an episode outside them is never returned.",
    ),
    DemoRecall(
        "Structured lookup without a query: confirmed bookings",
        None,
        event_type="booking",
        note="No query: filters only, newest first; the embedding model is not called and there is no score.",
    ),
)


def load_demo_episodes() -> list[EpisodeInput]:
    """Read the shipped demo episodes (package data ``memlane/data/demo_episodes.jsonl``)."""
    data = resources.files("memlane").joinpath("data/demo_episodes.jsonl").read_bytes()
    return [parse_episode_line(line) for line in data.splitlines() if line.strip()]


def _remove_old_demo(path: Path, *, json_output: bool = False) -> None:
    """Delete ``path`` (and its WAL files) if it is a demo database; refuse any other file.

    Raises:
        CliError: ``path`` exists but is not a demo database (not SQLite, not memlane, or
            without the demo's marker episode).
    """
    if not path.exists():
        return
    from memlane import SQLiteStore

    try:
        store = SQLiteStore(path)
        try:
            is_demo = store.get(_MARKER_ID) is not None
        finally:
            store.close()
    except MemlaneError:
        is_demo = False
    if not is_demo:
        raise CliError(
            f"{path} exists and is not a memlane demo database; refusing to overwrite it "
            "(pass another --db to 'memlane demo')",
            json_output=json_output,
        )
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def _demo_path(ctx: click.Context, state: CliState, demo_db: str | None) -> Path:
    if demo_db is not None:
        return Path(demo_db)
    root = ctx.find_root()
    if root.get_parameter_source("db") is click.core.ParameterSource.COMMANDLINE:
        return Path(state.db)
    return Path(DEFAULT_DEMO_DB)


def _replay_command(state: CliState, path: Path, item: DemoRecall) -> str:
    words = ["memlane", "--db", str(path)]
    if state.tenant != "default":
        words += ["--tenant", state.tenant]
    if state.session != "default":
        words += ["--session", state.session]
    words.append("recall")
    if item.query is not None:
        words.append(item.query)
    if item.event_type is not None:
        words += ["--event-type", item.event_type]
    for tag in item.tags:
        words += ["--tag", tag]
    if item.preset is not None:
        words += ["--preset", item.preset]
    words += ["--limit", str(item.limit), "--now", DEMO_NOW.isoformat().replace("+00:00", "Z")]
    return shlex.join(words)


@click.command()
@click.option(
    "--db",
    "demo_db",
    type=click.Path(dir_okay=False),
    default=None,
    help=f"Demo database (default ./{DEFAULT_DEMO_DB}, or the global --db if given). "
    "An existing demo database there is deleted first; any other file is left alone.",
)
@pass_state
@click.pass_context
def demo(ctx: click.Context, state: CliState, demo_db: str | None) -> None:
    """Remember a shipped example conversation, then show explained recalls.

    A travel-booking agent's memory of one user: two dozen episodes over two months. The demo
    stores them with the bundled offline model (a few seconds), then runs four recalls
    as of 2025-03-15 12:00 UTC and prints each hit's relevance, recency, importance and
    score (all in [0, 1]). The database is kept so you can try your own recalls on it.
    """
    from rich.rule import Rule
    from rich.text import Text

    path = _demo_path(ctx, state, demo_db)
    _remove_old_demo(path, json_output=state.json_output)
    items = load_demo_episodes()
    with state.open_memory(str(path), clock=FrozenClock(DEMO_NOW)) as memory:
        started = time.perf_counter()
        memory.remember_episodes(items)
        elapsed = time.perf_counter() - started
        results: list[tuple[DemoRecall, list[RecallHit]]] = [
            (
                item,
                memory.recall_episodes(
                    item.query, item.event_type, list(item.tags), item.limit, weights=item.preset
                ),
            )
            for item in RECALLS
        ]
        default_weights = memory.config.ranking_weights
        terms = ranking_terms(memory.config)
        formula = ranking_formula(memory.config)
        model_id = memory.embedder.model_id

    if state.json_output:
        document: dict[str, Any] = {
            "db": str(path.resolve()),
            "now": DEMO_NOW.isoformat(),
            "episodes": len(items),
            "embedding_model": model_id,
            "formula": formula,
            "recalls": [
                {
                    "title": item.title,
                    "query": item.query,
                    "event_type": item.event_type,
                    "tags": list(item.tags),
                    "weights": None
                    if item.query is None
                    else _weights_dict(resolve_weights(item.preset, default_weights)),
                    "hits": [hit.to_dict() for hit in hits],
                }
                for item, hits in results
            ],
        }
        echo_json(document)
        return

    out = state.out
    dates = [item.created_at for item in items if item.created_at is not None]
    out.print(
        f"[bold]memlane demo[/] — a travel-booking agent's memory of one user: {len(items)} episodes "
        f"from {min(dates):%d %b} to {max(dates):%d %b %Y}, recalled as of {DEMO_NOW:%Y-%m-%d %H:%M} UTC."
    )
    out.print(f"Stored them in [cyan]{escape(str(path))}[/] with {escape(model_id)} in {elapsed:.1f} s.")
    for number, (item, hits) in enumerate(results, start=1):
        out.print()
        out.print(Rule(f"{number}. {escape(item.title)}", align="left"))
        if item.query is None:
            title = f"--event-type {escape(item.event_type or '')} · newest first"
        else:
            weights = resolve_weights(item.preset, default_weights)
            title = f'"{escape(item.query)}" · weights {format_weights(weights, item.preset or "balanced")}'
        out.print(hits_table(hits, title=title, width=out.width, show_ids=False))
        out.print(f"[italic]{escape(item.note)}[/]")
        out.print(f"[dim]$ {escape(_replay_command(state, path, item))}[/]", soft_wrap=True)
    out.print()
    out.print("[bold]How hits are ranked[/] (every signal in [0, 1]):")
    for name, definition in terms:
        out.print(Text(f"  {name:<10} = {definition}"))
    activate = _activation_hint()
    if activate:
        out.print(escape(activate), soft_wrap=True)
    out.print(
        f"Try your own: memlane --db {escape(shlex.quote(str(path)))} recall "
        '"what food does the user eat?" --now 2025-03-15T12:00:00Z',
        soft_wrap=True,
    )


def _activation_hint() -> str | None:
    """How to get ``memlane`` on the PATH when it is not (the quick start's .venv), else ``None``."""
    if shutil.which("memlane") is not None:
        return None
    bindir = Path(sys.executable).parent
    activate = bindir / "activate"
    if activate.is_file():
        relative = os.path.relpath(activate) if activate.is_relative_to(Path.cwd()) else str(activate)
        return f"memlane is not on your PATH yet: run `source {shlex.quote(relative)}` first"
    return (
        f"memlane is not on your PATH: call {shlex.quote(str(bindir / 'memlane'))}, or add {bindir} to PATH"
    )


def _weights_dict(weights: RankingWeights) -> dict[str, float]:
    return {
        "relevance": weights.relevance,
        "recency": weights.recency,
        "importance": weights.importance,
    }
