"""The CLI reads well on an 80-column terminal: tables wrap and keep ids whole, ``--json`` goes
before or after the subcommand, ingest counts episodes, errors come in input order and name
the CLI flag, and the help and the demo's formula say what the code does."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result

from memlane.cli import cli
from memlane.cli.app import cli_wording
from memlane.cli.output import ranking_formula, ranking_terms
from memlane.cli.transfer import count_episode_lines, ingest_stream
from memlane.config import MemoryConfig
from memlane.config.profile import DEFAULT_DECAY_PER_DAY, DEFAULT_PROFILE
from memlane.embeddings.fake import HashingEmbedder
from memlane.memory import EpisodicMemory
from tests.cli.conftest import Invoke

WIDTH = 80
LONG_SESSION = "support-3f2b8c1e-6d4a-4b9e-9f1a-2c7d5e8b0a61"  # 44 characters: a UUID and a prefix
HUGE_SESSION = "imported-from-the-old-crm-" + "x" * 60  # wider than any column: folded, never cut
LONG_CONTENT = (
    "User prefers window seats on long-haul flights, especially transatlantic ones with extra "
    "legroom, and vegetarian meals on flights over six hours"
)  # under 160 characters: shown in full
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@pytest.fixture
def runner() -> CliRunner:
    """Every invocation in this module renders for an 80-column terminal."""
    return CliRunner(env={"COLUMNS": str(WIDTH)})


def _lines(text: str) -> list[str]:
    return text.splitlines()


def _assert_fits(text: str) -> None:
    """No line is wider than the terminal, and nothing was cut short with an ellipsis."""
    too_wide = [line for line in _lines(text) if len(line) > WIDTH]
    assert not too_wide, too_wide
    assert "…" not in text


def _words_of(text: str) -> list[str]:
    return [word for line in _lines(text) for word in line.split()]


def _remember(invoke: Invoke, *args: str) -> dict[str, Any]:
    result = invoke("remember", *args, "--json")
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_recall_table_wraps_words_and_keeps_episode_ids_whole(invoke: Invoke) -> None:
    stored = _remember(invoke, "preference", LONG_CONTENT, "--tag", "seating-preferences-long-haul")
    other = _remember(invoke, "note", "window cleaning is on Tuesdays")
    for args in (("recall", "window seats on flights"), ("recall",)):
        result = invoke(*args)
        assert result.exit_code == 0, result.output
        _assert_fits(result.stdout)
        words = _words_of(result.stdout)
        assert stored["id"] in words and other["id"] in words  # each id whole, on one line
        assert set(LONG_CONTENT.replace(",", "").split()) <= {w.strip(",") for w in words}
        assert "seating-preferences-long-haul" in words


def test_long_content_is_shortened_at_a_word_boundary(invoke: Invoke) -> None:
    words = [f"word{i:03d}" for i in range(60)]  # 479 characters
    _remember(invoke, "note", " ".join(words))
    out = invoke("recall").stdout
    shown = [w for w in _words_of(out) if w.startswith("word")]
    assert shown, out
    assert all(w.rstrip("…") in words for w in shown)  # no word cut in the middle
    assert shown[-1].endswith("…") and len(shown) < len(words)


def test_history_table_keeps_both_ids_whole(invoke: Invoke) -> None:
    old = _remember(invoke, "fact", "User lives in Paris")
    new = _remember(
        invoke,
        "fact",
        "User lives in Lisbon since the summer, after moving for a new job",
        "--supersedes",
        old["id"],
    )
    result = invoke("history", old["id"])
    assert result.exit_code == 0, result.output
    _assert_fits(result.stdout)
    words = _words_of(result.stdout)
    assert old["id"] in words and new["id"] in words
    assert "open" in words  # the new fact is still true


def _import_sessions(invoke: Invoke, tmp_path: Path, *extra: str) -> Result:
    records = [
        {
            "session_id": LONG_SESSION,
            "messages": [
                {
                    "role": "user",
                    "content": "Please onboard Acme Corp as a vendor, our new supplier for the EU.",
                },
                {
                    "role": "assistant",
                    "content": "Done: I submitted the vendor onboarding form to procurement.",
                },
            ],
        },
        {
            "session_id": HUGE_SESSION,
            "messages": [{"role": "user", "content": "An old conversation about vendors"}],
        },
        {
            "session_id": "conv-26/session_12",
            "messages": [
                {
                    "role": "user",
                    "content": "What about the flights to Lisbon next month for the conference?",
                },
                {"role": "assistant", "content": "I booked TAP 123 departing 9:40."},
            ],
        },
    ]
    path = tmp_path / "sessions.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return invoke("sessions", "import", str(path), *extra)


def test_session_tables_keep_session_ids_whole(invoke: Invoke, tmp_path: Path) -> None:
    assert _import_sessions(invoke, tmp_path).exit_code == 0
    for args in (("sessions", "recent"), ("sessions", "search", "vendor onboarding", "--min-relevance", "0")):
        result = invoke(*args)
        assert result.exit_code == 0, result.output
        _assert_fits(result.stdout)
        words = _words_of(result.stdout)
        assert LONG_SESSION in words and "conv-26/session_12" in words, result.stdout
        folded = "".join(w for w in words if w.startswith("imported-") or set(w) == {"x"})
        assert folded == HUGE_SESSION  # folded over lines, every character kept
        assert "onboard" in words  # the opening message, or the matched turn


@pytest.mark.parametrize(
    "args",
    [
        ("recall", "window"),
        ("stats",),
        ("export",),
        ("sessions", "recent"),
        ("history", "missing-id"),
    ],
)
def test_json_goes_before_or_after_the_subcommand(invoke: Invoke, args: tuple[str, ...]) -> None:
    _remember(invoke, "preference", "User prefers window seats")
    before = invoke(*args, global_opts=["--json"])
    after = invoke(*args, "--json")
    assert before.exit_code == after.exit_code
    assert before.stderr == after.stderr
    if args[0] == "recall":  # each ranked recall counts itself in retrieve_count: compare the ids
        assert [h["id"] for h in json.loads(before.stdout)] == [h["id"] for h in json.loads(after.stdout)]
    else:
        assert before.stdout == after.stdout
    if args[0] == "history":  # an error: a JSON object on stderr either way
        assert json.loads(after.stderr)["type"] == "EpisodeNotFoundError"
    elif args[0] != "export":  # export writes JSONL either way
        json.loads(after.stdout)


def test_every_command_documents_its_json_flag(runner: CliRunner) -> None:
    def commands(group: click.Group, path: tuple[str, ...]) -> list[tuple[str, ...]]:
        found: list[tuple[str, ...]] = []
        for name, command in group.commands.items():
            found.append((*path, name))
            if isinstance(command, click.Group):
                found += commands(command, (*path, name))
        return found

    every = commands(cli, ())
    assert ("sessions", "import") in every and ("recall",) in every
    for path in every:
        result = runner.invoke(cli, [*path, "--help"])
        assert result.exit_code == 0, (path, result.output)
        assert "--json" in result.stdout, path


def test_json_after_the_subcommand_reports_errors_as_json(invoke: Invoke) -> None:
    result = invoke("remember", "note", " ", "--json")
    assert result.exit_code == 2
    assert json.loads(result.stderr) == {
        "error": (
            "CONTENT must be a non-empty string (it has only whitespace, invisible or control characters)"
        ),
        "type": "ValidationError",
    }


def test_ingest_progress_bar_counts_episodes(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "episodes.jsonl"
    lines = [json.dumps({"event_type": "note", "content": f"item {i}"}) for i in range(130)]
    path.write_text("\n".join(lines[:70]) + "\n\n" + "\n".join(lines[70:]) + "\n", encoding="utf-8")
    terminal = CliRunner(env={"COLUMNS": str(WIDTH), "FORCE_COLOR": "1"})  # draw the bar
    result = terminal.invoke(
        cli, ["--db", str(tmp_path / "m.db"), "--embedder", "hashing", "ingest", str(path)]
    )
    assert result.exit_code == 0, result.output
    bar = ANSI.sub("", result.stderr)
    assert "130/130 episodes" in bar, bar  # blank lines are not episodes; no byte counts
    assert not re.search(r"\d\s?(bytes|kB|KB|MB)\b", bar), bar


def test_ingest_stream_reports_progress_in_episodes(tmp_path: Path) -> None:
    path = tmp_path / "episodes.jsonl"
    lines = [json.dumps({"event_type": "note", "content": f"item {i}"}) for i in range(7)]
    path.write_bytes(("\n".join(lines[:3]) + "\n\n" + "\n".join(lines[3:]) + "\nnot json\n").encode())
    seen: list[int] = []
    with (
        path.open("rb") as stream,
        EpisodicMemory.open(tmp_path / "m.db", embedder=HashingEmbedder()) as memory,
    ):
        assert count_episode_lines(stream) == 8
        assert stream.tell() == 0  # rewound for the ingest
        report = ingest_stream(memory, stream, batch_size=3, on_progress=seen.append)
    assert report.stored == 7 and [n for n, _ in report.rejected] == [9]
    assert seen == [3, 6, 8]  # after each batch: episodes handled so far (stored or rejected)


def test_ingest_reports_errors_in_line_order(invoke: Invoke, tmp_path: Path) -> None:
    """A value error found when the batch is stored (line 1) comes before a later JSON error."""
    rows = [
        '{"event_type": "note", "content": "bad importance", "importance": "high"}',  # refused at store time
        '{"event_type": "note", "content": "fine"}',
        "not json",  # refused at parse time, before line 1's batch is stored
        '{"event_type": "note", "content": "bad tags", "tags": 5}',
        '{"event_type": "note"}',
        '{"event_type": "note", "content": "also fine"}',
    ]
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    text = invoke("ingest", str(path))
    assert text.exit_code == 1
    assert [int(n) for n in re.findall(r"^line (\d+):", text.stderr, re.M)] == [1, 3, 4, 5]
    machine = invoke("ingest", str(path), "--json", db_path=tmp_path / "other.db")
    assert [e["line"] for e in json.loads(machine.stdout)["errors"]] == [1, 3, 4, 5]


def test_messages_name_the_cli_flag_not_the_python_parameter(invoke: Invoke, tmp_path: Path) -> None:
    assert _import_sessions(invoke, tmp_path).exit_code == 0
    again = _import_sessions(invoke, tmp_path)
    assert again.exit_code == 1
    assert "--append" in again.stderr and "append=True" not in again.stderr
    assert _import_sessions(invoke, tmp_path, "--append").exit_code == 0

    blank_user = invoke("context", "vendor", "--budget", "100", "--user", " ")
    assert blank_user.exit_code == 2
    assert "--user must be" in blank_user.stderr and "user_id" not in blank_user.stderr
    blank_tenant = invoke("stats", global_opts=["--tenant", " "])
    assert "--tenant must be" in blank_tenant.stderr and "tenant_id" not in blank_tenant.stderr
    nan = invoke("remember", "note", "x", "--importance", "nan")
    assert nan.stderr.startswith("error: --importance must be finite")


def test_cli_wording_rewrites_only_parameters_of_the_running_command() -> None:
    ctx = click.Context(cli)
    sessions = cli.get_command(ctx, "sessions")
    assert isinstance(sessions, click.Group)
    child = click.Context(sessions.commands["import"], parent=ctx)
    assert cli_wording("pass append=True to add turns", child) == "pass --append to add turns"
    assert cli_wording("tenant_id must be a non-empty string", child) == "--tenant must be a non-empty string"
    # a record's field (leading=False) and names the command does not have stay as they are
    assert cli_wording("session_id is required", child, leading=False) == "session_id is required"
    assert cli_wording("placement must be 'system'", child) == "placement must be 'system'"
    # user data quoted inside a message is never touched
    message = "no episode 'limit must go' in this memory's scope"
    assert cli_wording(message, click.Context(cli.get_command(ctx, "recall"), parent=ctx)) == message


def test_recall_help_describes_the_default_fusion(runner: CliRunner) -> None:
    text = " ".join(runner.invoke(cli, ["recall", "--help"]).stdout.split())
    fusion = DEFAULT_PROFILE.fusion
    assert fusion.method == "convex" and MemoryConfig().fusion == "convex"
    keyword_share = 1 - fusion.dense_weight
    assert f"relevance = w dense + (1 - w) keyword, w = 1 - {keyword_share:g} (1 - coverage)" in text
    assert "reciprocal rank fusion of" not in text  # RRF is an option, not the default
    assert f"recency = {DEFAULT_DECAY_PER_DAY:g}^age_days" in text


def test_demo_formula_is_the_one_the_ranking_computes(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(cli, ["--embedder", "hashing", "--json", "demo", "--db", str(tmp_path / "d.db")])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["formula"] == ranking_formula(MemoryConfig())
    w_dense = DEFAULT_PROFILE.fusion.dense_weight
    checked = 0
    for recall in doc["recalls"]:
        if recall["query"] is None:
            continue
        w = recall["weights"]
        shares = set()  # the convex fusion's dense share: one per recall, in [w_dense, 1]
        for hit in recall["hits"]:
            b = hit["breakdown"]
            dense, keyword = b["dense"] or 0.0, b["keyword"] or 0.0
            base = b["base_relevance"]
            if abs(dense - keyword) > 1e-6:
                shares.add(round((base - keyword) / (dense - keyword), 6))
            window = 0.3 if b["in_window"] else 0.0
            allowed = [1 - (1 - base) * (1 - entity) * (1 - window) for entity in (0.0, 0.2)]  # tag named?
            assert any(b["own_relevance"] == pytest.approx(v, abs=1e-6) for v in allowed)
            total = w["relevance"] + w["recency"] + w["importance"]
            tie = 0.1 * (w["recency"] * b["recency"] + w["importance"] * b["importance"]) / total
            assert b["score"] == pytest.approx((b["relevance"] + tie) / 1.1, abs=1e-6)
            rating = hit["importance"]
            assert b["importance"] == pytest.approx(0.5 if rating is None else rating / 10)
            checked += 1
        assert len(shares) <= 1 and all(w_dense - 1e-6 <= s <= 1 + 1e-6 for s in shares)
    assert checked >= 10

    text = runner.invoke(cli, ["--embedder", "hashing", "demo", "--db", str(tmp_path / "d.db")])
    assert text.exit_code == 0, text.output
    # the replay commands are kept on one line each, for copying
    _assert_fits("\n".join(line for line in _lines(text.stdout) if not line.startswith(("$ ", "Try "))))
    flat = " ".join(text.stdout.split())
    assert f"w*dense + (1-w)*keyword, w = 1 - {1 - w_dense:g}*(1-coverage)" in flat
    assert f"recency = {DEFAULT_DECAY_PER_DAY:g}^age_days" in flat


def test_formula_follows_the_configuration() -> None:
    def text(**fields: Any) -> str:
        return ranking_formula(MemoryConfig(**fields))

    assert "convex" in text()
    assert "rrf" in text(fusion="rrf") and "convex" not in text(fusion="rrf")
    assert "noisy-OR" in text(fusion="noisy_or")
    assert "relevance = dense" in text(retrieval="dense") and "keyword =" not in text(retrieval="dense")
    assert "relevance = keyword" in text(retrieval="keyword")
    assert "relevance*" not in text(temporal=False)
    assert "relevance- = 0.7*relevance if tagged 'assistant'" in text()
    assert "relevance-" not in text(agent_discount=0.0)
    assert "half_life" in text(forgetting=True)
    assert "recency = 0.99^age_days" in text(decay_per_day=0.99)
    assert all(len(f"  {name:<10} = {definition}") <= WIDTH for name, definition in ranking_terms())
