"""One declaration, one error: every bad argument of every operation, on every interface.

The cases are not a hand list: they are enumerated from the declarations
(:data:`memlane.operations.tool_specs.TOOLS` for the tools and MCP,
:data:`memlane.operations.requests.OPERATIONS` for the HTTP bodies). For each field, bad
values are derived from its generated JSON schema (a value of the wrong JSON type, one
just outside each bound, a blank string, an unknown choice, a time without a zone), plus
an unknown argument per operation. Each case goes through every interface that has the
field — the Python facade (when its method takes the argument: read from its signature),
the async facade, ``handle_tool_call``, MCP (a real ``memlane mcp`` stdio process), HTTP
and the CLI (for the options generated from the same fields) — and all must answer the
same error type and message. Nothing is stored by any bad call.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the 'server' extra is not installed")
pytest.importorskip("mcp", reason="the 'mcp' extra is not installed")
from click.testing import CliRunner
from fastapi.testclient import TestClient
from jsonschema import Draft202012Validator

from memlane import AsyncEpisodicMemory, EpisodicMemory
from memlane.cli import cli as cli_main
from memlane.cli.params import FieldType
from memlane.config.file import load_config
from memlane.embeddings.fake import HashingEmbedder
from memlane.errors import MemlaneError, ValidationError
from memlane.operations.fields import Request, bounded, check_request, is_interface_only, tool_parameters
from memlane.operations.requests import OPERATIONS
from memlane.operations.tool_specs import TOOLS
from memlane.server.http import create_app
from memlane.tools import MemoryTools
from memlane.validation import MAX_LIMIT
from tests.mcp_stdio import RawMcpClient

KEY = "parity-admin-key-0123456789"
_TIME = "2025-03-01T09:00:00+00:00"
_MESSAGES = [{"role": "user", "content": "hello"}]


def _valid(schema: dict[str, Any]) -> Any:
    """A value the schema allows (to fill the required arguments around the bad one)."""
    if "enum" in schema:
        return schema["enum"][0]
    if "anyOf" in schema:  # e.g. tags: a list or one string
        return _valid(schema["anyOf"][0])
    kind = schema.get("type")
    if kind == "array":
        items = schema.get("items", {})
        return _MESSAGES if items.get("type") == "object" or "anyOf" in items else ["travel"]
    if schema.get("format") == "date-time":
        return _TIME
    return {"string": "travel", "integer": schema.get("minimum", 1), "number": 0.5, "boolean": True}[kind]


_EXTREME_TIMES = {"far-past": "0001-01-01T00:00:00+14:00", "far-future": "9999-12-31T23:59:59-14:00"}
"""Instants Python's ``datetime`` holds but whose UTC conversion (or arithmetic) overflowed."""
_TIME_CASES_IN_PYTHON = {"no-zone", *_EXTREME_TIMES}
"""The bad date-time values that are the same ``datetime`` in Python (naive or extreme)."""


def _bad_values(schema: dict[str, Any]) -> list[tuple[str, Any]]:
    """(label, value) pairs the schema refuses: wrong types, values just outside each bound."""
    if "anyOf" in schema:  # the bad values of each alternative that every alternative refuses
        alternatives = schema["anyOf"]
        found = {
            (label, repr(value)): (label, value) for alt in alternatives for label, value in _bad_values(alt)
        }
        return [
            (label, value)
            for label, value in found.values()
            if not any(Draft202012Validator(alt).is_valid(value) for alt in alternatives)
        ]
    kind = schema.get("type")
    if "enum" in schema:
        return [("unknown-choice", "nope"), ("wrong-type", 5)]
    if kind == "string" and schema.get("format") == "date-time":
        return [
            ("not-a-time", "next tuesday"),
            ("no-zone", "2025-03-01T09:00:00"),
            ("wrong-type", 5),
            *_EXTREME_TIMES.items(),  # valid ISO 8601, outside memlane's years (#22 item 4)
        ]
    if kind == "string":
        return [("wrong-type", 5), ("blank", " \u200b "), ("surrogate", "a\udc00b")]
    if kind in ("integer", "number"):
        step = 1 if kind == "integer" else 0.5
        found: list[tuple[str, Any]] = [("text", "5"), ("boolean", True)]
        if kind == "integer":
            found.append(("float", 1.5))
        if "minimum" in schema:
            found.append(("below-minimum", schema["minimum"] - step))
        if "exclusiveMinimum" in schema:
            found.append(("at-exclusive-minimum", schema["exclusiveMinimum"]))
        if "maximum" in schema:
            found.append(("above-maximum", schema["maximum"] + step))
            found.append(("huge", 10**30 if kind == "integer" else 1e300))  # #22 item 4: no overflow
        return found
    if kind == "boolean":
        return [("text", "yes"), ("number", 1)]
    if kind == "array":
        return [("wrong-type", 5), ("object", {"a": 1})]
    return [("wrong-type", 5)]


@dataclass(frozen=True)
class Case:
    """One bad value: the operation, the bad field (``None``: an unknown argument), the value."""

    operation: str
    field: str | None
    label: str
    value: Any

    @property
    def id(self) -> str:
        return f"{self.operation}.{self.field or 'unknown'}-{self.label}"

    def arguments(self, request: type[Request]) -> dict[str, Any]:
        """The call for ``request``'s interface: its required arguments, then the bad one."""
        schema = _schema(request)
        out = {name: _valid(schema["properties"][name]) for name in schema["required"]}
        out[self.field or "no_such_argument"] = self.value
        return out


def _schema(request: type[Request]) -> dict[str, Any]:
    return tool_parameters(request, MAX_LIMIT)


def _cases_of(request: type[Request]) -> Iterator[Case]:
    yield Case(request.OPERATION, None, "argument", 1)
    for name, prop in _schema(request)["properties"].items():
        for label, value in _bad_values(prop):
            yield Case(request.OPERATION, name, label, value)


TOOL_REQUESTS = {t.name: t.request for t in TOOLS}
HTTP_BODIES = {b.OPERATION: b for b in OPERATIONS}
CASES = list(
    {
        c.id: c for request in (*TOOL_REQUESTS.values(), *HTTP_BODIES.values()) for c in _cases_of(request)
    }.values()
)

# -- the interfaces -------------------------------------------------------------------------

HTTP_ROUTES = {
    "remember_episode": ("POST", "/v1/episodes"),
    "recall_episodes": ("POST", "/v1/recall"),
    "supersede_episode": ("POST", "/v1/episodes/ep-1/supersede"),
    "find_contradictions": ("POST", "/v1/contradictions"),
    "search_sessions": ("POST", "/v1/sessions/search"),
    "get_context": ("POST", "/v1/context"),
    "inject_context": ("POST", "/v1/context/inject"),
    "store_session": ("POST", "/v1/sessions"),
    "forget": ("POST", "/v1/admin/forget"),
    "compact": ("POST", "/v1/admin/compact"),
    "prune": ("POST", "/v1/admin/prune"),
    "remember_fact": ("POST", "/v1/facts"),
    "query_facts": ("POST", "/v1/facts/query"),
    "neighbours": ("POST", "/v1/graph/neighbours"),
    "find_paths": ("POST", "/v1/graph/paths"),
}
"""Where each operation's body goes (``episode_history`` takes its id in the path: no body)."""


_OWNER = {"agent_id": "default", "user_id": "default"}
_CONTEXT = {**_OWNER, "token_budget": 1000}
_PYTHON = {
    "remember_episode": ("remember_episode", {}, {}),
    "recall_episodes": ("recall_episodes", {}, {}),
    "supersede_episode": ("supersede", {"episode_id": "ep-1"}, {}),
    "episode_history": ("history", {}, {}),
    "find_contradictions": ("find_contradictions", {}, {"text": "episode_or_text"}),
    "search_sessions": ("sessions.search_sessions", _OWNER, {}),
    "get_context": ("sessions.build_context_block", _CONTEXT, {}),
    "inject_context": ("sessions.inject_context", _CONTEXT, {}),
    "store_session": ("sessions.store_session", _OWNER, {}),
    "forget": ("forget", {}, {}),
    "compact": ("compact", {}, {}),
    "prune": ("prune", {}, {}),
    "remember_fact": ("remember_fact", {}, {}),
    "query_facts": ("query_facts", {}, {}),
    "entity_timeline": ("entity_timeline", {}, {}),
    "neighbours": ("neighbours", {}, {}),
    "find_paths": ("find_paths", {}, {}),
}
"""Each operation's facade method (the async twin has the same names), its required keyword
arguments that the interfaces fill in themselves, and the argument names it spells otherwise."""


def _method(memory: Any, operation: str) -> Callable[..., Any]:
    target = memory
    for part in _PYTHON[operation][0].split("."):
        target = getattr(target, part)
    return target  # type: ignore[no-any-return]


def _python_call(memory: Any, operation: str, kwargs: dict[str, Any]) -> Any:
    _, defaults, renamed = _PYTHON[operation]
    arguments = {**defaults, **{renamed.get(k, k): v for k, v in kwargs.items()}}
    return _method(memory, operation)(**arguments)


def _signature_of(operation: str, memory: EpisodicMemory) -> set[str]:
    renamed = {v: k for k, v in _PYTHON[operation][2].items()}
    return {renamed.get(p, p) for p in inspect.signature(_method(memory, operation)).parameters}


def _python_arguments(case: Case, request: type[Request], params: set[str]) -> dict[str, Any] | None:
    """The case as Python keyword arguments, or ``None`` if the Python method lacks the field.

    A date-time field takes a ``datetime`` in Python and ISO 8601 text elsewhere, so only a
    time without a zone and the extreme instants are the same bad value on both (as a naive or
    an extreme ``datetime`` in Python).
    """
    if case.field is None or case.field not in params:
        return None
    if is_interface_only(request.model_fields[case.field]):
        return None
    schema = _schema(request)["properties"]
    if schema[case.field].get("format") == "date-time" and case.label not in _TIME_CASES_IN_PYTHON:
        return None
    out: dict[str, Any] = {}
    for name, value in case.arguments(request).items():
        if schema.get(name, {}).get("format") == "date-time":
            value = datetime.fromisoformat(value)
        out[name] = value
    return out


Answer = tuple[str, str]


def _raised(call: Callable[[], Any]) -> Answer:
    try:
        call()
    except MemlaneError as exc:
        return type(exc).__name__, str(exc)
    return "no error", ""


@dataclass
class Interfaces:
    """Every way in, each on its own SQLite file."""

    root: Path
    python: EpisodicMemory
    tools: MemoryTools
    http: TestClient
    mcp: RawMcpClient

    def answers(self, case: Case) -> dict[str, Answer]:
        answers: dict[str, Answer] = {}
        tool = TOOL_REQUESTS.get(case.operation)
        if tool is not None and (case.field is None or case.field in tool.model_fields):
            arguments = case.arguments(tool)
            answers["tools"] = _tool_answer(self.tools.handle_tool_call(case.operation, arguments))
            answers["mcp"] = _tool_answer(self.mcp.call_tool(case.operation, arguments))
        body = HTTP_BODIES.get(case.operation)
        if body is not None and (case.field is None or case.field in body.model_fields):
            answers["http"] = self._http_answer(case, body)
        request = (
            body if body is not None and (case.field is None or case.field in body.model_fields) else tool
        )
        assert request is not None
        kwargs = _python_arguments(case, request, _signature_of(case.operation, self.python))
        if kwargs is not None:
            answers["python"] = _raised(lambda: _python_call(self.python, case.operation, kwargs))
            answers["async"] = _raised(lambda: asyncio.run(self._async_call(case.operation, kwargs)))
        return answers

    async def _async_call(self, operation: str, kwargs: dict[str, Any]) -> Any:
        twin = AsyncEpisodicMemory(self.python, owns_memory=False)
        try:
            return await _python_call(twin, operation, kwargs)
        finally:
            await twin.close()

    def _http_answer(self, case: Case, body: type[Request]) -> Answer:
        method, path = HTTP_ROUTES[case.operation]
        content = json.dumps(case.arguments(body)).encode("ascii")  # a lone surrogate travels as \\udc00
        response = self.http.request(
            method, path, content=content, headers={"content-type": "application/json"}
        )
        assert response.status_code == 422, (case.id, response.status_code, response.text)
        error = response.json()["error"]
        return error["type"], error["message"]


def _tool_answer(result: dict[str, Any]) -> Answer:
    assert result.get("ok") is False, result
    return result["error"]["type"], result["error"]["message"]


@pytest.fixture(scope="module")
def interfaces(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Interfaces]:
    root = tmp_path_factory.mktemp("parity")
    python = EpisodicMemory.open(root / "python.db", embedder=HashingEmbedder(), tenant_id="t")
    tools_memory = EpisodicMemory.open(root / "tools.db", embedder=HashingEmbedder(), tenant_id="t")
    settings = load_config({"server": {"api_keys": {KEY: {"tenant": "t", "role": "admin"}}}}).server
    app = create_app(
        lambda: EpisodicMemory.open(root / "http.db", embedder=HashingEmbedder()),
        settings,
        max_limit=MAX_LIMIT,
    )
    (root / "mcp.yaml").write_text(
        "memory:\n  path: mcp.db\nepisodic_memory:\n  embedding_provider: hashing\n  tenant_id: t\n"
        f"  max_limit: {MAX_LIMIT}\n",
        encoding="utf-8",
    )
    with (
        TestClient(app, headers={"X-API-Key": KEY}) as http,
        RawMcpClient(root, "--config", str(root / "mcp.yaml")) as mcp,
    ):
        yield Interfaces(root, python, MemoryTools(tools_memory, max_limit=MAX_LIMIT), http, mcp)
        assert python.count() == 0 and tools_memory.count() == 0  # no bad call stored anything
        assert http.get("/v1/episodes").json()["count"] == 0
    python.close()
    tools_memory.close()


def test_the_cases_cover_every_field_of_every_operation() -> None:
    covered = {(c.operation, c.field) for c in CASES}
    for request in (*TOOL_REQUESTS.values(), *HTTP_BODIES.values()):
        for name in request.model_fields:
            assert (request.OPERATION, name) in covered, (request.OPERATION, name)
        assert (request.OPERATION, None) in covered


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_same_bad_value_gets_the_same_error_everywhere(interfaces: Interfaces, case: Case) -> None:
    answers = interfaces.answers(case)
    assert answers, case.id
    assert {kind for kind, _ in answers.values()} == {"ValidationError"}, answers
    if case.field is None:  # each interface lists its own arguments after "takes"
        assert all(m.startswith("unknown argument(s) no_such_argument; ") for _, m in answers.values())
    else:
        assert len({message for _, message in answers.values()}) == 1, answers


# -- the CLI: options generated from the same fields -------------------------------------

_CLI_LABELS = {"below-minimum", "above-maximum", "unknown-choice", "no-zone", "not-a-time", "blank"}
CLI_CASES = [c for c in CASES if c.operation == "recall_episodes" and c.label in _CLI_LABELS]
"""The values that stay bad as command-line text (``5`` is a fine ``--event-type``)."""


@pytest.mark.parametrize("case", CLI_CASES, ids=[c.id for c in CLI_CASES])
def test_the_cli_options_give_the_same_message(interfaces: Interfaces, case: Case) -> None:
    from memlane.cli.episodes import recall

    params = {p.name: p for p in recall.params}
    assert case.field is not None
    param = params.get(case.field)
    if param is None or not isinstance(param.type, FieldType):
        pytest.skip(f"recall has no parameter generated from {case.field}")
    with pytest.raises(ValidationError) as expected:  # the declaration's own answer
        check_request(bounded(HTTP_BODIES[case.operation], MAX_LIMIT), {case.field: case.value})
    message = str(expected.value)
    given = (
        ["recall", str(case.value)]
        if param.name == "query"
        else ["recall", "q", param.opts[0], str(case.value)]
    )
    db = str(interfaces.root / "python.db")  # an existing database: a bad value is refused before use
    result = CliRunner().invoke(cli_main, ["--db", db, "--embedder", "hashing", "--tenant", "t", *given])
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split()), (message, result.output)
