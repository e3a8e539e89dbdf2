"""The BEAM harness end to end on tiny synthetic conversations in its format (written here, no real data)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memlane.cli import cli
from memlane.embeddings.fake import HashingEmbedder
from memlane.evaluation.beam import beam_report_to_markdown, load_beam, run_beam
from memlane.evaluation.bootstrap import paired_bootstrap

TOPICS = (
    "tomato garden watering",
    "python type hints black",
    "flight window seat",
    "sourdough starter flour",
)


def _write(root: Path, n: int) -> None:
    """Conversation ``n``: two batches, one user/assistant exchange per topic and then some."""
    batches = []
    next_id = 0
    for b, anchor in enumerate(("March-15-2024", None)):
        turns = []
        for k, topic in enumerate(TOPICS):
            user = {"role": "user", "id": next_id, "content": f"tell me about {topic} ->-> {b + 1},{k + 1}"}
            if k == 0 and anchor:
                user["time_anchor"] = anchor
            reply = {
                "role": "assistant",
                "id": next_id + 1,
                "content": f"here is advice on {topic} number {n}",
            }
            turns.append([user, reply])
            next_id += 2
        batches.append({"batch_number": b + 1, "time_anchor": None, "turns": turns})
    questions = {
        "information_extraction": [
            {"question": "how often to water the tomato garden", "source_chat_ids": [0, 1]}
        ],
        "knowledge_update": [
            {
                "question": "which flight seat do I want",
                "source_chat_ids": {"original_info": [4], "updated_info": [12, 999]},
            }
        ],
        "abstention": [{"question": "what is my cat called"}],
        "summarization": [{"question": "summarise", "source_chat_ids": []}],
    }
    folder = root / str(n)
    folder.mkdir(parents=True)
    (folder / "chat.json").write_text(json.dumps(batches), encoding="utf-8")
    (folder / "probing_questions.json").write_text(json.dumps(questions), encoding="utf-8")


@pytest.fixture
def beam_root(tmp_path: Path) -> Path:
    root = tmp_path / "100K"
    for n in (1, 2, 3):
        _write(root, n)
    return root


def test_loader_dates_markers_and_evidence(beam_root: Path) -> None:
    (conv,) = load_beam(beam_root, [1])
    assert len(conv.messages) == 16
    first, second_batch = conv.messages[0], conv.messages[8]
    assert first.content == "tell me about tomato garden watering"  # the ->-> marker is gone
    assert first.created_at.isoformat() == "2024-03-15T09:00:00+00:00"
    assert conv.messages[1].created_at.isoformat() == "2024-03-15T09:01:00+00:00"
    assert second_batch.created_at.isoformat() == "2024-03-16T09:00:00+00:00"  # undated: the next day
    evidence = {q.type: q.evidence for q in conv.questions}
    assert evidence == {
        "information_extraction": (0, 1),
        "knowledge_update": (4, 12),  # flattened, the absent id 999 dropped
        "abstention": (),
        "summarization": (),
    }


def test_run_scores_each_question_per_configuration(beam_root: Path, tmp_path: Path) -> None:
    seen: list[tuple[str, int, int]] = []
    report = run_beam(
        beam_root,
        embedder=HashingEmbedder(),
        workdir=tmp_path,
        progress=lambda stage, done, total: seen.append((stage, done, total)),
    )
    assert report.messages == 48 and list(report.conversations) == ["1", "2", "3"]
    assert len(report.rows) == 6 and report.abstentions == 6  # abstention and empty evidence are counted
    assert report.headline == "library defaults"
    assert report.types() == ["information_extraction", "knowledge_update"]
    assert (
        report.mean("dense", 10, "information_extraction") == 1.0
    )  # 16 messages: both evidence in the top 10
    assert ("remember", 3, 3) in seen and seen[-1] == ("recall", 6, 6)
    doc = report.to_dict()
    json.dumps(doc)
    assert set(doc["paired_differences"]) == {
        "library defaults - dense",
        "library defaults - keyword",
        "library defaults - plain dense",
    }
    assert "| library defaults |" in beam_report_to_markdown(report)


def test_paired_bootstrap_resamples_conversations() -> None:
    # Conversation "a" gains 1 on both questions, "b" loses 1 on its one question: mean 1/3.
    d = paired_bootstrap([1.0, 1.0, 0.0], [0.0, 0.0, 1.0], ["a", "a", "b"], resamples=2000)
    assert d.mean == pytest.approx(1 / 3) and (d.better, d.worse, d.questions) == (2, 1, 3)
    assert d.low == pytest.approx(-1.0) and d.high == pytest.approx(1.0)  # all-b and all-a resamples occur
    assert not d.excludes_zero
    same = paired_bootstrap([0.5, 0.7], [0.2, 0.4], [1, 2])
    assert same.low == pytest.approx(0.3) and same.high == pytest.approx(0.3) and same.excludes_zero
    with pytest.raises(ValueError):
        paired_bootstrap([], [], [])


def test_cli_writes_beam_json_and_md(beam_root: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = f"--embedder hashing eval beam {beam_root} --conversations 1-2 --out {out}".split()
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    doc = json.loads((out / "beam.json").read_text("utf-8"))
    assert doc["questions"] == 4 and doc["configurations"][0]["name"] == "library defaults"
    assert (out / "beam.md").read_text("utf-8").startswith("BEAM 100K")
