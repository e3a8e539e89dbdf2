"""Session episodes on the command line: ``memlane sessions import|recent|search|show``, ``memlane context``.

Every command works under the global ``--tenant``; ``--agent`` and ``--user`` (default
``default``) choose whose sessions. Formats of ``import``: :mod:`memlane.sessions.importing`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import click

from memlane.cli.app import CliError, CliState, cli_wording, pass_state
from memlane.cli.output import compact_table, echo_json, escape, format_weights, minute, stage_progress
from memlane.cli.params import ISO_DATETIME, WEIGHTS, field_option
from memlane.errors import DuplicateEpisodeError, ValidationError
from memlane.recall import PRESETS, RankingWeights, resolve_weights
from memlane.sessions.context import DEFAULT_TOKEN_BUDGET, format_time
from memlane.sessions.messages import render_message
from memlane.sessions.models import SessionEpisode, SessionSnippet
from memlane.sessions.tokens import ENCODINGS

if TYPE_CHECKING:
    from rich.text import Text

    from memlane import EpisodicMemory
    from memlane.sessions.importing import ImportFormat

__all__ = ["context", "run_session_eval", "sessions_group"]

_AGENT = click.option(
    "--agent", "agent_id", default="default", show_default=True, help="Agent id (1-200 chars)."
)
_USER = click.option("--user", "user_id", default="default", show_default=True, help="User id (1-200 chars).")
_NOW = click.option(
    "--now", type=ISO_DATETIME, default=None, help="Reference time for recency (ISO 8601 with timezone)."
)
_PRESET = click.option(
    "--preset",
    type=click.Choice(sorted(PRESETS)),
    default=None,
    help="Named ranking weights (default balanced).",
)
_WEIGHTS = click.option(
    "--weights", type=WEIGHTS, default=None, help="Custom weights relevance,recency,importance, e.g. 2,1,1."
)


def _weights(preset: str | None, weights: RankingWeights | None) -> RankingWeights | str | None:
    if preset is not None and weights is not None:
        raise click.UsageError("use either --preset or --weights, not both")
    return weights if weights is not None else preset


@click.group(name="sessions")
def sessions_group() -> None:
    """Whole past conversations (session episodes): import, list, search, show."""


@sessions_group.command(name="import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["auto", "json", "jsonl", "locomo"]),
    default="auto",
    show_default=True,
    help="Input format; auto detects LoCoMo, a JSON array/object of records, or JSON Lines.",
)
@_AGENT
@_USER
@click.option(
    "--append", is_flag=True, help="Append to sessions that already exist instead of rejecting them."
)
@pass_state
@click.pass_context
def import_sessions(
    ctx: click.Context, state: CliState, file: Path, fmt: str, agent_id: str, user_id: str, append: bool
) -> None:
    """Store the conversations of FILE as session episodes.

    OpenAI-format records, one per JSON array item or JSONL line:
    {"session_id", "messages": [...], "agent_id"?, "user_id"?, "started_at"?, "ended_at"?,
    "metadata"?}; records without agent_id/user_id go to --agent/--user. LoCoMo's
    locomo10.json: each session becomes one session episode "<sample_id>/session_<n>",
    dated from session_<n>_date_time, with speaker_a as user and speaker_b as assistant,
    user_id = the sample id.

    Bad records (malformed, invalid messages, ids that already exist without --append) are
    reported on stderr with their position and skipped; good ones are stored. Exit code 0
    if every record was stored, 1 if some were rejected.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from memlane.sessions.importing import read_records  # with its LoCoMo reader: only when importing

    memory = state.memory()
    sessions = memory.sessions
    used, items = read_records(file, None if fmt == "auto" else cast("ImportFormat", fmt))
    stored = 0
    rejected: list[tuple[str, str]] = []
    owners: Counter[tuple[str, str]] = Counter()
    progress = Progress(
        TextColumn(f"importing ({used})"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=state.err,
        disable=state.json_output,
        transient=True,
    )

    def reject(position: str, reason: str) -> None:
        rejected.append((position, reason))
        if not state.json_output:
            progress.console.print(f"[red]{escape(position)}:[/] {escape(reason)}")

    with progress:
        task = progress.add_task("import", total=len(items))
        for item in items:
            if item.record is None:
                reject(item.position, item.error or "bad record")
            else:
                record = item.record
                owner = (record.agent_id or agent_id, record.user_id or user_id)
                try:
                    sessions.store_session(
                        record.session_id,
                        record.messages,
                        agent_id=owner[0],
                        user_id=owner[1],
                        started_at=record.started_at,
                        ended_at=record.ended_at,
                        metadata=record.metadata,
                        append=append,
                    )
                    stored += 1
                    owners[owner] += 1
                except (ValidationError, DuplicateEpisodeError) as exc:
                    reject(item.position, cli_wording(str(exc), ctx, leading=False))
            progress.advance(task)
    if state.json_output:
        echo_json(
            {
                "format": used,
                "stored": stored,
                "rejected": len(rejected),
                "owners": [
                    {"agent_id": a, "user_id": u, "sessions": n} for (a, u), n in owners.most_common()
                ],
                "errors": [{"position": p, "error": e} for p, e in rejected],
            }
        )
    else:
        state.out.print(f"{stored} session(s) stored, {len(rejected)} rejected ({used})")
        if owners:
            state.out.print(_owners_text([(a, u, n) for (a, u), n in owners.most_common()], "stored for"))
            (a, u), _ = owners.most_common(1)[0]
            state.out.print(f"read them with: memlane sessions recent --agent {a} --user {u}")
    if rejected:
        ctx.exit(1)


_OWNERS_LISTED = 5


def _owners_text(owners: Sequence[tuple[str, str, int]], lead: str) -> str:
    """``lead --agent A --user U (N), ...`` for the first owners (and how many more)."""
    shown = ", ".join(f"--agent {a} --user {u} ({n})" for a, u, n in owners[:_OWNERS_LISTED])
    more = f", and {len(owners) - _OWNERS_LISTED} more" if len(owners) > _OWNERS_LISTED else ""
    return escape(f"{lead} {shown}{more}")


def _hint_owners(state: CliState, memory: EpisodicMemory, agent_id: str, user_id: str) -> None:
    """On stderr: whose conversations this tenant has, when ``agent_id``/``user_id`` has none."""
    owners = memory.sessions.owners()
    if any((a, u) == (agent_id, user_id) for a, u, _ in owners):
        return
    if not owners:
        state.err.print(f"[dim]tenant {escape(memory.tenant_id)} has no stored conversations[/]")
        return
    state.err.print(
        f"[yellow]no stored conversations of --agent {escape(agent_id)} --user {escape(user_id)}; tenant "
        f"{escape(memory.tenant_id)} has {sum(n for _, _, n in owners)}:[/] " + _owners_text(owners, "pass")
    )


def _session_summary(session: SessionEpisode) -> dict[str, Any]:
    return {
        "session_id": session.session_id,
        "agent_id": session.agent_id,
        "user_id": session.user_id,
        "started_at": session.started_at.isoformat(),
        "ended_at": session.ended_at.isoformat(),
        "messages": len(session.messages),
        "metadata": dict(session.metadata),
    }


def _first_user_text(session: SessionEpisode) -> str:
    for message in session.messages:
        if message.role == "user" and message.content:
            return render_message(message, max_chars=100)
    return ""


@sessions_group.command(name="recent")
@_AGENT
@_USER
@click.option("--limit", type=click.IntRange(min=1), default=5, show_default=True, help="Maximum sessions.")
@pass_state
def recent(state: CliState, agent_id: str, user_id: str, limit: int) -> None:
    """List the newest sessions of --agent and --user (newest ended_at first)."""
    from rich.text import Text

    memory = state.memory(must_exist=True)
    found = memory.sessions.recall_recent(agent_id, user_id, limit)
    if not found:
        _hint_owners(state, memory, agent_id, user_id)
    if state.json_output:
        echo_json([_session_summary(s) for s in found])
        return
    title = f"recent sessions of agent {escape(agent_id)} / user {escape(user_id)} — {len(found)}"
    if not found:
        state.out.print(f"{title}\n[dim]no sessions[/]")
        return
    table = compact_table(title)
    table.add_column("session · opening message", overflow="fold")
    table.add_column("started → ended (UTC)", no_wrap=True)
    table.add_column("msgs", justify="right", no_wrap=True)
    for s in found:
        cell = Text(s.session_id, style="cyan")
        opening = _first_user_text(s)
        if opening:
            cell.append("\n" + opening, style="")
        table.add_row(cell, f"{minute(s.started_at)}\n→ {minute(s.ended_at)}", str(len(s.messages)))
    state.out.print(table)


def _snippet_text(snippet: SessionSnippet) -> Text:
    from rich.text import Text

    text = Text()
    for i, message in enumerate(snippet.messages):
        if i:
            text.append("\n")
        matched = snippet.match_start <= i < snippet.match_end
        text.append(render_message(message, max_chars=300), style="bold" if matched else "dim")
    return text


@sessions_group.command(name="search")
@click.argument("query")
@_AGENT
@_USER
@click.option("--top-k", type=click.IntRange(min=1), default=3, show_default=True, help="Maximum snippets.")
@click.option(
    "--context-turns",
    type=click.IntRange(min=0),
    default=1,
    show_default=True,
    help="Turns of context shown on each side of a match.",
)
@field_option("SearchSessionsRequest", "min_relevance")
@_PRESET
@_WEIGHTS
@_NOW
@pass_state
def search(  # noqa: PLR0913  (a click command: one parameter per option)
    state: CliState,
    query: str,
    agent_id: str,
    user_id: str,
    top_k: int,
    context_turns: int,
    min_relevance: float | None,
    preset: str | None,
    weights: RankingWeights | None,
    now: datetime | None,
) -> None:
    """Find the passages of past sessions that best match QUERY, with their score breakdown.

    Each snippet is a matched turn (bold) with its context; signals in [0, 1]:
    relevance = w dense + (1 - w) keyword (calibrated cosine, saturated BM25; w = 0.4, more
    when most windows match a query term), recency =
    0.995^age_days and importance = 0.5 (turns are unrated) only break near-ties.
    """
    from rich.text import Text

    chosen = _weights(preset, weights)
    memory = state.memory(must_exist=True)
    found = memory.sessions.search_sessions(
        agent_id,
        user_id,
        query,
        top_k,
        now=now,
        weights=chosen,
        context_turns=context_turns,
        min_relevance=min_relevance,
    )
    if state.json_output:
        echo_json([s.to_dict() for s in found])
        return
    resolved = resolve_weights(chosen, memory.config.ranking_weights)
    title = f'search "{escape(query)}" — {len(found)} snippet(s) · weights {format_weights(resolved, preset)}'
    if not found:
        floor = memory.config.context_min_relevance if min_relevance is None else min_relevance
        state.out.print(
            f"{title}\n[dim]nothing relevant in the sessions of agent {escape(agent_id)} / user "
            f"{escape(user_id)} (relevance floor {floor:g})[/]"
        )
        return
    table = compact_table(title)
    table.add_column("#", justify="right", no_wrap=True)
    for name in ("score", "relevance", "recency"):
        table.add_column(name, justify="right", no_wrap=True, style="bold" if name == "score" else None)
    table.add_column("session · time (UTC) · snippet", overflow="fold")
    for i, s in enumerate(found, start=1):
        b = s.breakdown
        cell = Text(s.session_id, style="cyan")
        cell.append(f" · {minute(s.created_at)}\n", style="")
        cell.append_text(_snippet_text(s))
        table.add_row(str(i), f"{b.score:.3f}", f"{b.relevance:.3f}", f"{b.recency:.3f}", cell)
    state.out.print(table)


@sessions_group.command(name="show")
@click.argument("session_id")
@pass_state
def show(state: CliState, session_id: str) -> None:
    """Print one session of this tenant with every message (JSON with --json)."""
    from rich.text import Text

    session = state.memory(must_exist=True).sessions.get_session(session_id)
    if session is None:
        raise CliError(
            f"no session {session_id!r} for tenant {state.tenant!r}", json_output=state.json_output
        )
    if state.json_output:
        echo_json(session.to_dict())
        return
    meta = json.dumps(dict(session.metadata), ensure_ascii=False) if session.metadata else "—"
    state.out.print(
        f"[bold]{escape(session.session_id)}[/] · agent {escape(session.agent_id)} · user "
        f"{escape(session.user_id)} · {format_time(session.started_at)} → {format_time(session.ended_at)} · "
        f"{len(session.messages)} message(s)\n[dim]metadata: {escape(meta)}[/]"
    )
    for position, message in enumerate(session.messages):
        state.out.print(Text(f"{position:>4}  {render_message(message)}"))


@click.command()
@click.argument("query")
@click.option(
    "--budget",
    type=click.IntRange(min=0),
    default=DEFAULT_TOKEN_BUDGET,
    show_default=True,
    help="Hard token limit of the block (counted with --encoding).",
)
@_AGENT
@_USER
@click.option("--no-events", is_flag=True, help="Leave event episodes out (session snippets only).")
@click.option("--no-sessions", is_flag=True, help="Leave session snippets out (event episodes only).")
@click.option("--no-facts", is_flag=True, help="Leave the knowledge graph's facts out.")
@field_option("ContextRequest", "min_relevance")
@click.option(
    "--encoding",
    type=click.Choice(ENCODINGS),
    default=ENCODINGS[0],
    show_default=True,
    help="Tokenizer (offline, tiktoken-identical) that counts the budget.",
)
@_PRESET
@_WEIGHTS
@_NOW
@pass_state
def context(  # noqa: PLR0913  (a click command: one parameter per option)
    state: CliState,
    query: str,
    budget: int,
    agent_id: str,
    user_id: str,
    no_events: bool,
    no_sessions: bool,
    no_facts: bool,
    min_relevance: float | None,
    encoding: str,
    preset: str | None,
    weights: RankingWeights | None,
    now: datetime | None,
) -> None:
    """Print the [Past Conversation Context] block for QUERY, within --budget tokens.

    Candidates: the best session snippets of --agent/--user, the best event episodes in
    scope and the current facts about the entities QUERY names, ranked by score and taken
    greedily while the whole block fits the budget. The token count goes to stderr (with
    --json: a JSON object with the text and the items).
    """
    memory = state.memory(must_exist=True)
    if not no_sessions:
        _hint_owners(state, memory, agent_id, user_id)
    block = memory.sessions.build_context_block(
        query,
        agent_id=agent_id,
        user_id=user_id,
        token_budget=budget,
        include_events=not no_events,
        include_sessions=not no_sessions,
        include_facts=not no_facts,
        min_relevance=min_relevance,
        now=now,
        weights=_weights(preset, weights),
        tokenizer=encoding,
    )
    if state.json_output:
        echo_json(block.to_dict())
        return
    if block.text:
        click.echo(block.text)
    state.err.print(
        f"[dim]{block.tokens}/{block.token_budget} tokens ({block.tokenizer}), {len(block.items)} item(s)"
        + (f", {block.over_budget} over budget" if block.over_budget else "")
        + (f", {block.below_min_relevance} below min relevance" if block.below_min_relevance else "")
        + "[/]"
    )


def run_session_eval(
    state: CliState,
    source: Path,
    *,
    presets: tuple[str, ...],
    conversations: list[int] | None,
    out_dir: Path,
    workdir: Path | None,
) -> None:
    """``memlane eval locomo --unit session`` (:mod:`memlane.evaluation.locomo_sessions`).

    Writes ``locomo_sessions.json`` and ``locomo_sessions.md`` to ``out_dir`` and prints the
    Markdown (or the JSON document with ``--json``).
    """
    import tempfile

    from memlane.evaluation.locomo_sessions import (
        DEFAULT_SESSION_CONFIGURATIONS,
        report_to_markdown,
        run_locomo_sessions,
    )

    configurations = {p: p for p in presets} if presets else dict(DEFAULT_SESSION_CONFIGURATIONS)
    with (
        tempfile.TemporaryDirectory(prefix="memlane-locomo-sessions-") as tmp,
        stage_progress(state.err, disable=state.json_output) as progress,
    ):
        report = run_locomo_sessions(
            source,
            embedder=state.make_embedder(),
            workdir=workdir or tmp,
            configurations=configurations,
            conversations=conversations,
            turn_results=out_dir / "locomo.json",
            progress=progress,
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    document = report.to_dict()
    (out_dir / "locomo_sessions.json").write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    markdown = report_to_markdown(report)
    (out_dir / "locomo_sessions.md").write_text(markdown, encoding="utf-8")
    if state.json_output:
        echo_json(document)
    else:
        click.echo(markdown)
        state.err.print(f"wrote {out_dir / 'locomo_sessions.json'} and {out_dir / 'locomo_sessions.md'}")
