"""Tool schemas (OpenAI / Anthropic), presence-triggered registration, and ``handle_tool_call``."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memlane import EpisodicMemory, ScoreBreakdown, SQLiteStore, Store
from memlane.errors import StoreError
from memlane.operations.tool_specs import TOOLS
from memlane.recall.ranking import PRESETS
from memlane.tools import (
    RECALL_EPISODES,
    REMEMBER_EPISODE,
    TOOL_FORMATS,
    MemoryTools,
    handle_tool_call,
    tool_definitions,
    tool_error,
    tool_schemas,
    tools_for,
)
from tests.conftest import MemoryFactory

# -- schemas ------------------------------------------------------------------------------


def test_openai_format() -> None:
    remember, recall, *_ = tool_schemas("openai")
    assert remember["type"] == "function"
    function = remember["function"]
    assert function["name"] == REMEMBER_EPISODE
    params = function["parameters"]
    assert params["type"] == "object"
    assert params["required"] == ["event_type", "content"]
    assert params["additionalProperties"] is False
    assert set(params["properties"]) == {"event_type", "content", "tags", "importance", "detail"}
    # Out-of-range importance is clamped, not refused, so the schema sets no minimum/maximum.
    assert "minimum" not in params["properties"]["importance"]
    assert "1-10" in params["properties"]["importance"]["description"]
    assert "clamped" in params["properties"]["importance"]["description"]
    assert recall["function"]["name"] == RECALL_EPISODES
    recall_params = recall["function"]["parameters"]
    assert recall_params["required"] == []
    assert "ALL" in recall_params["properties"]["tags"]["description"]  # tags combine with AND
    assert recall_params["properties"]["preset"]["enum"] == list(PRESETS)


def test_anthropic_and_other_formats_share_one_definition() -> None:
    definitions = tool_definitions()
    anthropic = tool_schemas("anthropic")
    responses = tool_schemas("openai-responses")
    neutral = tool_schemas("json-schema")
    for d, a, r, n in zip(definitions, anthropic, responses, neutral, strict=True):
        assert a == {"name": d.name, "description": d.description, "input_schema": d.parameters}
        assert r == {
            "type": "function",
            "name": d.name,
            "description": d.description,
            "parameters": d.parameters,
        }
        assert n == {"name": d.name, "description": d.description, "parameters": d.parameters}
    with pytest.raises(ValueError, match="unknown tool format"):
        tool_schemas("gemini")  # type: ignore[arg-type]


def test_every_property_is_described_for_the_model() -> None:
    for definition in tool_definitions():
        assert len(definition.description) > 80
        for name, prop in definition.parameters["properties"].items():
            assert len(prop.get("description", "")) > 20, (definition.name, name)
    assert json.loads(json.dumps(tool_schemas("openai"))) == tool_schemas("openai")


def test_limits_appear_in_the_schema() -> None:
    recall = tool_definitions(default_limit=3, max_limit=12)[1]
    limit = recall.parameters["properties"]["limit"]
    assert limit["maximum"] == 12
    assert "default" in limit["description"]
    with pytest.raises(ValueError):
        tool_definitions(default_limit=10, max_limit=5)


# -- presence triggers registration --------------------------------------------------------


def test_tools_for_a_config_with_the_section(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text("agent: {name: helper}\nepisodic_memory:\n  default_limit: 4\n  max_limit: 9\n")
    for fmt in TOOL_FORMATS:
        tools = tools_for(path, fmt)
        assert len(tools) == len(TOOLS)  # every tool of memlane.operations.tool_specs
    openai = tools_for(path)
    assert [t["function"]["name"] for t in openai][:2] == [REMEMBER_EPISODE, RECALL_EPISODES]
    assert openai[1]["function"]["parameters"]["properties"]["limit"]["maximum"] == 9
    assert [t["name"] for t in tools_for(path, "anthropic")][:2] == [REMEMBER_EPISODE, RECALL_EPISODES]


def test_no_section_no_tools(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text("agent: {name: helper}\nmemory:\n  path: x.db\n")
    assert tools_for(path) == []
    assert tools_for({}) == []
    assert tools_for({"episodic_memory": None}, "anthropic") != []  # an empty section counts


# -- dispatch -----------------------------------------------------------------------------


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    """The tools are store-agnostic (they only call the facade): one SQLite file is enough."""
    s = SQLiteStore(tmp_path / "tools.db")
    yield s
    s.close()


@pytest.fixture
def tools(memory: EpisodicMemory) -> MemoryTools:
    return MemoryTools(memory, max_limit=10)


def _ok(result: dict[str, Any]) -> dict[str, Any]:
    assert result["ok"] is True, result
    assert json.loads(json.dumps(result)) == result  # JSON-serialisable as is
    return result


def _error(result: dict[str, Any], kind: str) -> str:
    assert result["ok"] is False, result
    assert result["error"]["type"] == kind, result
    json.dumps(result)
    message: str = result["error"]["message"]
    return message


def test_remember_then_ranked_recall_with_breakdown(tools: MemoryTools, memory: EpisodicMemory) -> None:
    stored = _ok(
        tools.handle_tool_call(
            REMEMBER_EPISODE,
            '{"event_type": "preference", "content": "User prefers aisle seats", "tags": ["Travel"], '
            '"importance": 8, "detail": "full"}',
        )
    )["episode"]
    assert stored["tags"] == ["travel"]
    assert stored["importance"] == 8.0
    assert (stored["tenant_id"], stored["session_id"]) == (memory.tenant_id, memory.session_id)
    _ok(tools.handle_tool_call(REMEMBER_EPISODE, {"event_type": "fact", "content": "The office is in Lyon"}))

    result = _ok(
        tools.handle_tool_call(RECALL_EPISODES, {"query": "aisle seats", "limit": 1, "detail": "full"})
    )
    assert (result["count"], result["ranked"]) == (1, True)
    hit = result["episodes"][0]
    assert hit["id"] == stored["id"]
    assert set(hit["breakdown"]) == {f.name for f in dataclasses.fields(ScoreBreakdown)}
    assert all(0.0 <= hit["breakdown"][k] <= 1.0 for k in ("relevance", "recency", "importance", "score"))
    assert hit["breakdown"]["importance"] == 0.8


def test_structured_recall_filters_with_and(tools: MemoryTools) -> None:
    for content, tags in [("a", ["x", "y"]), ("b", ["x"]), ("c", ["y"])]:
        _ok(
            tools.handle_tool_call(REMEMBER_EPISODE, {"event_type": "note", "content": content, "tags": tags})
        )
    result = _ok(tools.handle_tool_call(RECALL_EPISODES, '{"tags": ["x", "y"], "detail": "full"}'))
    assert result["ranked"] is False
    assert [e["content"] for e in result["episodes"]] == ["a"]
    assert result["episodes"][0]["breakdown"] is None
    assert _ok(tools.handle_tool_call(RECALL_EPISODES, {"tags": "x"}))["count"] == 2  # one string = one tag


def test_nulls_and_empty_arguments_count_as_absent_and_one_string_is_one_tag(tools: MemoryTools) -> None:
    _ok(tools.handle_tool_call(REMEMBER_EPISODE, {"event_type": "n", "content": "c", "importance": 7}))
    _ok(tools.handle_tool_call(REMEMBER_EPISODE, {"event_type": "n", "content": "d", "tags": None}))
    tagged = _ok(tools.handle_tool_call(REMEMBER_EPISODE, {"event_type": "n", "content": "e", "tags": "Ops"}))
    assert tagged["episode"]["tags"] == ["ops"]  # a single string is one tag, as in Python and HTTP
    nulls = '{"query": null, "event_type": null, "tags": null, "limit": null, "preset": null}'
    assert _ok(tools.handle_tool_call(RECALL_EPISODES, nulls))["count"] == 3  # OpenAI strict mode sends nulls
    assert _ok(tools.handle_tool_call(RECALL_EPISODES, ""))["count"] == 3
    assert _ok(tools.handle_tool_call(RECALL_EPISODES, None))["count"] == 3
    ranked = _ok(
        tools.handle_tool_call(RECALL_EPISODES, {"query": "c", "preset": "relevance_only", "detail": "full"})
    )
    top = ranked["episodes"][0]["breakdown"]
    assert top["score"] == pytest.approx(top["relevance"] / 1.1)  # relevance_only: no tie-break term


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ({"limit": "5"}, "limit must be a positive integer, got string"),
        ({"limit": 1.0}, "limit must be a positive integer, got number"),
        ({"limit": True}, "limit must be a positive integer, got boolean"),
        ({"limit": 11}, "limit must be <= 10, got 11"),
        ({"limit": 2**63}, "limit must be <= 10, got 9223372036854775808"),
        ({"query": "  "}, "query must be a non-empty string"),
        ({"query": "\u200b"}, "query must be a non-empty string"),
    ],
)
def test_strict_recall_arguments(tools: MemoryTools, arguments: dict[str, Any], fragment: str) -> None:
    """One policy (memlane.operations.arguments): no coercion, no silent reduction, blank query refused."""
    assert fragment in _error(tools.handle_tool_call(RECALL_EPISODES, arguments), "ValidationError")


@pytest.mark.parametrize(
    ("importance", "fragment"),
    [("8", "got string"), (True, "got boolean"), (float("nan"), "finite"), (float("inf"), "finite")],
)
def test_strict_importance(tools: MemoryTools, importance: object, fragment: str) -> None:
    arguments = {"event_type": "n", "content": "c", "importance": importance}
    assert fragment in _error(tools.handle_tool_call(REMEMBER_EPISODE, arguments), "ValidationError")
    assert tools.memory.count() == 0


def test_importance_outside_1_to_10_is_clamped(tools: MemoryTools) -> None:
    for value, expected in ((1e308, 10.0), (-5, 1.0), (10**400, 10.0)):
        stored = _ok(
            tools.handle_tool_call(REMEMBER_EPISODE, {"event_type": "n", "content": "c", "importance": value})
        )
        assert stored["episode"]["importance"] == expected


@pytest.mark.parametrize(
    ("name", "arguments", "kind", "fragment"),
    [
        ("forget_everything", {}, "UnknownTool", "available: remember_episode, recall_episodes"),
        (REMEMBER_EPISODE, "{not json", "ValidationError", "not valid JSON"),
        (REMEMBER_EPISODE, "[1, 2]", "ValidationError", "must be a JSON object, got array"),
        (REMEMBER_EPISODE, {"event_type": "n"}, "ValidationError", "missing required argument(s): content"),
        (
            REMEMBER_EPISODE,
            {"event_type": "n", "content": "c", "tenant_id": "x"},
            "ValidationError",
            "tenant_id",
        ),
        (
            REMEMBER_EPISODE,
            {"event_type": 5, "content": "c"},
            "ValidationError",
            "event_type must be a string",
        ),
        (
            REMEMBER_EPISODE,
            {"event_type": "n", "content": "c", "tags": [1]},
            "ValidationError",
            "tags[0] must be a string, got integer",
        ),
        (REMEMBER_EPISODE, {"event_type": "n", "content": "c", "importance": "high"}, "ValidationError", ""),
        (REMEMBER_EPISODE, {"event_type": "n", "content": "c", "importance": True}, "ValidationError", ""),
        (REMEMBER_EPISODE, {"event_type": "n", "content": "   "}, "ValidationError", "content"),
        (REMEMBER_EPISODE, {"event_type": "x" * 201, "content": "c"}, "ValidationError", "event_type"),
        (RECALL_EPISODES, {"limit": 0}, "ValidationError", "limit must be >= 1, got 0"),
        (RECALL_EPISODES, {"limit": 2.5}, "ValidationError", "limit must be a positive integer"),
        (RECALL_EPISODES, {"preset": "fast"}, "ValidationError", "preset must be one of"),
        (RECALL_EPISODES, {"session_id": "other"}, "ValidationError", "unknown argument(s) session_id"),
    ],
)
def test_bad_calls_come_back_as_structured_errors(
    tools: MemoryTools, name: str, arguments: Any, kind: str, fragment: str
) -> None:
    result = tools.handle_tool_call(name, arguments)
    assert fragment in _error(result, kind)
    assert result["error"]["tool"] == name


def test_store_failures_are_tool_errors(tools: MemoryTools, memory: EpisodicMemory) -> None:
    memory.close()
    message = _error(tools.handle_tool_call(RECALL_EPISODES, {}), "StoreClosedError")
    assert "closed" in message


def test_unexpected_exceptions_are_internal_errors(
    tools: MemoryTools, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise ZeroDivisionError("secret detail")

    monkeypatch.setattr(tools.memory, "recall_episodes", boom)
    result = tools.handle_tool_call(RECALL_EPISODES, {})
    assert "secret detail" not in _error(result, "InternalError")
    assert "ZeroDivisionError" in caplog.text  # logged with the traceback


def test_tool_error_mapping() -> None:
    assert tool_error(StoreError("db locked")) == {
        "ok": False,
        "error": {"type": "StoreError", "message": "db locked"},
    }
    assert tool_error(KeyError("x"), tool="t")["error"]["type"] == "InternalError"


def test_tenant_and_session_come_from_the_memory(make_memory: MemoryFactory) -> None:
    alice = MemoryTools(make_memory(tenant_id="alice"))
    bob = MemoryTools(make_memory(tenant_id="bob", scope="tenant"))
    _ok(alice.handle_tool_call(REMEMBER_EPISODE, {"event_type": "n", "content": "alice's secret"}))
    assert _ok(bob.handle_tool_call(RECALL_EPISODES, {"query": "secret"}))["count"] == 0
    assert _ok(alice.handle_tool_call(RECALL_EPISODES, {"query": "secret"}))["count"] == 1


def test_module_level_handle_tool_call(memory: EpisodicMemory) -> None:
    result = handle_tool_call(memory, REMEMBER_EPISODE, {"event_type": "n", "content": "x"}, max_limit=5)
    assert _ok(result)["episode"]["content"] == "x"


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=10), children, max_size=3)
    ),
    max_leaves=8,
)
_keys = st.sampled_from(["event_type", "content", "tags", "importance", "query", "limit", "preset", "x"])


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(
    name=st.sampled_from([REMEMBER_EPISODE, RECALL_EPISODES, "other"]),
    arguments=st.dictionaries(_keys, _json, max_size=5) | _json | st.text(max_size=30),
)
def test_no_arguments_can_make_handle_tool_call_raise(tools: MemoryTools, name: str, arguments: Any) -> None:
    result = tools.handle_tool_call(name, arguments)
    assert isinstance(result["ok"], bool)
    assert json.loads(json.dumps(result)) == result
    if not result["ok"]:
        assert result["error"]["type"] != "InternalError", result


def test_supersede_takes_episode_id_like_history_and_still_accepts_old_id(
    tools: MemoryTools, caplog: pytest.LogCaptureFixture
) -> None:
    schemas = {s["name"]: s["parameters"] for s in tools.schemas("json-schema")}
    assert "episode_id" in schemas["supersede_episode"]["required"]
    assert "episode_id" in schemas["episode_history"]["required"]
    assert "old_id" not in schemas["supersede_episode"]["properties"]
    first = tools.handle_tool_call(REMEMBER_EPISODE, {"event_type": "fact", "content": "Lives in Paris"})
    moved = tools.handle_tool_call(
        "supersede_episode", {"episode_id": first["episode"]["id"], "event_type": "fact", "content": "Lisbon"}
    )
    assert moved["ok"] and moved["superseded"] == first["episode"]["id"]
    with caplog.at_level("WARNING", logger="memlane.operations.fields"):
        again = tools.handle_tool_call(
            "supersede_episode", {"old_id": moved["episode"]["id"], "event_type": "fact", "content": "Porto"}
        )
    assert again["ok"] and again["superseded"] == moved["episode"]["id"]
    assert "'old_id' is deprecated" in caplog.text
    both = tools.handle_tool_call(
        "supersede_episode", {"old_id": "a", "episode_id": "b", "event_type": "fact", "content": "x"}
    )
    assert both["error"]["type"] == "ValidationError" and "not both" in both["error"]["message"]
    history = tools.handle_tool_call("episode_history", {"episode_id": again["episode"]["id"]})
    assert {e["content"] for e in history["episodes"]} == {"Lives in Paris", "Lisbon", "Porto"}
