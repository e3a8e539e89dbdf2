"""``memlane optimize`` and the index build at the end of ``memlane ingest`` (issue #24 item 3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memlane import EpisodicMemory
from memlane.stores.base import IndexReport
from tests.cli.conftest import Invoke


def test_optimize_reports_what_it_built(invoke: Invoke, db: Path) -> None:
    for text in ("User prefers window seats", "Invoice 4471 was paid"):
        assert invoke("remember", "note", text).exit_code == 0
    result = invoke("optimize", global_opts=["--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"vectors": 2, "ann_rows": 0, "ann_trained": False, "saved": []}
    human = invoke("optimize")
    assert human.exit_code == 0 and "2 vectors indexed; exact search" in human.stdout


def test_optimize_refuses_a_missing_database(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke("optimize", db_path=tmp_path / "nope.db")
    assert result.exit_code == 2
    assert not (tmp_path / "nope.db").exists()


def test_ingest_builds_the_indexes_at_write_time(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reports: list[IndexReport] = []
    real = EpisodicMemory.optimize

    def spy(memory: EpisodicMemory) -> IndexReport:
        reports.append(real(memory))
        return reports[-1]

    monkeypatch.setattr(EpisodicMemory, "optimize", spy)
    source = tmp_path / "in.jsonl"
    source.write_text(
        "".join(json.dumps({"event_type": "note", "content": f"episode {i}"}) + "\n" for i in range(5))
    )
    assert invoke("ingest", str(source)).exit_code == 0
    assert [r.vectors for r in reports] == [5]  # once, after the last batch
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert invoke("ingest", str(empty)).exit_code == 0
    assert len(reports) == 1  # nothing stored, nothing to build
