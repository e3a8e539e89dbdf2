"""Fixtures for CLI tests: a CliRunner over real SQLite files, with the fast fake embedder.

Every invocation goes through the real root group with ``--embedder hashing`` (the hidden,
test-only option) unless a test asks for another embedder; the demo test uses the real model.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from memlane.cli import cli

Invoke = Callable[..., Result]


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


@pytest.fixture
def invoke(runner: CliRunner, db: Path) -> Invoke:
    """Run ``memlane --db <db> --embedder hashing [global opts] ARGS``; returns the click Result."""

    def run(
        *args: str,
        db_path: Path | None = None,
        embedder: str = "hashing",
        global_opts: Sequence[str] = (),
        input: str | bytes | None = None,
    ) -> Result:
        argv = ["--db", str(db_path or db), "--embedder", embedder, *global_opts, *args]
        return runner.invoke(cli, argv, input=input, catch_exceptions=False)

    return run


@pytest.fixture
def remember(invoke: Invoke) -> Callable[..., dict[str, Any]]:
    """Remember one episode through the CLI (``--json``) and return its JSON form."""

    def run(event_type: str, content: str, *extra: str, global_opts: Sequence[str] = ()) -> dict[str, Any]:
        result = invoke("remember", event_type, content, *extra, global_opts=["--json", *global_opts])
        assert result.exit_code == 0, result.output
        data: dict[str, Any] = json.loads(result.stdout)
        return data

    return run
