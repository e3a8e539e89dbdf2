"""``memlane form``: episodes from a stored session, deterministic or through an LLM (stub server)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memlane import EpisodicMemory
from memlane.embeddings.fake import HashingEmbedder
from memlane.formation import SUMMARY_EVENT_TYPE, TURN_EVENT_TYPE
from tests.cli.conftest import Invoke
from tests.formation.conftest import CONVERSATION
from tests.llm_server import StubReply, stub_chat_server

FACTS = json.dumps(
    {"facts": [{"event_type": "fact", "content": "User lives in Berlin.", "tags": [], "importance": 7}]}
)
SUMMARY = json.dumps({"summary": "User moved to Berlin.", "tags": ["travel"]})


@pytest.fixture
def stored_session(db: Path) -> str:
    """Store CONVERSATION as session ``chat-1`` (tenant ``default``) in the CLI tests' database."""
    with EpisodicMemory.open(db, embedder=HashingEmbedder()) as memory:
        memory.sessions.store_session("chat-1", CONVERSATION, agent_id="agent", user_id="user")
    return "chat-1"


def _episodes(invoke: Invoke) -> list[dict[str, object]]:
    result = invoke("export", global_opts=["--scope", "tenant"])
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_form_without_a_model_stores_turns_and_an_extractive_summary(
    invoke: Invoke, stored_session: str
) -> None:
    result = invoke("form", "--session", stored_session, global_opts=["--json"])
    assert result.exit_code == 0, result.output
    formed = json.loads(result.stdout)
    assert [ep["event_type"] for ep in formed] == [TURN_EVENT_TYPE] * 4 + [SUMMARY_EVENT_TYPE]
    assert {ep["session_id"] for ep in formed} == {"chat-1"}
    assert formed[-1]["metadata"]["formation"]["method"] == "extractive"
    assert formed[0]["metadata"]["formation"]["source_session_id"] == "chat-1"
    assert len(_episodes(invoke)) == 5

    table = invoke("form", "--session", stored_session, "--no-extract", "--replace")
    assert table.exit_code == 0, table.output
    assert "session_summary" in table.stdout and "extractive" in table.stdout
    assert "deleted 5 episode(s)" in table.stderr
    assert [ep["event_type"] for ep in _episodes(invoke)] == [SUMMARY_EVENT_TYPE]


def test_forming_a_session_twice_stores_nothing_the_second_time(invoke: Invoke, stored_session: str) -> None:
    first = invoke("form", "--session", stored_session, global_opts=["--json"])
    assert first.exit_code == 0, first.output
    ids = [ep["id"] for ep in json.loads(first.stdout)]
    again = invoke("form", "--session", stored_session, global_opts=["--json"])
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout) == []
    assert "already formed: 5 episode(s)" in again.stderr and ids[0] in again.stderr
    assert [ep["id"] for ep in _episodes(invoke)] == ids  # nothing stored twice
    table = invoke("form", "--session", stored_session)
    assert table.exit_code == 0 and "--replace" in table.stderr
    assert len(_episodes(invoke)) == 5
    replaced = invoke("form", "--session", stored_session, "--replace", global_opts=["--json"])
    new_ids = [ep["id"] for ep in json.loads(replaced.stdout)]
    assert len(new_ids) == 5 and not set(new_ids) & set(ids)
    assert sorted(ep["id"] for ep in _episodes(invoke)) == sorted(new_ids)


def test_form_usage_errors(invoke: Invoke, stored_session: str) -> None:
    unknown = invoke("form", "--session", "nope")
    assert unknown.exit_code == 2
    assert "no session 'nope'" in unknown.stderr
    no_model = invoke("form", "--session", stored_session, "--llm-base-url", "http://127.0.0.1:9/v1")
    assert no_model.exit_code == 2
    assert "--llm-model" in no_model.stderr


def test_form_with_a_model(invoke: Invoke, stored_session: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    with stub_chat_server([StubReply(FACTS), StubReply(SUMMARY)]) as stub:
        args = ["form", "--session", stored_session, "--llm-model", "stub", "--llm-base-url", stub.base_url]
        result = invoke(*args, "--llm-max-tokens", "200", global_opts=["--json"])
    assert result.exit_code == 0, result.output
    assert [r["max_tokens"] for r in stub.requests] == [200, 200]
    formed = json.loads(result.stdout)
    assert [ep["event_type"] for ep in formed] == ["fact", SUMMARY_EVENT_TYPE]
    assert {ep["metadata"]["formation"]["model"] for ep in formed} == {"stub"}


def test_form_malformed_output_stores_nothing_and_shows_the_raw_replies(
    invoke: Invoke, stored_session: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    with stub_chat_server([StubReply("garbage one"), StubReply("garbage two")]) as stub:
        args = ["form", "--session", stored_session, "--llm-model", "stub", "--llm-base-url", stub.base_url]
        failed = invoke(*args, global_opts=["--json"])
        assert failed.exit_code == 2
        error = json.loads(failed.stderr.strip().splitlines()[-1])  # after the logged warnings
        assert error["type"] == "MalformedOutputError"
        assert "garbage one" in error["error"] and "garbage two" in error["error"]
        assert _episodes(invoke) == []

        kept = invoke(*args, "--fallback", global_opts=["--json"])
    assert kept.exit_code == 0, kept.output
    formed = json.loads(kept.stdout)
    assert [ep["event_type"] for ep in formed] == [TURN_EVENT_TYPE] * 4 + [SUMMARY_EVENT_TYPE]
    assert all("llm_error" in ep["metadata"]["formation"] for ep in formed)
