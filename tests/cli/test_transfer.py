"""ingest / export through the real CLI over real SQLite files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memlane import EpisodicMemory
from memlane.embeddings.fake import HashingEmbedder
from tests.cli.conftest import Invoke

GOOD = [
    {
        "event_type": "preference",
        "content": "User prefers window seats",
        "tags": ["Travel"],
        "importance": 7,
        "created_at": "2025-01-01T09:00:00+00:00",
        "metadata": {"source": "chat", "nested": {"b": 1, "a": [1, 2]}},
    },
    {
        "event_type": "note",
        "content": "Ünïcødé content — 東京 ✈",
        "created_at": "2025-01-02T09:00:00.123456+02:00",
    },
    {
        "event_type": "booking_failed",
        "content": "BK-4471 failed: card declined",
        "tags": "payment",
        "importance": None,
        "id": "fixed-id-1",
    },
    {
        "event_type": "note",
        "content": "from another session",
        "session_id": "s2",
        "created_at": "2025-01-03T00:00:00Z",
    },
]


def _lines(*objects: object) -> list[str]:
    return [o if isinstance(o, str) else json.dumps(o, ensure_ascii=False) for o in objects]


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_ingest_all_good_lines(invoke: Invoke, tmp_path: Path) -> None:
    source = _write(tmp_path / "in.jsonl", [*_lines(*GOOD), "", "   "])  # blank lines are skipped
    result = invoke("ingest", str(source))
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "4 stored, 0 rejected"
    assert result.stderr == ""
    exported = invoke("export", global_opts=["--scope", "tenant"])
    rows = [json.loads(line) for line in exported.stdout.splitlines()]
    assert [r["content"] for r in rows] == [g["content"] for g in GOOD[:2]] + [
        GOOD[3]["content"],
        GOOD[2]["content"],
    ]
    by_content = {r["content"]: r for r in rows}
    assert by_content["User prefers window seats"]["tags"] == ["travel"]
    assert by_content["User prefers window seats"]["importance"] == 7.0
    assert by_content["Ünïcødé content — 東京 ✈"]["created_at"] == "2025-01-02T07:00:00.123456+00:00"
    assert by_content["BK-4471 failed: card declined"]["id"] == "fixed-id-1"
    assert by_content["from another session"]["session_id"] == "s2"


def test_ingest_reports_bad_lines_and_keeps_good_ones(invoke: Invoke, tmp_path: Path) -> None:
    lines = _lines(
        GOOD[0],  # 1 ok
        "{not json",  # 2 invalid JSON
        {"event_type": "note"},  # 3 missing content
        {"event_type": "note", "content": "importance is text", "importance": "abc"},  # 4 validation
        {"event_type": "note", "content": "naive", "created_at": "2025-01-01T00:00:00"},  # 5 no timezone
        GOOD[1],  # 6 ok
        {"event_type": "note", "content": "typo", "improtance": 3},  # 7 unknown field
        GOOD[2],  # 8 ok (id fixed-id-1)
        {"event_type": "note", "content": "same id again", "id": "fixed-id-1"},  # 9 duplicate id
        "[1, 2]",  # 10 not an object
        {"event_type": "  ", "content": "blank type"},  # 11 validation
        GOOD[3],  # 12 ok
    )
    source = _write(tmp_path / "mixed.jsonl", lines)
    # batch size 3: batches containing a bad item are retried item by item.
    result = invoke("ingest", str(source), "--batch-size", "3")
    assert result.exit_code == 1, result.output
    assert result.stdout.strip() == "4 stored, 8 rejected"
    err = result.stderr
    for number, needle in [
        (2, "invalid JSON"),
        (3, "missing field(s): content"),
        (4, "importance"),
        (5, "timezone"),
        (7, "unknown field(s): improtance"),
        (9, "fixed-id-1"),
        (10, "expected a JSON object"),
        (11, "event_type"),
    ]:
        line = next((x for x in err.splitlines() if x.startswith(f"line {number}:")), None)
        assert line is not None, err
        assert needle in line, line
    assert "episode #" not in err
    for number in (1, 6, 8, 12):
        assert f"line {number}:" not in err
    exported = invoke("export", global_opts=["--scope", "tenant"])
    assert sorted(json.loads(x)["content"] for x in exported.stdout.splitlines()) == sorted(
        g["content"] for g in GOOD
    )


def test_ingest_json_summary_and_stdin(invoke: Invoke) -> None:
    data = "\n".join(_lines(GOOD[0], "oops")) + "\n"
    result = invoke("ingest", "-", global_opts=["--json"], input=data)
    assert result.exit_code == 1
    assert json.loads(result.stdout) == {
        "stored": 1,
        "rejected": 1,
        "skipped": 0,
        "interrupted": False,
        "errors": [{"line": 2, "error": "invalid JSON: Expecting value (column 1)"}],
    }


def test_ingest_missing_file_is_usage_error(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke("ingest", str(tmp_path / "nope.jsonl"))
    assert result.exit_code == 2
    assert "No such file" in result.stderr


def test_export_ingest_export_is_byte_identical(invoke: Invoke, tmp_path: Path) -> None:
    source = _write(tmp_path / "in.jsonl", _lines(*GOOD))
    first_db, second_db = tmp_path / "first.db", tmp_path / "second.db"
    assert invoke("ingest", str(source), db_path=first_db).exit_code == 0
    invoke("remember", "note", "tenant two", db_path=first_db, global_opts=["--tenant", "t2"])
    first = tmp_path / "first.jsonl"
    result = invoke("export", "--out", str(first), db_path=first_db, global_opts=["--scope", "global"])
    assert result.exit_code == 0, result.output
    assert "exported 5 episode(s)" in result.stderr
    ingested = invoke("ingest", str(first), db_path=second_db, global_opts=["--tenant", "ignored"])
    assert ingested.exit_code == 0, ingested.output
    second = invoke("export", db_path=second_db, global_opts=["--scope", "global"])
    assert second.exit_code == 0
    assert second.stdout_bytes == first.read_bytes()
    assert len(first.read_bytes().splitlines()) == 5
    # and the ids, tenants and sessions survived the trip
    rows = [json.loads(x) for x in first.read_text(encoding="utf-8").splitlines()]
    assert {(r["tenant_id"], r["session_id"]) for r in rows} == {
        ("default", "default"),
        ("default", "s2"),
        ("t2", "default"),
    }


def test_export_is_oldest_first_in_scope_and_filtered(invoke: Invoke) -> None:
    invoke("remember", "note", "second", "--created-at", "2025-02-01T00:00:00Z", "--tag", "x")
    invoke("remember", "note", "first", "--created-at", "2025-01-01T00:00:00Z")
    invoke("remember", "other", "third", "--created-at", "2025-03-01T00:00:00Z", "--tag", "x")
    invoke("remember", "note", "elsewhere", global_opts=["--session", "s9"])
    result = invoke("export")
    assert [json.loads(x)["content"] for x in result.stdout.splitlines()] == ["first", "second", "third"]
    tagged = invoke("export", "--tag", "X", "--event-type", "note")
    assert [json.loads(x)["content"] for x in tagged.stdout.splitlines()] == ["second"]


def test_export_json_summary(invoke: Invoke, tmp_path: Path) -> None:
    invoke("remember", "note", "hello")
    out = tmp_path / "out.jsonl"
    result = invoke("export", "--out", str(out), global_opts=["--json"])
    assert result.exit_code == 0
    assert json.loads(result.stdout) == {"exported": 1, "out": str(out)}
    assert len(out.read_text().splitlines()) == 1


def test_export_into_a_missing_directory_names_that_directory(invoke: Invoke, tmp_path: Path) -> None:
    invoke("remember", "note", "hello")
    result = invoke("export", "--out", str(tmp_path / "nowhere" / "out.jsonl"))
    assert result.exit_code == 2
    assert f"the directory {tmp_path / 'nowhere'} does not exist" in result.output
    assert "atomic" not in result.output  # not click's temporary file name
    assert not (tmp_path / "nowhere").exists()


def test_an_interrupted_ingest_reports_its_counts_and_a_rerun_stores_no_duplicates(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, db: Path
) -> None:
    from memlane.cli import transfer

    source = tmp_path / "many.jsonl"
    source.write_text(
        "".join(json.dumps({"event_type": "note", "content": f"note number {i}"}) + "\n" for i in range(200)),
        encoding="utf-8",
    )
    parse = transfer.parse_episode_line

    def interrupted(raw: bytes | str) -> Any:
        if b"note number 150" in (raw if isinstance(raw, bytes) else raw.encode()):
            raise KeyboardInterrupt  # Ctrl-C while the 3rd batch is being read
        return parse(raw)

    monkeypatch.setattr(transfer, "parse_episode_line", interrupted)
    first = invoke("ingest", str(source), "--batch-size", "64")
    assert first.exit_code == transfer.EXIT_INTERRUPTED == 130
    assert "interrupted: 128 stored, 0 rejected" in first.output and "rerun the same command" in first.output
    monkeypatch.setattr(transfer, "parse_episode_line", parse)
    again = invoke("--json", "ingest", str(source), "--batch-size", "64")
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout) | {"errors": []} == {
        "stored": 72,
        "rejected": 0,
        "skipped": 128,
        "interrupted": False,
        "errors": [],
    }
    with EpisodicMemory.open(db, embedder=HashingEmbedder()) as memory:
        contents = [e.content for e in memory.iter_episodes()]
    assert len(contents) == 200 and len(set(contents)) == 200
    third = invoke("ingest", str(source))
    assert third.exit_code == 0 and "0 stored, 0 rejected, 200 already stored" in third.output


def test_an_extreme_instant_is_a_rejected_line_not_a_crash(invoke: Invoke, tmp_path: Path) -> None:
    """Years are checked as written, before any conversion (0001-01-01T00:00+14:00 is year 0 in UTC)."""
    lines = _lines(
        GOOD[0],
        {"event_type": "note", "content": "far", "created_at": "9999-12-31T23:59:59-14:00"},
        {"event_type": "note", "content": "early", "created_at": "0001-01-01T00:00:00+14:00"},
        {"event_type": "note", "content": "edge", "created_at": "2999-12-31T23:59:59-14:00"},  # as Python
    )
    result = invoke("ingest", str(_write(tmp_path / "extreme.jsonl", lines)))
    assert result.exit_code == 1, result.output
    assert result.stdout.strip() == "2 stored, 2 rejected"
    assert "line 2: created_at: the time must be in the years 1000-2999" in result.stderr
    assert "line 3: created_at: the time must be in the years 1000-2999" in result.stderr
    flag = invoke("remember", "note", "x", "--created-at", "0001-01-01T00:00:00+14:00")
    assert flag.exit_code == 2 and "years 1000-2999" in flag.output and "Traceback" not in flag.output
