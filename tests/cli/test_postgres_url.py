"""``--db postgresql://…`` works wherever a SQLite path does (a real server, a fresh database)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import pytest
from click.testing import CliRunner

from memlane.cli import cli


@pytest.fixture
def fresh_database_url(pg_url: str) -> Iterator[str]:
    import psycopg
    from psycopg import sql

    name = f"cli_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    parts = urlsplit(pg_url)
    yield urlunsplit(parts._replace(path=f"/{name}"))
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


def test_cli_commands_against_postgres(fresh_database_url: str) -> None:
    runner = CliRunner()
    base = ["--db", fresh_database_url, "--embedder", "hashing", "--json"]
    for content in ("window seat please", "card declined on booking"):
        result = runner.invoke(cli, [*base, "remember", "note", content, "--tag", "travel"])
        assert result.exit_code == 0, result.output
    result = runner.invoke(cli, [*base, "recall", "window seat", "--limit", "1"])
    assert result.exit_code == 0, result.output
    (hit,) = json.loads(result.stdout)
    assert hit["content"] == "window seat please" and hit["breakdown"]["dense"] > 0.5
    result = runner.invoke(cli, [*base, "stats"])
    assert result.exit_code == 0 and json.loads(result.stdout)["episodes"] == 2
    result = runner.invoke(cli, [*base, "export"])
    assert result.exit_code == 0
    assert [json.loads(line)["content"] for line in result.stdout.splitlines()] == [
        "window seat please",
        "card declined on booking",
    ]
