"""Reading OpenAI-format records and LoCoMo for import, and the session-level LoCoMo scorer (no real data)."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memlane import ValidationError
from memlane.embeddings.fake import HashingEmbedder
from memlane.evaluation.locomo import parse_locomo
from memlane.evaluation.locomo_sessions import (
    KS,
    RANDOM_BASELINE,
    TURNS_BASELINE,
    evidence_sessions,
    random_hit_at_k,
    report_to_markdown,
    run_locomo_sessions,
    score_sessions,
)
from memlane.sessions.importing import detect_format, locomo_records, parse_record, read_records
from tests.unit.test_locomo_loader import make_sample

RECORD = {
    "session_id": "s-1",
    "agent_id": "support",
    "started_at": "2026-05-25T09:00:00Z",
    "metadata": {"channel": "web"},
    "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
}


def test_parse_record_reads_every_field() -> None:
    record = parse_record(RECORD)
    assert record.session_id == "s-1" and record.agent_id == "support" and record.user_id is None
    assert record.started_at == datetime(2026, 5, 25, 9, tzinfo=UTC) and record.ended_at is None
    assert record.metadata == {"channel": "web"} and len(record.messages) == 2


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"sesion_id": "x"}, "unknown field"),
        ({"session_id": None}, "session_id is required"),
        ({"messages": "hi"}, "messages is required"),
        ({"started_at": "yesterday"}, "not ISO 8601"),
        ({"started_at": "2026-05-25T09:00:00"}, "no timezone"),
        ({"metadata": [1]}, "metadata must be an object"),
        ({"user_id": 7}, "user_id must be a string"),
    ],
)
def test_parse_record_refuses_bad_records(change: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        parse_record({**RECORD, **change})
    with pytest.raises(ValidationError, match="JSON object"):
        parse_record([RECORD])


def test_read_records_in_every_format_with_positions(tmp_path: Path) -> None:
    array = tmp_path / "a.json"
    array.write_text(json.dumps([RECORD, {"bad": 1}, {**RECORD, "session_id": "s-2"}]), encoding="utf-8")
    fmt, items = read_records(array)
    assert fmt == "json"
    assert [(i.position, i.record is not None) for i in items] == [
        ("record 1", True),
        ("record 2", False),
        ("record 3", True),
    ]
    single = tmp_path / "one.json"
    single.write_text(json.dumps(RECORD), encoding="utf-8")
    assert [i.position for i in read_records(single)[1]] == ["record 1"]
    lines = tmp_path / "b.jsonl"
    lines.write_text(
        json.dumps(RECORD) + "\n\n{not json\n" + json.dumps({**RECORD, "x": 1}) + "\n", encoding="utf-8"
    )
    fmt, items = read_records(lines)
    assert fmt == "jsonl"
    assert [(i.position, i.error is None) for i in items] == [
        ("line 1", True),
        ("line 3", False),
        ("line 4", False),
    ]
    assert "invalid JSON" in (items[1].error or "")
    with pytest.raises(ValidationError, match="not LoCoMo"):
        read_records(array, "locomo")


def test_locomo_sessions_map_speakers_and_dates(tmp_path: Path) -> None:
    conversations, _ = parse_locomo([make_sample()])
    records = locomo_records(conversations[0])
    assert [r.session_id for r in records] == [
        "conv-x/session_1",
        "conv-x/session_2",
    ]  # session 3 has no turns
    first = records[0]
    assert first.user_id == "conv-x" and first.agent_id is None
    assert first.started_at == first.ended_at == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert first.messages == [
        {"role": "user", "name": "Ann", "content": "Hi Bob!"},
        {"role": "assistant", "name": "Bob", "content": "Look at my new bike."},
        {"role": "user", "name": "Ann", "content": "Nice."},
    ]
    assert first.metadata == {
        "source": "locomo",
        "sample_id": "conv-x",
        "session": 1,
        "dia_ids": ["D1:1", "D1:2", "D1:3"],
    }
    path = tmp_path / "locomo.json"
    broken = make_sample(sample_id="conv-bad")
    broken["conversation"]["session_1_date_time"] = "someday"
    path.write_text(json.dumps([make_sample(), broken]), encoding="utf-8")
    assert detect_format(path)[0] == "locomo"
    fmt, items = read_records(path)
    assert fmt == "locomo"
    assert [i.position for i in items] == [
        "sample 1 (conv-x) session_1",
        "sample 1 (conv-x) session_2",
        "sample 2 (conv-bad)",
    ]
    assert items[2].record is None and "timestamp" in (items[2].error or "")


def test_score_sessions_and_random_baseline() -> None:
    assert evidence_sessions(("D3:7", "D3:9", "D12:1")) == frozenset({3, 12})
    score = score_sessions(1, [5, 5, 3, 9, 12], frozenset({3, 12}))
    assert score.hits == {1: 0.0, 3: 1.0, 5: 1.0, 10: 1.0}
    assert score.recall_at_5 == 1.0  # distinct sessions: 5, 3, 9, 12
    assert score.reciprocal_rank == 0.5
    miss = score_sessions(2, [1, 2], frozenset({3}))
    assert miss.hits == dict.fromkeys(KS, 0.0) and miss.reciprocal_rank == 0.0
    with pytest.raises(ValueError):
        score_sessions(1, [1], frozenset())
    assert random_hit_at_k(20, 1, 5) == pytest.approx(0.25)
    assert random_hit_at_k(20, 2, 1) == pytest.approx(0.1)
    assert random_hit_at_k(3, 1, 10) == 1.0


def test_run_locomo_sessions_end_to_end(tmp_path: Path) -> None:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([make_sample(), make_sample(sample_id="conv-y")]), encoding="utf-8")
    turn_results = tmp_path / "locomo.json.turns"
    turn_results.write_text(
        json.dumps(
            {
                "meta": {"date": "2026-01-01"},
                "configurations": [
                    {"name": "x", "all": {"overall": {"recall_at_10": 0.4, "hit_at_10": 0.5}}}
                ],
            }
        ),
        encoding="utf-8",
    )
    seen: list[tuple[str, int, int]] = []
    report = run_locomo_sessions(
        path,
        embedder=HashingEmbedder(),
        workdir=tmp_path,
        configurations={"rel": "relevance_only"},
        turn_results=turn_results,
        progress=lambda *a: seen.append(a),
    )
    assert report.sessions == 4 and report.conversations == 2 and report.questions == 4
    assert report.windows == 8  # per conversation: session 1 = 2 turns (Ann+Bob, Ann); session 2 = Bob, Ann
    assert [r.name for r in report.results] == ["rel", TURNS_BASELINE, RANDOM_BASELINE]
    rel = report.results[0].overall
    assert rel.hit[10] == 1.0 and 0 < rel.mrr <= 1  # two sessions only: always in the top 10
    random = report.results[-1].overall
    assert random.hit[1] == pytest.approx(0.75) and math.isnan(
        random.mrr
    )  # 1/2, 1/2, 1 (both sessions), 1/2 ...
    assert ("ask", 4, 4) in seen and ("store sessions", 4, 4) in seen
    doc = report.to_dict()
    json.dumps(doc)
    assert doc["configurations"][-1]["overall"]["mrr"] is None
    assert doc["turn_level_quoted"]["configurations"] == {"x": {"recall_at_10": 0.4, "hit_at_10": 0.5}}
    markdown = report_to_markdown(report)
    assert "| rel |" in markdown and "Hit@10" in markdown and "| x | 0.400 | 0.500 |" in markdown
