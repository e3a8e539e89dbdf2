"""``memlane --config FILE``: every command reads the YAML file; command-line options override it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from memlane import EpisodicMemory
from memlane.cli import cli
from memlane.config.file import load_config
from memlane.embeddings.fake import HashingEmbedder

CONFIG = """
memory:
  path: data/agent.db
episodic_memory:
  embedding_provider: hashing
  scope: tenant
  default_limit: 2
  retention_days: 30
  tenant_id: acme
  session_id: chat-1
"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "memlane.yaml"
    path.write_text(CONFIG, encoding="utf-8")
    return path


def run(runner: CliRunner, *args: str, env: dict[str, str] | None = None) -> Result:
    return runner.invoke(cli, list(args), catch_exceptions=False, env=env)


def run_json(runner: CliRunner, *args: str) -> Any:
    result = run(runner, *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_config_gives_the_store_tenant_session_scope_limit_and_embedder(
    runner: CliRunner, config: Path, tmp_path: Path
) -> None:
    stored = run_json(runner, "--config", str(config), "--json", "remember", "note", "from the config")
    assert (stored["tenant_id"], stored["session_id"]) == ("acme", "chat-1")
    db = tmp_path / "data" / "agent.db"  # relative to the config file, not the working directory
    assert db.exists()
    for n in range(3):
        run_json(
            runner, "--config", str(config), "--session", f"other-{n}", "--json", "remember", "note", f"n{n}"
        )
    hits = run_json(runner, "--config", str(config), "--json", "recall", "note")
    assert len(hits) == 2  # default_limit 2; tenant scope sees every session
    stats = run_json(runner, "--config", str(config), "--json", "stats")
    assert stats["embedding_model"]["model_id"] == "hashing-64"  # the configured embedder
    assert stats["episodes"] == 4


def test_command_line_options_override_the_config(runner: CliRunner, config: Path, tmp_path: Path) -> None:
    other_db = tmp_path / "other.db"
    stored = run_json(
        runner,
        "--config",
        str(config),
        "--db",
        str(other_db),
        "--tenant",
        "globex",
        "--json",
        "remember",
        "n",
        "x",
    )
    assert stored["tenant_id"] == "globex"
    assert other_db.exists()
    assert not (tmp_path / "data" / "agent.db").exists()
    session_only = run_json(
        runner, "--config", str(config), "--db", str(other_db), "--tenant", "globex", "--session", "s9",
        "--scope", "session", "--json", "recall",
    )  # fmt: skip
    assert session_only == []


def test_memlane_config_environment_variable(runner: CliRunner, config: Path) -> None:
    result = run(runner, "--json", "remember", "note", "via env", env={"MEMLANE_CONFIG": str(config)})
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["tenant_id"] == "acme"


def test_prune_uses_the_configured_retention(runner: CliRunner, config: Path) -> None:
    run_json(
        runner,
        "--config",
        str(config),
        "--json",
        "remember",
        "n",
        "old",
        "--created-at",
        "2020-01-01T00:00:00Z",
    )
    pruned = run_json(runner, "--config", str(config), "--json", "prune")
    assert (pruned["deleted"], pruned["retention_days"]) == (1, 30)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("episodic_memory:\n  scope: team\n", "episodic_memory.scope: must be one of"),
        ("memory:\n  type: mysql\n", "memory.type: must be one of"),
        ("episodic_memory: [oops\n", "invalid YAML"),
    ],
)
def test_an_invalid_config_is_a_one_line_error(
    runner: CliRunner, tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    result = run(runner, "--config", str(path), "stats")
    assert result.exit_code == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_missing_config_file(runner: CliRunner, tmp_path: Path) -> None:
    result = run(runner, "--config", str(tmp_path / "nope.yaml"), "stats")
    assert result.exit_code == 2
    assert "not found" in result.stderr


def test_api_key_prints_a_key_and_its_config_entry(runner: CliRunner, tmp_path: Path) -> None:
    made = run_json(runner, "--json", "api-key", "acme")
    assert made["api_key"].startswith("mlk_") and len(made["api_key"]) > 40
    assert made["config_entry"].startswith("sha256:")
    text = run(runner, "api-key", "acme").stdout
    entry_line = text.strip().splitlines()[-1].strip()
    config = load_config({"server": {"api_keys": yaml.safe_load(entry_line)}})
    key_line = text.splitlines()[1].strip()
    assert config.server.tenant_for_key(key_line) == "acme"
    assert config.server.tenant_for_key(made["api_key"]) is None  # every key is new
    bad = run(runner, "api-key", " ")
    assert bad.exit_code == 2


def test_serve_refuses_to_start_without_api_keys(runner: CliRunner, config: Path) -> None:
    result = run(runner, "--config", str(config), "serve")
    assert result.exit_code == 2
    assert "server.api_keys" in result.stderr


def test_mcp_and_serve_are_listed(runner: CliRunner) -> None:
    help_text = run(runner, "--help").stdout
    for command in ("serve", "mcp", "api-key"):
        assert command in help_text
    assert "--config" in help_text


def test_a_config_without_episodic_section_keeps_the_defaults(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "store-only.yaml"
    path.write_text("memory:\n  path: only.db\n", encoding="utf-8")
    stored = run_json(runner, "--config", str(path), "--embedder", "hashing", "--json", "remember", "n", "x")
    assert (stored["tenant_id"], stored["session_id"]) == ("default", "default")
    with EpisodicMemory.open(tmp_path / "only.db", embedder=HashingEmbedder()) as memory:
        assert memory.count() == 1
