"""``memlane optimize``: build the search indexes of a store now, off the recall path."""

from __future__ import annotations

import dataclasses

import click

from memlane.cli.app import CliState, pass_state
from memlane.cli.output import echo_json

__all__ = ["optimize"]


@click.command()
@pass_state
def optimize(state: CliState) -> None:
    """Build the store's search indexes now, so that no recall has to (after a bulk import).

    SQLite: reads every new vector into the index, writes the <db>.vectors cold-start file
    (from 10,000 vectors; a smaller store loads as fast from SQLite) and, above 50,000
    vectors, trains the <db>.ivf approximate-search lists (retrained once the store grew 4x)
    and adds every new row to them; recalls never train them (without them a large store is
    searched exactly, same hits, slower). 'memlane ingest' runs this when it
    stored something. PostgreSQL: folds the rows written since the last fold (searched
    exactly meanwhile) into the HNSW index. Every tenant.
    """
    report = state.memory(must_exist=True).optimize()
    if state.json_output:
        echo_json(dataclasses.asdict(report))
        return
    ann = "exact search (no ANN lists needed)"
    if report.ann_rows:
        ann = f"ANN lists over {report.ann_rows} rows" + (" (trained now)" if report.ann_trained else "")
    wrote = f"; wrote {', '.join(report.saved)}" if report.saved else ""
    state.out.print(f"{report.vectors} vectors indexed; {ann}{wrote}")
