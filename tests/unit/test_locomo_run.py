"""The LoCoMo runner end to end on a small synthetic LoCoMo-shaped file (no real data)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memlane.cli import cli
from memlane.embeddings.fake import HashingEmbedder
from memlane.evaluation.locomo_run import DEFAULT_CONFIGURATIONS, MemoEmbedder, report_to_markdown, run_locomo
from tests.unit.test_locomo_loader import make_sample


@pytest.fixture
def locomo_file(tmp_path: Path) -> Path:
    second = make_sample(sample_id="conv-y")
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([make_sample(), second]), encoding="utf-8")
    return path


def test_run_scores_every_question_per_configuration(locomo_file: Path, tmp_path: Path) -> None:
    seen: list[tuple[str, int, int]] = []
    report = run_locomo(
        locomo_file,
        embedder=HashingEmbedder(),
        workdir=tmp_path,
        configurations={"rel": "relevance_only", "bal": "balanced"},
        progress=lambda stage, done, total: seen.append((stage, done, total)),
    )
    # Per conversation: categories 1-4 with evidence = 2 questions (cat 4 and cat 2); cat 3 has none.
    assert report.questions == 4
    assert report.skipped_without_evidence == 2
    assert report.turns == 10 and report.conversations == 2
    assert [r.name for r in report.results] == ["rel", "bal"]
    rel = report.results[0].all
    assert set(rel.by_category) == {2, 4}
    # Only 5 turns per conversation: every evidence turn is within the top 10.
    assert rel.overall.recall_at_10 == 1.0
    assert 0.0 < rel.overall.ndcg_at_10 <= 1.0
    assert seen[-1] == ("recall", 4, 4)
    assert ("remember", 10, 10) in seen
    assert report.recall_ms_p95 >= report.recall_ms_p50 > 0
    doc = report.to_dict()
    json.dumps(doc)  # serialisable
    assert doc["configurations"][1]["weights"] == {"relevance": 1.0, "recency": 1.0, "importance": 1.0}
    md = report_to_markdown(report)
    assert "| rel |" in md and "R@10" in md


def test_held_out_split_is_reported_separately(tmp_path: Path) -> None:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([make_sample(sample_id=f"c{i}") for i in range(7)]), encoding="utf-8")
    report = run_locomo(
        path, embedder=HashingEmbedder(), workdir=tmp_path, configurations={"r": "relevance_only"}
    )
    splits = report.results[0].splits
    assert list(splits) == ["tune (0-4)", "held-out (5-9)"]
    assert splits["tune (0-4)"].overall.count == 10 and splits["held-out (5-9)"].overall.count == 4


def test_memo_embedder_embeds_each_text_once() -> None:
    inner = HashingEmbedder()
    memo = MemoEmbedder(inner)
    first = memo.embed(["a b", "c", "a b"])
    again = memo.embed(["c", "a b"])
    assert inner.calls == 1
    assert (first[1] == again[0]).all() and (first[0] == first[2]).all()
    assert memo.embed([]).shape == (0, inner.dims)


def test_cli_writes_json_and_markdown(locomo_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "results"
    result = CliRunner().invoke(
        cli,
        [
            "--embedder",
            "hashing",
            "--json",
            "eval",
            "locomo",
            str(locomo_file),
            "--out-dir",
            str(out),
            "--preset",
            "balanced",
            "--conversations",
            "0-1",
        ],
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["questions"] == 4 and [c["name"] for c in doc["configurations"]] == ["balanced"]
    assert json.loads((out / "locomo.json").read_text()) == doc
    assert "balanced" in (out / "locomo.md").read_text()


def test_cli_reports_missing_data(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["--embedder", "hashing", "eval", "locomo", str(tmp_path / "nope.json")])
    assert result.exit_code == 2
    assert "not found" in result.output


def test_defaults_are_compared_with_dense_and_keyword_by_paired_bootstrap(
    locomo_file: Path, tmp_path: Path
) -> None:
    names = ("library defaults", "dense", "keyword")
    report = run_locomo(
        locomo_file,
        embedder=HashingEmbedder(),
        workdir=tmp_path,
        configurations={n: DEFAULT_CONFIGURATIONS[n] for n in names},
    )
    differences = report.paired_differences()
    assert list(differences) == ["library defaults - dense", "library defaults - keyword"]
    for d in differences.values():
        assert d.questions == report.questions and d.low <= d.mean <= d.high
    assert set(report.to_dict()["paired_differences_r_at_10"]) == set(differences)
    assert "| library defaults - dense |" in report_to_markdown(report)


def test_a_run_without_the_held_out_conversations_says_so(tmp_path: Path) -> None:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([make_sample(sample_id=f"c{i}") for i in range(7)]), encoding="utf-8")
    partial = run_locomo(
        path,
        embedder=HashingEmbedder(),
        workdir=tmp_path,
        configurations={"r": "relevance_only"},
        conversations=[0],
    )
    md = report_to_markdown(partial)
    assert "this run evaluated none of the held-out conversations 5-9" in md
    assert "looked at" not in md and "not of this one (conversations 0)" in md
    full = run_locomo(
        path, embedder=HashingEmbedder(), workdir=tmp_path / "b", configurations={"r": "relevance_only"}
    )
    assert "were looked at" in report_to_markdown(full) and "(conversations 0-6)" in report_to_markdown(full)
