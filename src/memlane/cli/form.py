"""``memlane form``: form event episodes and a summary from a stored session (:mod:`memlane.formation`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from memlane.cli.app import CliError, CliState, pass_state
from memlane.cli.output import echo_json, escape, truncate_words
from memlane.errors import FormationError
from memlane.models import Episode

if TYPE_CHECKING:  # formation is imported by the command that runs it
    from rich.table import Table

    from memlane.formation.llm import ResponseFormat

__all__ = ["form"]

_RAW_WIDTH = 500
"""Characters of each raw model reply shown in an error message."""


def _episodes_table(episodes: list[Episode], session_id: str) -> Table:
    from rich.table import Table

    table = Table(title=f"{len(episodes)} episodes formed from session {escape(session_id)}")
    table.add_column("event_type")
    table.add_column("importance", justify="right")
    table.add_column("content", overflow="fold")
    table.add_column("method")
    for ep in episodes:
        content = truncate_words(ep.content)
        formation = ep.metadata.get("formation", {})
        method = str(formation.get("method", ""))
        if "llm_error" in formation:
            method += " (LLM failed)"
        table.add_row(
            escape(ep.event_type),
            "-" if ep.importance is None else f"{ep.importance:g}",
            escape(content),
            escape(method),
        )
    return table


@click.command()
@click.option(
    "--session",
    "session_id",
    required=True,
    help="The stored session (see 'memlane sessions') to form episodes from; they are stored in it too.",
)
@click.option(
    "--llm-model",
    default=None,
    help="Chat model name; turns on LLM formation. Without it formation is deterministic and offline: "
    "every turn verbatim plus an extractive summary.",
)
@click.option(
    "--llm-base-url",
    default=None,
    help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1 (needs --llm-model). "
    "Default: the openai SDK's ($OPENAI_BASE_URL, else OpenAI). The SDK reads the key from "
    "$OPENAI_API_KEY (any value for a local server that needs none).",
)
@click.option(
    "--llm-max-tokens",
    type=click.IntRange(min=1),
    default=300,
    show_default=True,
    help="Reply length limit; a reply cut off there counts as malformed.",
)
@click.option(
    "--llm-response-format",
    type=click.Choice(["json_schema", "json_object", "none"]),
    default="json_schema",
    show_default=True,
    help="How to ask for JSON: a server-enforced schema, any JSON object, or the prompt only.",
)
@click.option(
    "--fallback",
    is_flag=True,
    help="If the model fails (request error, or malformed output twice), form that part "
    "deterministically and record the failure, instead of storing nothing and exiting 2.",
)
@click.option("--no-summary", is_flag=True, help="Do not add a session_summary episode.")
@click.option("--no-extract", is_flag=True, help="Do not add the extracted facts (or raw turns).")
@click.option(
    "--summary-importance",
    type=float,
    default=None,
    help="Importance 1-10 of the summary episode (clamped). Default: unrated.",
)
@click.option(
    "--replace",
    is_flag=True,
    help="If the session was formed before, delete those episodes and store the new ones. "
    "Without it a second run stores nothing and says so.",
)
@pass_state
def form(  # noqa: PLR0913  (a click command: one parameter per option)
    state: CliState,
    session_id: str,
    llm_model: str | None,
    llm_base_url: str | None,
    llm_max_tokens: int,
    llm_response_format: ResponseFormat,
    fallback: bool,
    no_summary: bool,
    no_extract: bool,
    summary_importance: float | None,
    replace: bool,
) -> None:
    """Form episodes from a stored session and remember them in that session.

    With --llm-model, a chat model extracts facts (event_type, content, tags,
    importance 1-10) and writes a summary, as JSON checked against a schema; a malformed
    reply is retried once, then the command fails (exit 2) with the raw reply in the
    message, and nothing is stored. Every episode records its provenance (model, prompt
    version, source session) in metadata.formation.

    Idempotent per session: if episodes formed from this session already exist, nothing
    is formed or stored (the note on stderr names them; --json prints []), unless
    --replace is given, which stores the new episodes and then deletes the earlier ones.
    """
    if llm_base_url is not None and llm_model is None:
        raise CliError("--llm-base-url needs --llm-model", json_output=state.json_output)
    memory = state.memory(must_exist=True)
    session = memory.sessions.get_session(session_id)
    if session is None:
        raise CliError(
            f"no session {session_id!r} for tenant {memory.tenant_id!r}", json_output=state.json_output
        )
    from memlane.formation import previous_formation

    earlier = previous_formation(memory, session.session_id)
    if earlier and not replace:
        click.echo(
            f"session {session.session_id!r} was already formed: {len(earlier)} episode(s) exist "
            f"({', '.join(e.id for e in earlier[:5])}{', ...' if len(earlier) > 5 else ''}); nothing "
            "stored. Pass --replace to replace them.",
            err=True,
        )
        if state.json_output:
            echo_json([])
        return
    from memlane.formation import OpenAICompatibleLLM, form_episodes

    llm = None
    if llm_model is not None:
        llm = OpenAICompatibleLLM(
            llm_model,
            base_url=llm_base_url,
            max_tokens=llm_max_tokens,
            response_format=llm_response_format,
        )
    try:
        episodes = form_episodes(
            memory,
            [message.to_dict() for message in session.messages],
            llm=llm,
            session_id=session.session_id,
            summarize=not no_summary,
            extract=not no_extract,
            on_llm_error="fallback" if fallback else "raise",
            summary_importance=summary_importance,
            replace=replace,
        )
    except FormationError as exc:
        message = str(exc)
        if exc.raw_texts:
            shown = [text if len(text) <= _RAW_WIDTH else text[:_RAW_WIDTH] + "…" for text in exc.raw_texts]
            message += f"; raw replies: {shown!r}"
        raise CliError(message, kind=type(exc).__name__, json_output=state.json_output) from exc
    if earlier:
        click.echo(
            f"replaced the earlier formation of session {session.session_id!r}: deleted {len(earlier)} "
            "episode(s)",
            err=True,
        )
    if state.json_output:
        echo_json([ep.to_dict() for ep in episodes])
    else:
        state.out.print(_episodes_table(episodes, session.session_id))
