"""The tool JSON schemas and the argument policy describe the same arguments; tools can be selected.

Each tool has two definitions that must not drift apart: the JSON schema a model reads
(:func:`memlane.tools.tool_definitions`, :mod:`memlane.operations.tool_specs`) and the checks that
accept or refuse its calls (:func:`memlane.tools.tool_arguments`, :mod:`memlane.operations.arguments`).
For every tool and every property this suite pins the same names, the same required
arguments, and the same types and bounds: a value the schema allows is accepted by the
check, a value of another type or just outside a bound is refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from memlane import EpisodicMemory
from memlane.embeddings.fake import HashingEmbedder
from memlane.errors import ValidationError
from memlane.operations.fields import ArgumentCheck, Request, field_check
from memlane.tools import (
    RECALL_EPISODES,
    REMEMBER_EPISODE,
    MemoryTools,
    ToolDefinition,
    tool_arguments,
    tool_definitions,
    tool_schemas,
    tools_for,
)

MAX_LIMIT = 17
DEFINITIONS = tool_definitions(default_limit=5, max_limit=MAX_LIMIT)
ARGUMENTS = tool_arguments(MAX_LIMIT)
PROPERTIES = [(d.name, name) for d in DEFINITIONS for name in d.parameters["properties"]]


def _definition(tool: str) -> ToolDefinition:
    return next(d for d in DEFINITIONS if d.name == tool)


def _valid(schema: dict[str, Any]) -> Any:
    """A value the schema allows (the smallest one for a bounded number)."""
    if "anyOf" in schema:
        return _valid(schema["anyOf"][0])
    if "enum" in schema:
        return schema["enum"][-1]
    kind = schema["type"]
    if kind == "string":
        return "2025-03-01T09:00:00+00:00" if schema.get("format") == "date-time" else "travel"
    if kind == "integer":
        return schema.get("minimum", 1)
    if kind == "number":
        return float(schema.get("minimum", 0.5))
    if kind == "boolean":
        return True
    if kind == "array":
        return ["travel", "flights"]
    raise AssertionError(f"no sample for {schema}")


def _wrong_types(schema: dict[str, Any]) -> list[Any]:
    """Values of JSON types the schema does not allow (a single string counts as one tag)."""
    if "anyOf" in schema:  # the wrong types of each alternative that no alternative allows
        alternatives = schema["anyOf"]
        candidates = [v for alt in alternatives for v in _wrong_types(alt)]
        return [
            v for v in candidates if not any(Draft202012Validator(alt).is_valid(v) for alt in alternatives)
        ]
    if "const" in schema or "type" not in schema:
        return [5, True, {"x": 1}]
    kind = schema["type"]
    return {
        "string": [5, True, ["x"], {"x": 1}],
        "integer": ["5", 1.5, True, [1]],
        "number": ["5", True, [1], {"x": 1}],
        "boolean": ["true", 1, 0.0],
        "array": [5, True, {"x": 1}],
        "null": [5, "x", True],
    }[kind]


def _refuses(check: ArgumentCheck, value: Any) -> bool:
    try:
        check(value)
    except ValidationError:
        return True
    return False


def _check(request: type[Request], name: str) -> ArgumentCheck:
    return field_check(name, request.model_fields[name])


def test_every_tool_has_one_argument_spec_and_the_same_names() -> None:
    assert [d.name for d in DEFINITIONS] == list(ARGUMENTS)
    for definition in DEFINITIONS:
        request = ARGUMENTS[definition.name]
        assert list(definition.parameters["properties"]) == list(request.model_fields), definition.name
        required = [n for n, info in request.model_fields.items() if info.is_required()]
        assert sorted(definition.parameters["required"]) == sorted(required), definition.name
        assert definition.parameters["additionalProperties"] is False  # the policy refuses unknown ones


@pytest.mark.parametrize(("tool", "name"), PROPERTIES, ids=[f"{t}.{n}" for t, n in PROPERTIES])
def test_schema_types_and_bounds_match_the_checks(tool: str, name: str) -> None:
    schema = _definition(tool).parameters["properties"][name]
    check = _check(ARGUMENTS[tool], name)
    check(_valid(schema))  # what the schema allows is accepted
    for wrong in _wrong_types(schema):
        assert _refuses(check, wrong), (tool, name, wrong)
    if "enum" in schema:
        for choice in schema["enum"]:
            assert check(choice) == choice
        assert _refuses(check, "not-one-of-them")
    if "minimum" in schema:
        step = 1 if schema["type"] == "integer" else 0.001
        assert _refuses(check, schema["minimum"] - step), (tool, name)
    if "maximum" in schema:
        step = 1 if schema["type"] == "integer" else 0.001
        check(schema["maximum"])
        assert _refuses(check, schema["maximum"] + step), (tool, name)
    if schema.get("minLength"):
        assert _refuses(check, ""), (tool, name)
    if schema.get("format") == "date-time":
        assert _refuses(check, "2025-03-01T09:00:00"), "a time without zone is refused"
    if schema.get("type") == "array":
        assert _refuses(check, [""]) or check([""]) == [], (tool, name)


def test_the_limit_maximum_follows_max_limit() -> None:
    for definition in tool_definitions(default_limit=2, max_limit=3):
        for name, schema in definition.parameters["properties"].items():
            if schema.get("maximum") == 3:
                assert _refuses(_check(tool_arguments(3)[definition.name], name), 4)


# -- selecting the tools ----------------------------------------------------------------------

ONLY = [RECALL_EPISODES, REMEMBER_EPISODE]


def test_only_selects_tools_in_registration_order(tmp_path: Path) -> None:
    names = [d.name for d in tool_definitions(only=ONLY)]
    assert names == [REMEMBER_EPISODE, RECALL_EPISODES]
    assert [t["name"] for t in tool_schemas("anthropic", only=["episode_history"])] == ["episode_history"]
    config = tmp_path / "agent.yaml"
    config.write_text("episodic_memory:\n  max_limit: 9\n")
    selected = tools_for(config, only=ONLY)
    assert [t["function"]["name"] for t in selected] == [REMEMBER_EPISODE, RECALL_EPISODES]
    assert selected[1]["function"]["parameters"]["properties"]["limit"]["maximum"] == 9
    assert len(tools_for(config)) == len(DEFINITIONS)
    assert tools_for({}, only=ONLY) == []  # no section, no tools


@pytest.mark.parametrize("only", [["remember"], [REMEMBER_EPISODE, "forget"], []])
def test_only_refuses_unknown_names_and_an_empty_selection(only: list[str]) -> None:
    with pytest.raises(ValueError, match=r"unknown tool|selects no tool"):
        tool_definitions(only=only)
    with pytest.raises(ValueError, match=r"unknown tool|selects no tool"):
        tools_for({}, only=only)


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[EpisodicMemory]:
    with EpisodicMemory.open(tmp_path / "tools.db", embedder=HashingEmbedder()) as opened:
        yield opened


def test_memory_tools_only_expose_and_run_the_selected_tools(memory: EpisodicMemory) -> None:
    tools = MemoryTools(memory, only=ONLY)
    assert tools.names == [REMEMBER_EPISODE, RECALL_EPISODES]
    assert [s["function"]["name"] for s in tools.schemas()] == tools.names
    saved = tools.handle_tool_call(
        REMEMBER_EPISODE, {"event_type": "fact", "content": "The user lives in Lisbon"}
    )
    assert saved["ok"] is True
    left_out = tools.handle_tool_call("episode_history", {"episode_id": saved["episode"]["id"]})
    assert left_out["ok"] is False
    assert left_out["error"]["type"] == "UnknownTool"
    assert "available: remember_episode, recall_episodes" in left_out["error"]["message"]
    found = tools.handle_tool_call(RECALL_EPISODES, {"query": "where does the user live"})
    assert [e["content"] for e in found["episodes"]] == ["The user lives in Lisbon"]


def test_every_tool_description_ends_a_sentence() -> None:
    for definition in DEFINITIONS:  # a description cut mid-sentence misleads the model that reads it
        assert definition.description.rstrip()[-1] in ".?!)'", (definition.name, definition.description[-40:])
