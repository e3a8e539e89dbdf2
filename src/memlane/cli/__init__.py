"""The ``memlane`` command line: a thin layer over :class:`memlane.EpisodicMemory`.

Modules, one concern each:

* :mod:`~memlane.cli.app` — root group, global options, shared state, logging, errors/exit codes.
* :mod:`~memlane.cli.episodes` — ``remember``, ``recall``, ``stats``, ``prune``.
* :mod:`~memlane.cli.transfer` — ``ingest`` and ``export`` (JSONL, :mod:`~memlane.cli.jsonl`).
* :mod:`~memlane.cli.demo` — ``demo``.
* :mod:`~memlane.cli.eval` — ``eval`` benchmarks.
* :mod:`~memlane.cli.output`, :mod:`~memlane.cli.params` — rendering and option types.

For tests, the hidden global option ``--embedder hashing`` swaps the bundled model for the
deterministic :class:`memlane.embeddings.fake.HashingEmbedder`.
"""

from __future__ import annotations

import click

from memlane.cli.app import CliError, cli
from memlane.cli.demo import demo
from memlane.cli.episodes import prune, recall, remember, stats
from memlane.cli.transfer import export, ingest

__all__ = ["cli", "main"]

for _command in (remember, recall, ingest, export, stats, prune, demo):
    cli.add_command(_command)


def _register_eval() -> None:
    """Add ``memlane eval``; if its module cannot be imported, add a stub that says why."""
    try:
        from memlane.cli.eval import eval_group
    except ImportError as exc:
        reason = str(exc)

        @click.command(name="eval", help=f"Unavailable here: {reason}")
        def eval_unavailable() -> None:
            raise CliError(f"memlane eval is unavailable: {reason}")

        cli.add_command(eval_unavailable)
        return
    cli.add_command(eval_group)


_register_eval()


def main() -> None:
    """Console-script entry point (``memlane = "memlane.cli:main"``)."""
    cli.main(prog_name="memlane")
