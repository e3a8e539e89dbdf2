"""``memlane history`` and ``recall --as-of/--known-at`` over a superseded fact (ingested as JSONL)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.conftest import Invoke

PARIS = {
    "id": "paris",
    "event_type": "fact",
    "content": "User lives in Paris",
    "created_at": "2025-01-01T00:00:00+00:00",
    "valid_until": "2025-06-01T00:00:00+00:00",
    "recorded_at": "2025-01-01T00:00:00+00:00",
    "invalidated_at": "2025-06-02T00:00:00+00:00",
    "superseded_by": "lisbon",
    "supersede_reason": "user moved",
}
LISBON = {
    "id": "lisbon",
    "event_type": "fact",
    "content": "User lives in Lisbon",
    "created_at": "2025-06-01T00:00:00+00:00",
    "recorded_at": "2025-06-02T00:00:00+00:00",
}


def _ingest(invoke: Invoke, tmp_path: Path) -> None:
    source = tmp_path / "moved.jsonl"
    source.write_text("".join(json.dumps(x) + "\n" for x in (PARIS, LISBON)), encoding="utf-8")
    assert invoke("ingest", str(source)).exit_code == 0


def test_history_shows_the_chain(invoke: Invoke, tmp_path: Path) -> None:
    _ingest(invoke, tmp_path)
    result = invoke("history", "lisbon", global_opts=["--json"])
    assert result.exit_code == 0, result.output
    chain = json.loads(result.stdout)
    assert [ep["id"] for ep in chain] == ["paris", "lisbon"]
    assert chain[0]["supersede_reason"] == "user moved"
    table = invoke("history", "paris")
    assert table.exit_code == 0 and "user moved" in table.stdout
    missing = invoke("history", "nope")
    assert missing.exit_code == 2 and "nope" in missing.stderr


def test_recall_as_of_and_known_at(invoke: Invoke, tmp_path: Path) -> None:
    _ingest(invoke, tmp_path)

    def contents(*args: str) -> list[str]:
        result = invoke("recall", *args, global_opts=["--json"])
        assert result.exit_code == 0, result.output
        return [hit["content"] for hit in json.loads(result.stdout)]

    assert contents() == ["User lives in Lisbon"]
    assert contents("--as-of", "2025-03-01T00:00:00Z") == ["User lives in Paris"]
    assert contents("where does the user live", "--as-of", "2025-03-01T00:00:00Z") == ["User lives in Paris"]
    assert contents("--known-at", "2025-06-01T12:00:00Z") == ["User lives in Paris"]


def test_forget_dry_run_then_archive(invoke: Invoke, tmp_path: Path) -> None:
    source = tmp_path / "old.jsonl"
    rows = [
        {
            "event_type": "note",
            "content": "trivial note",
            "importance": 2,
            "created_at": "2025-01-01T00:00:00Z",
        },
        {
            "event_type": "note",
            "content": "vital fact",
            "importance": 10,
            "created_at": "2025-01-01T00:00:00Z",
        },
    ]
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert invoke("ingest", str(source)).exit_code == 0
    now = "2025-01-11T00:00:00Z"
    dry = invoke("forget", "--dry-run", "--now", now, global_opts=["--json"])
    assert dry.exit_code == 0, dry.output
    report = json.loads(dry.stdout)
    assert (report["dry_run"], report["count"], report["action"]) == (True, 1, "archive")
    assert report["episodes"][0]["content"] == "trivial note"
    assert len(json.loads(invoke("recall", global_opts=["--json"]).stdout)) == 2  # nothing changed
    off = invoke("forget", "--now", now)  # forgetting is off by default: nothing happens without --force
    assert off.exit_code == 2 and "forgetting is off" in off.stderr
    assert len(json.loads(invoke("recall", global_opts=["--json"]).stdout)) == 2
    done = invoke("forget", "--now", now, "--force")
    assert done.exit_code == 0 and "1 episode(s) archived" in done.stdout
    assert [h["content"] for h in json.loads(invoke("recall", global_opts=["--json"]).stdout)] == [
        "vital fact"
    ]


def test_export_ingest_export_keeps_history_byte_identical(invoke: Invoke, tmp_path: Path) -> None:
    _ingest(invoke, tmp_path)
    first = invoke("export")
    assert first.exit_code == 0
    again = tmp_path / "again.jsonl"
    again.write_bytes(first.stdout_bytes)
    second_db = tmp_path / "second.db"
    assert invoke("ingest", str(again), db_path=second_db).exit_code == 0
    second = invoke("export", db_path=second_db)
    assert second.stdout_bytes == first.stdout_bytes
    rows = [json.loads(x) for x in first.stdout.splitlines()]
    assert rows[0]["superseded_by"] == "lisbon" and rows[0]["invalidated_at"] == "2025-06-02T00:00:00+00:00"


def test_compact_dry_run_then_merge(invoke: Invoke, tmp_path: Path) -> None:
    source = tmp_path / "dupes.jsonl"
    rows = [
        {"event_type": "pref", "content": "User prefers window seats", "importance": 5},
        {"event_type": "pref", "content": "user prefers window seats!", "importance": 9},
        {"event_type": "pref", "content": "deploy failed on staging"},
    ]
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert invoke("ingest", str(source)).exit_code == 0
    dry = invoke("compact", "--dry-run", global_opts=["--json"])
    assert dry.exit_code == 0, dry.output
    report = json.loads(dry.stdout)
    assert (report["dry_run"], report["active_before"], report["active_after"]) == (True, 3, 2)
    assert len(json.loads(invoke("recall", global_opts=["--json"]).stdout)) == 3  # nothing changed
    done = invoke("compact", "--similarity", "0.9")
    assert done.exit_code == 0, done.output
    assert "2 episode(s) were merged into 1" in done.stdout
    contents = sorted(h["content"] for h in json.loads(invoke("recall", global_opts=["--json"]).stdout))
    assert contents == ["deploy failed on staging", "user prefers window seats!"]


def test_remember_supersedes_from_the_command_line(invoke: Invoke) -> None:
    first = invoke(
        "remember",
        "fact",
        "User lives in Paris",
        "--created-at",
        "2024-03-01T00:00:00Z",
        global_opts=["--json"],
    )
    assert first.exit_code == 0, first.output
    old_id = json.loads(first.stdout)["id"]
    second = invoke(
        "remember",
        "fact",
        "User lives in Lisbon",
        "--valid-from",
        "2025-06-01T00:00:00Z",
        "--supersedes",
        old_id,
        global_opts=["--json"],
    )
    assert second.exit_code == 0, second.output
    new = json.loads(second.stdout)
    chain = json.loads(invoke("history", new["id"], global_opts=["--json"]).stdout)
    assert [ep["content"] for ep in chain] == ["User lives in Paris", "User lives in Lisbon"]
    assert chain[0]["valid_until"] == new["valid_from"] == "2025-06-01T00:00:00+00:00"
    missing = invoke("remember", "fact", "x", "--supersedes", "nope")
    assert missing.exit_code == 2 and "nope" in missing.stderr
    exported = invoke("export").stdout.splitlines()
    assert len(exported) == 2  # the refused line stored nothing
