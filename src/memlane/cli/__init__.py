"""The ``memlane`` command line: a thin layer over :class:`memlane.EpisodicMemory`.

Modules, one concern each:

* :mod:`~memlane.cli.app` — root group, global options, shared state, logging, errors/exit codes.
* :mod:`~memlane.cli.episodes` — ``remember``, ``recall``, ``stats``, ``prune``.
* :mod:`~memlane.cli.transfer` — ``ingest`` and ``export`` (JSONL, :mod:`~memlane.cli.jsonl`).
* :mod:`~memlane.cli.demo` — ``demo``.
* :mod:`~memlane.cli.eval` — ``eval`` benchmarks.
* :mod:`~memlane.cli.serve` — ``serve`` (HTTP API), ``mcp`` (MCP server), ``api-key``.
* :mod:`~memlane.cli.output`, :mod:`~memlane.cli.params` — rendering and option types.

For tests, the hidden global option ``--embedder hashing`` swaps the bundled model for the
deterministic :class:`memlane.embeddings.fake.HashingEmbedder`.
"""

from __future__ import annotations

from memlane.cli.app import cli
from memlane.cli.demo import demo
from memlane.cli.episodes import prune, recall, remember, stats
from memlane.cli.eval import eval_group
from memlane.cli.serve import api_key, mcp, serve
from memlane.cli.transfer import export, ingest

__all__ = ["cli", "main"]

for _command in (remember, recall, ingest, export, stats, prune, demo, eval_group, serve, mcp, api_key):
    cli.add_command(_command)


def main() -> None:
    """Console-script entry point (``memlane = "memlane.cli:main"``)."""
    cli.main(prog_name="memlane")
