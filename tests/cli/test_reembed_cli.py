"""``memlane reembed`` through the real CLI over a real SQLite file (old: hashing-64, new: hashing-32)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memlane.cli import cli
from memlane.embeddings.fake import HashingEmbedder
from memlane.lifecycle.reembed import reembed, reembed_backend
from memlane.stores.base import EpisodeFilter
from memlane.stores.sqlite import SQLiteStore
from tests.cli.conftest import Invoke

Remember = Callable[..., dict[str, Any]]


def _json(invoke: Invoke, *args: str, **kwargs: Any) -> Any:
    result = invoke(*args, global_opts=["--json"], **kwargs)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture
def filled(invoke: Invoke, remember: Remember, db: Path) -> Path:
    for i in range(5):
        remember("note", f"note {i} about green tea")
    result = invoke("remember", "note", "stored while the embedder was down", embedder="failing")
    assert result.exit_code == 0, result.output
    return db


def test_reembed_fills_missing_vectors_then_migrates(invoke: Invoke, filled: Path, tmp_path: Path) -> None:
    assert _json(invoke, "reembed", "--dry-run")["total"] == 1
    fill = _json(invoke, "reembed")
    assert (fill["mode"], fill["embedded"], fill["switched"]) == ("fill", 1, False)

    plan = _json(invoke, "reembed", "--model", "hashing-32", "--dry-run")
    assert (plan["mode"], plan["total"], plan["dry_run"]) == ("migrate", 6, True)
    result = invoke("reembed", "--model", "hashing-32", "--batch-size", "2")
    assert result.exit_code == 0, result.output
    assert "switched from hashing-64 to hashing-32 (32 dims)" in result.stdout

    stale = invoke("stats")  # still the old model: refused with a one-line error
    assert stale.exit_code == 2 and "hashing-32" in stale.stderr

    config = tmp_path / "memlane.yaml"
    config.write_text(
        "episodic_memory:\n  embedding_model: hashing-32\n  embedding_provider: hashing\n"
        "  embedding_dims: 32\n  retrieval: dense\n",
        encoding="utf-8",
    )
    argv = ["--config", str(config), "--db", str(filled), "--json", "recall", "down embedder"]
    recalled = CliRunner().invoke(cli, argv, catch_exceptions=False)
    assert recalled.exit_code == 0, recalled.output
    assert json.loads(recalled.stdout)[0]["content"] == "stored while the embedder was down"
    store = SQLiteStore(filled)
    try:
        assert {e.embedding_model for e in store.iter_episodes(EpisodeFilter())} == {"hashing-32"}
    finally:
        store.close()


def test_reembed_resumes_and_aborts(invoke: Invoke, filled: Path) -> None:
    store = SQLiteStore(filled)

    def stop(done: int, total: int) -> None:
        if done:
            raise KeyboardInterrupt

    try:
        with pytest.raises(KeyboardInterrupt):
            reembed(store, HashingEmbedder(32), batch_size=2, progress=stop)
        assert reembed_backend(store).count_staged("episodes") == 2
        assert _json(invoke, "reembed", "--abort") == {"aborted": True}
        assert reembed_backend(store).state() is None
        with pytest.raises(KeyboardInterrupt):
            reembed(store, HashingEmbedder(32), batch_size=2, progress=stop)
    finally:
        store.close()
    report = _json(invoke, "reembed", "--model", "hashing-32", "--batch-size", "2")
    assert (report["resumed_from"], report["embedded"], report["switched"]) == (2, 4, True)


def test_reembed_errors(invoke: Invoke, tmp_path: Path) -> None:
    missing = invoke("reembed", db_path=tmp_path / "nope.db")
    assert missing.exit_code == 2 and "no database" in missing.stderr
    assert not (tmp_path / "nope.db").exists()
    invoke("remember", "note", "x")
    unknown = invoke("reembed", "--model", "no-such-model")
    assert unknown.exit_code == 2 and "embedding_model" in unknown.stderr
    assert invoke("reembed", "--dims", "8").exit_code == 2
