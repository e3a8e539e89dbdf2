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

The commands are registered by name in :mod:`~memlane.cli.registry` and imported when run
(``memlane --help`` imports none of them).
"""

from __future__ import annotations

import os
import sys

from memlane.cli.app import cli

__all__ = ["cli", "main"]


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
