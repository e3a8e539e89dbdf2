"""Destructive commands preview and confirm: prune and forget (--dry-run, a terminal prompt, --yes)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import Invoke

NOW = datetime(2025, 3, 15, 12, tzinfo=UTC)
Remember = Any


def _count(invoke: Invoke) -> int:
    result = invoke("stats", global_opts=["--json", "--scope", "global"])
    assert result.exit_code == 0, result.output
    return int(json.loads(result.stdout)["episodes"])


@pytest.fixture
def aged(remember: Remember) -> None:
    """Two old episodes (tenants default and t2) and a recent one."""
    remember("note", "old", "--created-at", (NOW - timedelta(days=100)).isoformat())
    remember("note", "recent", "--created-at", (NOW - timedelta(days=1)).isoformat())
    remember(
        "note",
        "other, old",
        "--created-at",
        (NOW - timedelta(days=90)).isoformat(),
        global_opts=["--tenant", "t2"],
    )


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the commands believe stdin is a terminal (CliRunner's is not)."""
    monkeypatch.setattr("memlane.cli.confirm.stdin_is_interactive", lambda: True)


PRUNE = ("prune", "--retention-days", "30", "--now", NOW.isoformat())


def test_prune_dry_run_reports_the_count_and_deletes_nothing(invoke: Invoke, aged: None) -> None:
    dry = invoke(*PRUNE, "--dry-run", global_opts=["--json"])
    assert dry.exit_code == 0, dry.output
    assert json.loads(dry.stdout) == {
        "deleted": 0,
        "would_delete": 2,
        "sessions": 0,
        "dry_run": True,
        "retention_days": 30.0,
        "cutoff": (NOW - timedelta(days=30)).isoformat(),
    }
    assert _count(invoke) == 3
    text = invoke(*PRUNE, "--dry-run")
    assert "would delete 2 episode(s)" in text.stdout and _count(invoke) == 3


def test_prune_dry_run_without_retention_says_would_delete(invoke: Invoke, aged: None) -> None:
    text = invoke("prune", "--dry-run", "--now", NOW.isoformat())  # #23 item 7: not "deleted 0"
    assert text.exit_code == 0, text.output
    assert "would delete 0 episodes" in text.stdout and "deleted 0" not in text.stdout.replace("would ", "")


def test_prune_asks_on_a_terminal_and_no_means_nothing_changes(
    invoke: Invoke, aged: None, terminal: None
) -> None:
    declined = invoke(*PRUNE, input="n\n")
    assert declined.exit_code == 2
    assert "Delete 2 of 3 episode(s), of ALL tenants" in declined.stderr
    assert "cancelled; nothing was changed" in declined.stderr
    assert _count(invoke) == 3
    accepted = invoke(*PRUNE, input="y\n")
    assert accepted.exit_code == 0 and "deleted 2 episode(s)" in accepted.stdout
    assert _count(invoke) == 1


def test_prune_yes_skips_the_prompt(invoke: Invoke, aged: None, terminal: None) -> None:
    result = invoke(*PRUNE, "--yes", global_opts=["--json"])  # no input: a prompt would abort
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["deleted"] == 2 and _count(invoke) == 1


def test_prune_without_a_terminal_does_not_prompt(invoke: Invoke, aged: None) -> None:
    result = invoke(*PRUNE)
    assert result.exit_code == 0 and "Delete" not in result.stderr
    assert _count(invoke) == 1


def _faded(invoke: Invoke, tmp_path: Path) -> None:
    source = tmp_path / "old.jsonl"
    rows = [
        {"event_type": "note", "content": "trivial", "importance": 2, "created_at": "2025-01-01T00:00:00Z"},
        {"event_type": "note", "content": "vital", "importance": 10, "created_at": "2025-01-01T00:00:00Z"},
    ]
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert invoke("ingest", str(source)).exit_code == 0


def test_forget_needs_forgetting_on_or_force_and_asks_on_a_terminal(
    invoke: Invoke, tmp_path: Path, terminal: None
) -> None:
    _faded(invoke, tmp_path)
    now = "2025-01-11T00:00:00Z"
    off = invoke("forget", "--now", now, global_opts=["--json"])
    assert off.exit_code == 2
    assert json.loads(off.stderr)["type"] == "ForgettingOff"
    declined = invoke("forget", "--now", now, "--force", input="n\n")
    assert declined.exit_code == 2 and "Archive 1 episode(s)" in declined.stderr
    stats = json.loads(invoke("stats", global_opts=["--json"]).stdout)
    assert (stats["active"], stats["archived"], stats["superseded"]) == (2, 0, 0)
    done = invoke("forget", "--now", now, "--force", "--yes")
    assert done.exit_code == 0 and "1 episode(s) archived" in done.stdout
    stats = json.loads(invoke("stats", global_opts=["--json"]).stdout)
    assert (stats["episodes"], stats["active"], stats["archived"], stats["superseded"]) == (2, 1, 1, 0)
    table = invoke("stats")
    assert "archived" in table.stdout and "superseded" in table.stdout


def test_forget_runs_without_force_when_the_config_turns_forgetting_on(
    invoke: Invoke, tmp_path: Path
) -> None:
    _faded(invoke, tmp_path)
    config = tmp_path / "memlane.yaml"
    config.write_text("episodic_memory:\n  forgetting: true\n", encoding="utf-8")
    done = invoke("forget", "--now", "2025-01-11T00:00:00Z", global_opts=["--config", str(config)])
    assert done.exit_code == 0, done.output
    assert "1 episode(s) archived" in done.stdout
