"""``memlane eval``: retrieval-quality benchmarks (e.g. ``memlane eval locomo``).

Placeholder group; the benchmark subcommands are added here.
"""

from __future__ import annotations

import click

__all__ = ["eval_group"]


@click.group(name="eval")
def eval_group() -> None:
    """Measure retrieval quality on public benchmarks (subcommands per benchmark)."""
