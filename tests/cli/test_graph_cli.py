"""``memlane facts ...`` and ``memlane graph check`` through the real CLI over a real SQLite file."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.conftest import Invoke


def _json(invoke: Invoke, *args: str) -> object:
    result = invoke(*args, global_opts=["--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_facts_add_query_timeline_and_walks(invoke: Invoke) -> None:
    first = _json(
        invoke,
        "facts",
        "add",
        "team",
        "uses_database",
        "--value",
        "MySQL",
        "--valid-from",
        "2024-01-01T00:00:00Z",
    )
    second = _json(invoke, "facts", "add", "team", "migrated to", "--value", "PostgreSQL")
    assert isinstance(first, dict) and isinstance(second, dict)
    assert [f["id"] for f in second["superseded"]] == [first["fact"]["id"]]
    current = _json(invoke, "facts", "query", "team")
    assert [f["value"] for f in current] == ["PostgreSQL"]  # type: ignore[union-attr]
    then = _json(invoke, "facts", "query", "team", "--as-of", "2024-06-01T00:00:00Z")
    assert [f["value"] for f in then] == ["MySQL"]  # type: ignore[union-attr]
    history = _json(invoke, "facts", "timeline", "Team")
    assert [f["value"] for f in history] == ["MySQL", "PostgreSQL"]  # type: ignore[union-attr]
    invoke("facts", "add", "me", "introduced_to", "Alice")
    invoke("facts", "add", "Alice", "introduced_me_to", "Bob")
    paths = _json(invoke, "facts", "paths", "me", "bob")
    assert [[f["object"] for f in p] for p in paths] == [["alice", "bob"]]  # type: ignore[union-attr]
    near = _json(invoke, "facts", "neighbours", "alice")
    assert {n["entity"]["id"] for n in near} == {"alice", "me", "bob"}  # type: ignore[union-attr]
    table = invoke("facts", "timeline", "team")
    assert table.exit_code == 0 and "single" in table.stdout


def test_bad_options_are_refused_with_the_declared_message(invoke: Invoke) -> None:
    result = invoke("facts", "add", "u", "likes", "x", "--confidence", "1.5")
    assert result.exit_code == 2 and "confidence" in result.output


def test_graph_check_exits_non_zero_past_the_seed_limits(invoke: Invoke) -> None:
    invoke("facts", "add", "ana", "works_at", "Acme")
    healthy = invoke("graph", "check")
    assert healthy.exit_code == 0, healthy.output
    invoke("facts", "add", "ana", "works_at", "Globex", "--confidence", "0.3")  # two current employers
    sick = invoke("graph", "check", global_opts=["--json"])
    assert sick.exit_code == 1
    report = json.loads(sick.stdout)
    assert report["contradictory"] == 2 and report["below_confidence"] == 1 and report["problems"]


def test_facts_export_and_import_round_trip(invoke: Invoke, tmp_path: Path) -> None:
    invoke("facts", "add", "ana", "lives_in", "Berlin", "--valid-from", "2020-01-01T00:00:00Z")
    invoke("facts", "add", "ana", "lives_in", "Lisbon")
    exported = invoke("facts", "export")
    assert exported.exit_code == 0
    lines = [json.loads(line) for line in exported.stdout.splitlines()]
    assert [(r["object_name"], r["supersede_reason"] is not None) for r in lines] == [
        ("Berlin", True),
        ("Lisbon", False),
    ]
    dump = tmp_path / "facts.jsonl"
    dump.write_text(exported.stdout + "not json\n", encoding="utf-8")
    other = tmp_path / "other.db"
    first = invoke("facts", "import", str(dump), db_path=other, global_opts=["--json"])
    assert first.exit_code == 1  # the bad line is reported, the good ones stored
    assert json.loads(first.stdout)["stored"] == 2
    again = invoke("facts", "import", str(dump), db_path=other, global_opts=["--json"])
    assert json.loads(again.stdout)["skipped"] == 2
    restored = invoke("facts", "export", db_path=other)
    assert [json.loads(line) for line in restored.stdout.splitlines()] == lines


def test_the_context_block_holds_the_named_entitys_facts_unless_no_facts(invoke: Invoke) -> None:
    invoke("facts", "add", "Ana", "lives_in", "Lisbon")
    block = _json(invoke, "context", "Where does Ana live?", "--budget", "300", "--min-relevance", "0")
    assert isinstance(block, dict) and [i["kind"] for i in block["items"]] == ["facts"]
    assert 'Facts "Ana"' in block["text"] and "Ana lives in Lisbon (since " in block["text"]
    off = _json(
        invoke, "context", "Where does Ana live?", "--budget", "300", "--min-relevance", "0", "--no-facts"
    )
    assert isinstance(off, dict) and off["items"] == []
