"""remember / recall / stats / prune through the real CLI over a real SQLite file."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memlane.cli import cli
from tests.cli.conftest import Invoke

Remember = Callable[..., dict[str, Any]]
NOW = "2025-03-15T12:00:00Z"


def _count(invoke: Invoke) -> int:
    result = invoke("stats", global_opts=["--json"])
    assert result.exit_code == 0, result.output
    return int(json.loads(result.stdout)["episodes"])


def test_remember_prints_the_stored_episode(invoke: Invoke) -> None:
    result = invoke(
        "remember",
        "preference",
        "User prefers window seats",
        "--tag",
        "Travel ",
        "--importance",
        "7",
        "--created-at",
        "2025-03-01T09:00:00+02:00",
        "--metadata",
        '{"source": "chat"}',
    )
    assert result.exit_code == 0, result.output
    for text in ("id", "preference", "User prefers window seats", "travel", "2025-03-01T07:00:00+00:00"):
        assert text in result.stdout


def test_remember_json_is_the_episode(remember: Remember) -> None:
    episode = remember("preference", "User prefers window seats", "--tag", "travel", "--importance", "12")
    assert set(episode) == {
        "id",
        "tenant_id",
        "session_id",
        "event_type",
        "content",
        "tags",
        "importance",
        "created_at",
        "metadata",
        "valid_from",
        "valid_until",
        "recorded_at",
        "invalidated_at",
        "superseded_by",
        "supersede_reason",
        "archived_at",
        "session_scoped",
        "retrieve_count",
        "last_retrieved_at",
    }
    assert episode["valid_from"] == episode["created_at"]
    assert episode["valid_until"] is None and episode["invalidated_at"] is None
    assert len(episode["id"]) == 32
    assert episode["importance"] == 10.0  # clamped to [1, 10]
    assert episode["tags"] == ["travel"]
    assert (episode["tenant_id"], episode["session_id"]) == ("default", "default")
    assert datetime.fromisoformat(episode["created_at"]).tzinfo is not None


def test_recall_table_shows_the_breakdown(invoke: Invoke, remember: Remember) -> None:
    remember("preference", "User prefers window seats on flights", "--importance", "8")
    remember("small_talk", "User has a beagle named Pixel")
    result = invoke("recall", "window seats on flights", "--now", NOW)
    assert result.exit_code == 0, result.output
    for header in ("score", "relevance", "recency", "importance"):
        assert header in result.stdout
    assert "User prefers window seats" in result.stdout
    assert result.stdout.index("window seats on flights") < result.stdout.index("beagle")


def test_recall_json_shape(invoke: Invoke, remember: Remember) -> None:
    remember("preference", "User prefers window seats on flights", "--importance", "8")
    remember("small_talk", "User has a beagle named Pixel")
    result = invoke(
        "recall", "window seats", "--limit", "1", "--preset", "relevance_only", global_opts=["--json"]
    )
    assert result.exit_code == 0, result.output
    hits = json.loads(result.stdout)
    assert isinstance(hits, list) and len(hits) == 1
    hit = hits[0]
    assert hit["content"] == "User prefers window seats on flights"
    b = hit["breakdown"]
    assert set(b) == {"relevance", "recency", "importance", "score", "dense", "keyword", "retrieval"} | {
        "fallback",
        "in_window",
        "own_relevance",
        "agent_discount",
        "decided_by",
        "fusion",
        "base_relevance",
        "boosts",
        "contributions",
        "tie_band",
        "lead",
    }
    assert sum(c["points"] for c in b["contributions"]) == pytest.approx(b["score"])
    assert all(
        0.0 <= b[k] <= 1.0 for k in ("relevance", "recency", "importance", "score", "dense", "keyword")
    )
    assert (b["retrieval"], b["fallback"], b["in_window"]) == ("hybrid", False, None)
    assert hit["breakdown"]["score"] == pytest.approx(hit["breakdown"]["relevance"] / 1.1)  # relevance_only


def test_recall_custom_weights(invoke: Invoke, remember: Remember) -> None:
    remember("preference", "User prefers window seats", "--importance", "10")
    result = invoke("recall", "window", "--weights", "0,0,1", global_opts=["--json"])
    assert result.exit_code == 0, result.output
    b = json.loads(result.stdout)[0]["breakdown"]
    assert b["importance"] == 1.0
    assert b["score"] == pytest.approx(
        (b["relevance"] + 0.1 * b["importance"]) / 1.1
    )  # importance: tie-break


def test_structured_recall_is_newest_first_and_never_embeds(invoke: Invoke, remember: Remember) -> None:
    remember("booking", "BK-1 confirmed", "--created-at", "2025-01-01T00:00:00Z")
    remember("booking", "BK-3 confirmed", "--created-at", "2025-03-01T00:00:00Z")
    remember("booking", "BK-2 confirmed", "--created-at", "2025-02-01T00:00:00Z")
    remember("preference", "Likes tea", "--created-at", "2025-04-01T00:00:00Z")
    # 'failing' has the same model id as 'hashing' but raises if asked to embed anything.
    result = invoke("recall", "--event-type", "booking", embedder="failing", global_opts=["--json"])
    assert result.exit_code == 0, result.output
    hits = json.loads(result.stdout)
    assert [h["content"] for h in hits] == ["BK-3 confirmed", "BK-2 confirmed", "BK-1 confirmed"]
    assert all(h["breakdown"] is None for h in hits)
    table = invoke("recall", "--event-type", "booking", embedder="failing")
    assert table.exit_code == 0, table.output
    assert "newest first" in table.stdout
    assert "relevance" not in table.stdout
    # ...whereas a ranked recall does embed; when that fails it falls back to keywords and says so:
    fallback = invoke("recall", "tea", embedder="failing", global_opts=["--json"])
    assert fallback.exit_code == 0, fallback.output
    (hit,) = json.loads(fallback.stdout)
    assert hit["content"] == "Likes tea"
    assert (hit["breakdown"]["retrieval"], hit["breakdown"]["fallback"]) == ("keyword", True)
    assert "keyword-only fallback" in invoke("recall", "tea", embedder="failing").stdout


def test_tags_filter_is_and(invoke: Invoke, remember: Remember) -> None:
    remember("note", "only a", "--tag", "a")
    remember("note", "a and b", "--tag", "a", "--tag", "B")
    remember("note", "only b", "--tag", "b")
    for args in (["--tag", "a", "--tag", "b"], ["note", "--tag", "A", "--tag", "b"]):
        result = invoke("recall", *args, global_opts=["--json"])
        assert result.exit_code == 0, result.output
        assert [h["content"] for h in json.loads(result.stdout)] == ["a and b"]


def test_scope_option(invoke: Invoke, remember: Remember) -> None:
    remember("note", "session one", global_opts=["--session", "s1"])
    remember("note", "session two", global_opts=["--session", "s2"])
    session = invoke("recall", global_opts=["--json", "--session", "s1"])
    assert [h["content"] for h in json.loads(session.stdout)] == ["session one"]
    tenant = invoke("recall", global_opts=["--json", "--session", "s1", "--scope", "tenant"])
    assert sorted(h["content"] for h in json.loads(tenant.stdout)) == ["session one", "session two"]
    other = invoke("recall", global_opts=["--json", "--tenant", "other", "--scope", "tenant"])
    assert json.loads(other.stdout) == []


def test_recall_without_results(invoke: Invoke, remember: Remember) -> None:
    remember("note", "something")
    result = invoke("recall", "--event-type", "missing")
    assert result.exit_code == 0
    assert "no episodes match" in result.stdout


def test_stats(invoke: Invoke, remember: Remember, db: Path) -> None:
    remember("preference", "a", "--created-at", "2025-01-01T00:00:00Z")
    remember("preference", "b", "--created-at", "2025-02-01T00:00:00Z")
    remember("booking", "c", "--created-at", "2025-03-01T00:00:00Z", global_opts=["--session", "s2"])
    result = invoke("stats", global_opts=["--json", "--scope", "tenant"])
    assert result.exit_code == 0, result.output
    stats = json.loads(result.stdout)
    assert stats["episodes"] == 3
    assert stats["with_vectors"] == 3
    assert stats["tenants"] == 1
    assert stats["sessions"] == 2
    assert stats["event_types"] == {"preference": 2, "booking": 1}
    assert stats["oldest"] == "2025-01-01T00:00:00+00:00"
    assert stats["newest"] == "2025-03-01T00:00:00+00:00"
    assert stats["embedding_model"] == {"model_id": "hashing-64", "dims": 64}
    assert stats["schema_version"] >= 1
    assert stats["db"] == str(db.resolve())
    assert stats["scope"] == "tenant"
    table = invoke("stats")
    assert table.exit_code == 0
    for text in ("episodes", "hashing-64", "preference", "schema version"):
        assert text in table.stdout


def test_db_defaults_to_memlane_db_env(tmp_path: Path, remember: Remember, db: Path) -> None:
    remember("note", "from env")
    result = CliRunner(env={"MEMLANE_DB": str(db)}).invoke(cli, ["--embedder", "hashing", "--json", "stats"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["episodes"] == 1


def test_prune(invoke: Invoke, remember: Remember) -> None:
    now = datetime(2025, 3, 15, 12, tzinfo=UTC)
    remember("note", "old", "--created-at", (now - timedelta(days=100)).isoformat())
    remember("note", "recent", "--created-at", (now - timedelta(days=1)).isoformat())
    remember(
        "note",
        "other tenant, old",
        "--created-at",
        (now - timedelta(days=90)).isoformat(),
        global_opts=["--tenant", "t2"],
    )
    nothing = invoke("prune", global_opts=["--json"])
    assert json.loads(nothing.stdout)["deleted"] == 0
    result = invoke("prune", "--retention-days", "30", "--now", now.isoformat(), global_opts=["--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["deleted"] == 2  # table-wide: the other tenant's old episode too
    assert report["cutoff"] == (now - timedelta(days=30)).isoformat()
    assert _count(invoke) == 1
    text = invoke("prune", "--retention-days", "0.5", "--now", now.isoformat())
    assert "deleted 1 episode(s)" in text.stdout


def _assert_usage_error(result: Any, *needles: str) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    for needle in needles:
        assert needle in result.stderr, result.stderr


def test_bad_input_exits_2_and_stores_nothing(invoke: Invoke, remember: Remember) -> None:
    remember("note", "the only good one")
    _assert_usage_error(invoke("remember", "note", "x", "--importance", "abc"), "importance", "abc")
    _assert_usage_error(
        invoke("remember", "note", "x", "--created-at", "2025-03-01T09:00:00"), "created-at", "timezone"
    )
    _assert_usage_error(invoke("remember", "note", "x", "--created-at", "yesterday"), "ISO-8601")
    _assert_usage_error(invoke("remember", "note", "x", "--metadata", "[1]"), "JSON object")
    _assert_usage_error(invoke("remember", "note", "x", "--importance", "nan"), "error:", "importance")
    _assert_usage_error(invoke("remember", "note", "   "), "error:", "CONTENT")
    _assert_usage_error(invoke("remember", "note", "x", global_opts=["--tenant", " "]), "--tenant")
    assert _count(invoke) == 1
    _assert_usage_error(invoke("recall", "q", "--limit", "0"), "limit", "0")
    _assert_usage_error(invoke("recall", "q", "--weights", "1,2"), "three numbers")
    _assert_usage_error(invoke("recall", "q", "--weights", "0,0,0"), "weight")
    _assert_usage_error(invoke("recall", "q", "--preset", "nope"), "preset")
    _assert_usage_error(invoke("recall", "q", "--preset", "balanced", "--weights", "1,1,1"), "not both")
    _assert_usage_error(invoke("recall", ""), "QUERY")
    _assert_usage_error(invoke("prune", "--retention-days", "0"), "retention-days")


def test_errors_are_one_line_and_json_in_json_mode(invoke: Invoke, remember: Remember) -> None:
    remember("note", "hello")
    plain = invoke("remember", "note", " ")
    assert plain.exit_code == 2
    assert plain.stderr.strip().startswith("error:")
    assert len(plain.stderr.strip().splitlines()) == 1
    machine = invoke("remember", "note", " ", global_opts=["--json"])
    assert machine.exit_code == 2
    assert json.loads(machine.stderr) == {
        "error": (
            "CONTENT must be a non-empty string (it has only whitespace, invisible or control characters)"
        ),
        "type": "ValidationError",
    }


def test_read_commands_refuse_a_missing_database(invoke: Invoke, tmp_path: Path) -> None:
    missing = tmp_path / "nope.db"
    for args in (["recall", "q"], ["stats"], ["export"], ["prune", "--retention-days", "1"]):
        result = invoke(*args, db_path=missing)
        _assert_usage_error(result, "no database at")
    assert not missing.exists()


def test_embedding_model_mismatch_is_a_clean_error(invoke: Invoke, remember: Remember) -> None:
    remember("note", "made with the hashing embedder")
    result = invoke("recall", "q", embedder="local")
    _assert_usage_error(result, "error:", "hashing-64")


def test_help_texts(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["--help"])
    assert result.exit_code == 0
    for command in ("remember", "recall", "ingest", "export", "stats", "prune", "demo", "eval"):
        assert command in result.stdout
    assert "--embedder" not in result.stdout  # hidden, test-only
    recall_help = runner.invoke(cli, ["recall", "--help"]).stdout
    assert "[0, 1]" in recall_help and ">= 1" in recall_help
    remember_help = runner.invoke(cli, ["remember", "--help"]).stdout
    assert "1" in remember_help and "10" in remember_help and "timezone" in remember_help
