"""memlane demo (with the real bundled model), its shipped data, and the eval group hook."""

from __future__ import annotations

import importlib
import json
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from memlane.cli import cli
from memlane.cli.demo import DEFAULT_DEMO_DB, DEMO_NOW, load_demo_episodes


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_demo_runs_with_the_real_model(runner: CliRunner, in_tmp: Path) -> None:
    result = runner.invoke(cli, ["demo"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    out = result.stdout
    for text in ("score", "relevance", "recency", "importance", "How hits are ranked", "0.995^age_days"):
        assert text in out
    assert "all-MiniLM-L6-v2" in out
    assert "BK-4471 failed: card declined" in out
    assert (in_tmp / DEFAULT_DEMO_DB).exists()

    # A second run replaces the old demo database; --json gives the same recalls as data.
    again = runner.invoke(cli, ["--json", "demo"], catch_exceptions=False)
    assert again.exit_code == 0, again.output
    doc = json.loads(again.stdout)
    assert doc["episodes"] == len(load_demo_episodes())
    assert doc["now"] == DEMO_NOW.isoformat()
    seat, payment, tagged, structured = doc["recalls"]
    assert seat["hits"][0]["id"] == "demo-01"  # "User prefers a window seat ..."
    assert payment["hits"][0]["id"] == "demo-07"  # "BK-4471 failed: card declined ..."
    assert {h["event_type"] for h in tagged["hits"][:2]} == {"booking_failed"}
    assert all({"travel", "lisbon"} <= set(h["tags"]) for h in tagged["hits"])
    assert [h["event_type"] for h in structured["hits"]] == ["booking"] * len(structured["hits"])
    assert all(h["breakdown"] is None for h in structured["hits"])
    for recall in (seat, payment, tagged):
        scores = [h["breakdown"]["score"] for h in recall["hits"]]
        assert scores == sorted(scores, reverse=True)
    # The demo database is left for exploring; it has exactly the demo episodes.
    stats = runner.invoke(cli, ["--db", DEFAULT_DEMO_DB, "--json", "stats"])
    assert json.loads(stats.stdout)["episodes"] == doc["episodes"]


def test_demo_with_explicit_db_and_fake_embedder(runner: CliRunner, tmp_path: Path) -> None:
    target = tmp_path / "sub" / "demo.db"
    result = runner.invoke(cli, ["--embedder", "hashing", "demo", "--db", str(target)])
    assert result.exit_code == 0, result.output
    assert target.exists()
    root_db = tmp_path / "root.db"
    result = runner.invoke(cli, ["--embedder", "hashing", "--db", str(root_db), "demo"])
    assert result.exit_code == 0, result.output
    assert root_db.exists()


def test_demo_never_overwrites_other_files(runner: CliRunner, tmp_path: Path) -> None:
    text_file = tmp_path / "notes.db"
    text_file.write_text("my precious notes")
    result = runner.invoke(cli, ["--embedder", "hashing", "demo", "--db", str(text_file)])
    assert result.exit_code == 2
    assert "not a memlane demo database" in result.stderr
    assert text_file.read_text() == "my precious notes"

    real = tmp_path / "real.db"
    runner.invoke(cli, ["--embedder", "hashing", "--db", str(real), "remember", "note", "keep me"])
    result = runner.invoke(cli, ["--embedder", "hashing", "demo", "--db", str(real)])
    assert result.exit_code == 2
    kept = runner.invoke(cli, ["--embedder", "hashing", "--db", str(real), "--json", "stats"])
    assert json.loads(kept.stdout)["episodes"] == 1


def test_demo_data_is_a_realistic_conversation() -> None:
    items = load_demo_episodes()
    assert 15 <= len(items) <= 25
    assert len({item.id for item in items}) == len(items)
    dates = [item.created_at for item in items]
    assert all(d is not None and d < DEMO_NOW for d in dates)
    span = max(d for d in dates if d) - min(d for d in dates if d)
    assert timedelta(days=45) <= span <= timedelta(days=70)
    assert any(item.importance is None for item in items)
    assert any(item.importance is not None for item in items)
    assert any("BK-4471 failed: card declined" in item.content for item in items)


def test_eval_group_is_registered(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["eval", "--help"])
    assert result.exit_code == 0, result.output


def test_demo_says_how_to_get_memlane_on_the_path(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    demo = importlib.import_module("memlane.cli.demo")

    argv = ["--embedder", "hashing", "demo", "--db", str(tmp_path / "d.db")]
    monkeypatch.setattr(demo.shutil, "which", lambda name: None)
    missing = runner.invoke(cli, argv, catch_exceptions=False)
    assert missing.exit_code == 0
    assert "memlane is not on your PATH" in missing.stdout
    if (Path(sys.executable).parent / "activate").is_file():
        assert "bin/activate` first" in missing.stdout
    monkeypatch.setattr(demo.shutil, "which", lambda name: "/usr/bin/memlane")
    found = runner.invoke(cli, argv, catch_exceptions=False)
    assert "not on your PATH" not in found.stdout and "Try your own: memlane" in found.stdout
