"""The ``memlane`` command line: a thin layer over :class:`memlane.EpisodicMemory`.

Modules, one concern each:

* :mod:`~memlane.cli.app` — root group, global options, shared state, logging, errors/exit codes.
* :mod:`~memlane.cli.episodes` — ``remember``, ``recall``, ``stats``, ``prune``.
* :mod:`~memlane.cli.transfer` — ``ingest`` and ``export`` (JSONL, :mod:`~memlane.cli.jsonl`).
* :mod:`~memlane.cli.demo` — ``demo``.
* :mod:`~memlane.cli.eval` — ``eval`` benchmarks.
* :mod:`~memlane.cli.lifecycle` — ``history`` (supersede chains), ``forget`` (forgetting policies),
  ``compact`` (merge near-duplicates, archive stale episodes).
* :mod:`~memlane.cli.form` — ``form`` (episodes from a stored session, :mod:`memlane.formation`).
* :mod:`~memlane.cli.optimize` — ``optimize`` (the search indexes, :meth:`memlane.EpisodicMemory.optimize`).
* :mod:`~memlane.cli.reembed` — ``reembed`` (embedding model migration, :mod:`memlane.lifecycle.reembed`).
* :mod:`~memlane.cli.serve` — ``serve`` (HTTP API), ``mcp`` (MCP server), ``api-key``.
* :mod:`~memlane.cli.inspect` — ``inspect`` (the memory inspector on a local database).
* :mod:`~memlane.cli.sessions` — ``sessions import|recent|search|show`` and ``context`` (session episodes).
* :mod:`~memlane.cli.output`, :mod:`~memlane.cli.params` — rendering and option types.

For tests, the hidden global option ``--embedder hashing`` swaps the bundled model for the
deterministic :class:`memlane.embeddings.fake.HashingEmbedder`.
"""

from __future__ import annotations

import os
import sys

from memlane.cli.app import cli
from memlane.cli.demo import demo
from memlane.cli.episodes import prune, recall, remember, stats
from memlane.cli.eval import eval_group
from memlane.cli.form import form
from memlane.cli.graph import facts_group, graph_group
from memlane.cli.inspect import inspect_command
from memlane.cli.lifecycle import compact, forget, history
from memlane.cli.optimize import optimize
from memlane.cli.reembed import reembed_command
from memlane.cli.serve import api_key, mcp, serve
from memlane.cli.sessions import context, sessions_group
from memlane.cli.transfer import export, ingest

__all__ = ["cli", "main"]

for _command in (remember, recall, ingest, export, stats, prune, demo, eval_group, serve, mcp, api_key, form):
    cli.add_command(_command)
cli.add_command(reembed_command)
cli.add_command(sessions_group)
cli.add_command(context)
cli.add_command(history)
cli.add_command(forget)
cli.add_command(compact)
cli.add_command(inspect_command)
cli.add_command(optimize)
cli.add_command(facts_group)
cli.add_command(graph_group)


def main() -> None:
    """Console-script entry point (``memlane = "memlane.cli:main"``).

    A closed stdout (``memlane export | head -1``) ends the command quietly, like other Unix tools.
    """
    try:
        cli.main(prog_name="memlane")
    except BrokenPipeError:
        # Point stdout at /dev/null so the interpreter's final flush does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
