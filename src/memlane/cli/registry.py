"""Where each ``memlane`` subcommand lives, and its one-paragraph summary, so that the root
group lists its commands without importing them (``memlane --help`` in a fraction of the time).

:data:`HOMES` routes a command name to the module attribute that declares it (the click
command, with its docstring and options, is the one declaration). :data:`SUMMARIES` is
*generated* from those declarations — the first paragraph of each command's help — by
``python -m memlane.cli.registry``; ``tests/cli/test_lazy_commands.py`` fails when it is stale,
so the lazy listing always equals the eager one. The same run writes
:data:`memlane.cli.params.FIELD_SCHEMAS_FILE` (the request fields the options are generated from),
so a command's ``--help`` needs no pydantic either.
"""

from __future__ import annotations

import importlib
import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import click

__all__ = ["HOMES", "SUMMARIES", "generated_summaries", "load_command", "summary_of"]

HOMES: dict[str, str] = {
    "api-key": "memlane.cli.serve:api_key",
    "compact": "memlane.cli.lifecycle:compact",
    "context": "memlane.cli.sessions:context",
    "demo": "memlane.cli.demo:demo",
    "eval": "memlane.cli.eval:eval_group",
    "export": "memlane.cli.transfer:export",
    "facts": "memlane.cli.graph:facts_group",
    "forget": "memlane.cli.lifecycle:forget",
    "form": "memlane.cli.form:form",
    "graph": "memlane.cli.graph:graph_group",
    "history": "memlane.cli.lifecycle:history",
    "ingest": "memlane.cli.transfer:ingest",
    "inspect": "memlane.cli.inspect:inspect_command",
    "mcp": "memlane.cli.serve:mcp",
    "optimize": "memlane.cli.optimize:optimize",
    "prune": "memlane.cli.episodes:prune",
    "recall": "memlane.cli.episodes:recall",
    "reembed": "memlane.cli.reembed:reembed_command",
    "remember": "memlane.cli.episodes:remember",
    "serve": "memlane.cli.serve:serve",
    "sessions": "memlane.cli.sessions:sessions_group",
    "stats": "memlane.cli.episodes:stats",
}
"""Command name -> ``module:attribute`` of its click command (or group)."""

# BEGIN GENERATED SUMMARIES (python -m memlane.cli.registry)
SUMMARIES: dict[str, str] = {
    "api-key": "Make a new random API key for TENANT_ID and print it with its config entry.",
    "compact": "Merge near-duplicate episodes in scope and archive stale ones.",
    "context": "Print the [Past Conversation Context] block for QUERY, within --budget tokens.",
    "demo": "Remember a shipped example conversation, then show explained recalls.",
    "eval": "Measure retrieval quality on public benchmarks.",
    "export": "Write every episode in scope as JSONL, oldest first (created_at, then insertion order).",
    "facts": "Facts about entities in the knowledge graph: add, query, timeline, neighbours, paths.",
    "forget": "Archive (or delete, if configured) episodes in scope whose strength faded.",
    "form": "Form episodes from a stored session and remember them in that session.",
    "graph": "The knowledge graph's health: stats, and check against seed 002's limits.",
    "history": "Show the supersede chain through EPISODE_ID, oldest first.",
    "ingest": "Remember the episodes of a JSONL FILE ('-' for stdin), one JSON object per line.",
    "inspect": "Open the memory inspector for DB (default: --db / the config / $MEMLANE_DB) until interrupted.",  # noqa: E501
    "mcp": "Serve the memory tools over the Model Context Protocol until the client disconnects.",
    "optimize": "Build the store's search indexes now, so that no recall has to (after a bulk import).",
    "prune": "Delete old episodes and print how many were deleted.",
    "recall": "Recall episodes in scope: ranked by QUERY, or newest first without one.",
    "reembed": "Re-embed every episode with another model, resumably, then switch over atomically.",
    "remember": "Remember one episode and print it as stored (with its new id).",
    "serve": "Serve the HTTP API (FastAPI + uvicorn) until interrupted.",
    "sessions": "Whole past conversations (session episodes): import, list, search, show.",
    "stats": "Summarise the episodes in scope.",
}
# END GENERATED SUMMARIES
"""Command name -> the first paragraph of its help (what ``memlane --help`` shortens per line)."""


def load_command(name: str) -> click.Command:
    """Import and return the command registered under ``name``.

    Raises:
        KeyError: ``name`` is not in :data:`HOMES`.
    """
    module, attribute = HOMES[name].split(":")
    command: click.Command = getattr(importlib.import_module(module), attribute)
    return command


def summary_of(command: click.Command) -> str:
    """The first paragraph of ``command``'s help (click shortens it; ``""`` without help)."""
    text = (command.help or "").split("\f", 1)[0].strip()
    return text.split("\n\n", 1)[0].strip()


def generated_summaries() -> dict[str, str]:
    """:data:`SUMMARIES` as the declarations give it now (imports every command)."""
    return {name: summary_of(load_command(name)) for name in sorted(HOMES)}


_LINE = 110
"""ruff's line length (pyproject.toml): longer generated lines carry a ``noqa``."""


def _write(path: Path) -> None:
    lines = [f"    {name!r}: {text!r}," for name, text in generated_summaries().items()]
    lines = [line if len(line) <= _LINE else f"{line}  # noqa: E501" for line in lines]
    body = "SUMMARIES: dict[str, str] = {\n" + "".join(f"{line}\n" for line in lines) + "}\n"
    source = path.read_text(encoding="utf-8")
    pattern = re.compile(r"(# BEGIN GENERATED SUMMARIES[^\n]*\n).*?(# END GENERATED SUMMARIES)", re.S)
    path.write_text(pattern.sub(lambda m: m.group(1) + body + m.group(2), source), encoding="utf-8")


def _write_field_schemas() -> None:
    from memlane.cli.params import FIELD_SCHEMAS_FILE, generated_field_schemas

    schemas = generated_field_schemas(load_command(name) for name in sorted(HOMES))
    text = json.dumps(schemas, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    FIELD_SCHEMAS_FILE.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    _write(Path(__file__))
    _write_field_schemas()
    sys.exit(0)
