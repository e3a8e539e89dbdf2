"""``memlane sessions import|recent|search|show``, ``memlane context`` and ``eval locomo --unit session``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from memlane.cli import cli
from memlane.sessions.context import NOTHING_RELEVANT_BLOCK
from memlane.sessions.tokens import ToktokCounter
from tests.cli.conftest import Invoke
from tests.unit.test_locomo_loader import make_sample

TOOL_MESSAGES: list[dict[str, Any]] = [
    {"role": "user", "content": "Please onboard Acme Corp as a vendor."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "submit_vendor", "arguments": '{"name":  "Acme"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "submitted"},
    {"role": "assistant", "content": "The vendor onboarding was submitted on Monday."},
]
RECORDS: list[Any] = [
    {"session_id": "s-1", "user_id": "dana", "started_at": "2026-05-25T09:00:00Z", "messages": TOOL_MESSAGES},
    {"session_id": "bad", "messages": [{"role": "tool", "content": "no id"}]},
    {
        "session_id": "s-2",
        "user_id": "dana",
        "started_at": "2026-05-26T09:00:00Z",
        "messages": [
            {"role": "user", "content": "Book a window seat to Rome"},
            {"role": "assistant", "content": "Booked."},
        ],
    },
    ["not", "a", "record"],
]


def _import(invoke: Invoke, path: Path, *extra: str, json_out: bool = True) -> Any:
    result = invoke("sessions", "import", str(path), *extra, global_opts=["--json"] if json_out else [])
    return result


def test_import_keeps_good_records_and_reports_bad_ones_with_their_position(
    invoke: Invoke, tmp_path: Path
) -> None:
    path = tmp_path / "sessions.json"
    path.write_text(json.dumps(RECORDS), encoding="utf-8")
    result = _import(invoke, path, json_out=False)
    assert result.exit_code == 1
    assert result.stdout.splitlines()[0] == "2 session(s) stored, 2 rejected (json)"
    assert "record 2:" in result.stderr and "messages[0].tool_call_id is required" in result.stderr
    assert "record 4:" in result.stderr
    shown = invoke("sessions", "show", "s-1", global_opts=["--json"])
    assert shown.exit_code == 0, shown.output
    document = json.loads(shown.stdout)
    assert document["messages"] == TOOL_MESSAGES  # tool calls intact
    assert json.dumps(document["messages"]) == json.dumps(TOOL_MESSAGES)
    assert (document["agent_id"], document["user_id"]) == ("default", "dana")
    again = _import(invoke, path)
    data = json.loads(again.stdout)
    assert again.exit_code == 1 and data["stored"] == 0 and data["rejected"] == 4
    assert "already exists" in data["errors"][0]["error"] and data["errors"][0]["position"] == "record 1"
    appended = _import(invoke, path, "--append")
    assert json.loads(appended.stdout)["stored"] == 2
    assert len(json.loads(invoke("sessions", "show", "s-1", global_opts=["--json"]).stdout)["messages"]) == 8


def test_import_jsonl_with_agent_and_user_defaults(invoke: Invoke, tmp_path: Path) -> None:
    path = tmp_path / "sessions.jsonl"
    rows = [{"session_id": f"j{i}", "messages": [{"role": "user", "content": f"note {i}"}]} for i in range(3)]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    result = _import(invoke, path, "--agent", "bot", "--user", "kim")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {
        "format": "jsonl",
        "stored": 3,
        "rejected": 0,
        "owners": [{"agent_id": "bot", "user_id": "kim", "sessions": 3}],
        "errors": [],
    }
    recent = invoke("sessions", "recent", "--agent", "bot", "--user", "kim", global_opts=["--json"])
    assert [s["session_id"] for s in json.loads(recent.stdout)] == ["j2", "j1", "j0"]


def test_import_locomo(invoke: Invoke, tmp_path: Path) -> None:
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps([make_sample()]), encoding="utf-8")
    result = _import(invoke, path)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["format"] == "locomo"
    recent = json.loads(invoke("sessions", "recent", "--user", "conv-x", global_opts=["--json"]).stdout)
    assert [(s["session_id"], s["started_at"]) for s in recent] == [
        ("conv-x/session_2", "2023-06-27T10:37:00+00:00"),
        ("conv-x/session_1", "2023-05-08T13:56:00+00:00"),
    ]
    found = json.loads(
        invoke("sessions", "search", "bike", "--user", "conv-x", global_opts=["--json"]).stdout
    )
    assert found[0]["session_id"] == "conv-x/session_1"
    assert {"role": "assistant", "name": "Bob", "content": "Look at my new bike."} in found[0]["messages"]


def test_recent_search_and_show_for_people(invoke: Invoke, tmp_path: Path) -> None:
    path = tmp_path / "sessions.json"
    path.write_text(json.dumps([RECORDS[0], RECORDS[2]]), encoding="utf-8")
    assert _import(invoke, path).exit_code == 0
    recent = invoke("sessions", "recent", "--user", "dana")
    assert recent.exit_code == 0 and "s-2" in recent.stdout and "s-1" in recent.stdout
    assert recent.stdout.index("s-2") < recent.stdout.index("s-1")
    search = invoke(
        "sessions", "search", "vendor onboarding", "--user", "dana", "--now", "2026-06-01T00:00:00Z"
    )
    assert search.exit_code == 0 and "s-1" in search.stdout and "score" in search.stdout
    js = json.loads(
        invoke("sessions", "search", "vendor onboarding", "--user", "dana", global_opts=["--json"]).stdout
    )
    assert set(js[0]["breakdown"]) >= {"relevance", "recency", "importance", "score"}
    show = invoke("sessions", "show", "s-1")
    assert show.exit_code == 0
    assert '[called submit_vendor({"name": "Acme"})]' in show.stdout  # whitespace collapsed for people
    missing = invoke("sessions", "show", "nope")
    assert missing.exit_code == 2 and "no session 'nope'" in missing.stderr
    nobody = invoke("sessions", "recent", "--user", "nobody")
    assert "no sessions" in nobody.stdout
    both = invoke("sessions", "search", "x", "--preset", "balanced", "--weights", "1,1,1")
    assert both.exit_code == 2


def test_other_tenants_see_nothing(invoke: Invoke, tmp_path: Path) -> None:
    path = tmp_path / "sessions.json"
    path.write_text(json.dumps([RECORDS[0]]), encoding="utf-8")
    assert _import(invoke, path).exit_code == 0
    other = ["--tenant", "other", "--json"]
    assert json.loads(invoke("sessions", "recent", "--user", "dana", global_opts=other).stdout) == []
    assert (
        json.loads(invoke("sessions", "search", "vendor", "--user", "dana", global_opts=other).stdout) == []
    )
    assert invoke("sessions", "show", "s-1", global_opts=other).exit_code == 2


def test_context_prints_the_block_within_the_budget(invoke: Invoke, tmp_path: Path) -> None:
    path = tmp_path / "sessions.json"
    path.write_text(json.dumps([RECORDS[0], RECORDS[2]]), encoding="utf-8")
    assert _import(invoke, path).exit_code == 0
    assert invoke("remember", "preference", "User prefers window seats", "--importance", "8").exit_code == 0
    result = invoke("context", "vendor onboarding window seat", "--budget", "300", "--user", "dana")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("[Past Conversation Context]\n")
    assert ToktokCounter().count(result.stdout.rstrip("\n")) <= 300
    assert "tokens (toktok o200k_base)" in result.stderr
    for budget in ("0", "40", "90", "150"):
        data = json.loads(
            invoke(
                "context",
                "vendor",
                "--budget",
                budget,
                "--user",
                "dana",
                "--encoding",
                "cl100k_base",
                global_opts=["--json"],
            ).stdout
        )
        assert (
            data["tokens"] <= int(budget)
            and ToktokCounter("cl100k_base").count(data["text"]) == data["tokens"]
        )
    only_events = json.loads(
        invoke(
            "context",
            "window seat",
            "--budget",
            "300",
            "--no-sessions",
            "--user",
            "dana",
            global_opts=["--json"],
        ).stdout
    )
    assert {i["kind"] for i in only_events["items"]} == {"event"}
    nothing = invoke("context", "vendor", "--budget", "300", "--user", "dana", "--min-relevance", "1")
    assert nothing.exit_code == 0 and nothing.stdout == NOTHING_RELEVANT_BLOCK + "\n"


def test_eval_locomo_unit_session_writes_its_own_files(tmp_path: Path) -> None:
    data = tmp_path / "locomo.json"
    data.write_text(json.dumps([make_sample(), make_sample(sample_id="conv-y")]), encoding="utf-8")
    out = tmp_path / "results"
    result = CliRunner().invoke(
        cli,
        [
            "--embedder",
            "hashing",
            "eval",
            "locomo",
            str(data),
            "--unit",
            "session",
            "--out-dir",
            str(out),
            "--preset",
            "relevance_only",
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == ["locomo_sessions.json", "locomo_sessions.md"]
    document = json.loads((out / "locomo_sessions.json").read_text(encoding="utf-8"))
    assert document["configurations"][0]["name"] == "relevance_only"
    assert "Hit@5" in result.stdout


def _import_three(invoke: Invoke, tmp_path: Path) -> Any:
    records = [
        {"session_id": "s1", "messages": [{"role": "user", "content": "I fly to Tokyo"}], "user_id": "ana"},
        {"session_id": "s2", "messages": [{"role": "user", "content": "Window seat"}], "user_id": "ana"},
        {
            "session_id": "s3",
            "messages": [{"role": "user", "content": "Hi"}],
            "user_id": "bo",
            "agent_id": "bot",
        },
    ]
    source = tmp_path / "three.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return invoke("sessions", "import", str(source))


def test_import_says_which_ids_it_used_and_stats_counts_conversations(invoke: Invoke, tmp_path: Path) -> None:
    imported = _import_three(invoke, tmp_path)
    assert imported.exit_code == 0
    assert "stored for --agent default --user ana (2), --agent bot --user bo (1)" in imported.stdout
    assert "memlane sessions recent --agent default --user ana" in imported.stdout
    stats = json.loads(invoke("--json", "stats").stdout)
    assert stats["sessions"] == 0 and stats["conversations"] == 3  # no episodes, three conversations
    assert stats["conversation_owners"][0] == {"agent_id": "default", "user_id": "ana", "sessions": 2}
    assert "stored conversations" in invoke("stats").stdout


def test_recent_and_context_without_the_right_user_say_whose_conversations_exist(
    invoke: Invoke, tmp_path: Path
) -> None:
    _import_three(invoke, tmp_path)
    recent = invoke("sessions", "recent")
    assert recent.exit_code == 0
    assert "no stored conversations of --agent default --user default" in recent.stderr
    assert "--agent default --user ana (2)" in recent.stderr
    context = invoke("context", "Tokyo", "--budget", "200")
    assert context.exit_code == 0 and "--agent bot --user bo (1)" in context.stderr
    found = invoke("sessions", "recent", "--user", "ana")
    assert "s1" in found.stdout and "no stored conversations" not in found.stderr
