"""Confirmation before destructive commands (``prune``, ``forget``).

A destructive command first works out what it would change (as its ``--dry-run`` reports),
then, when stdin is an interactive terminal and ``--yes`` was not given, asks before changing
anything. Scripts (stdin not a TTY) are not prompted: they pass ``--dry-run`` to preview.
"""

from __future__ import annotations

import sys

import click

from memlane.cli.app import CliError

__all__ = ["confirm_destructive", "stdin_is_interactive"]


def stdin_is_interactive() -> bool:
    """Whether stdin is a terminal (a person can answer a prompt)."""
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (AttributeError, ValueError):  # closed or replaced stdin
        return False


def confirm_destructive(question: str, *, yes: bool, json_output: bool) -> None:
    """Ask ``question`` (default: no) when interactive and not ``yes``; stop the command on "no".

    The prompt goes to stderr, so ``--json`` output on stdout stays machine-readable.

    Raises:
        CliError: the user declined (exit 2; nothing was changed).
    """
    if yes or not stdin_is_interactive():
        return
    if not click.confirm(question, default=False, err=True):
        raise CliError("cancelled; nothing was changed", kind="Cancelled", json_output=json_output)
