"""The HTTP API keeps the promises of its generated ``/openapi.json``, checked like a client would.

A bounded, seeded schemathesis run (every check: no 5xx, every status code, content type,
header and body conforms to the document, schema-valid data is accepted and invalid data
refused) drives a real uvicorn server over every operation of the document. The document
itself is FastAPI's, generated from the operations' request types and the response models.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the 'server' extra is not installed")
pytest.importorskip("schemathesis", reason="schemathesis (dev group) is not installed")
import schemathesis

from memlane import EpisodicMemory
from memlane.config.file import load_config
from memlane.embeddings.fake import HashingEmbedder
from memlane.server.http import create_app
from memlane.server.inspector.throttle import KeyFailures
from memlane.sessions.messages import message_text
from tests.server.conftest import serve_in_thread

KEY = "openapi-admin-key-0123456789"
SEED = 19
MAX_EXAMPLES = 5
"""Examples per operation and phase: the run stays well under a minute on a busy machine."""

_DB: dict[str, Path] = {}


def _memory() -> EpisodicMemory:
    return EpisodicMemory.open(_DB["path"], embedder=HashingEmbedder())


# The failed-key throttle (429 after DEFAULT_FAILED_KEY_LIMIT unknown keys in a time window; tested in
# tests/reliability/test_hostile_findings.py) never trips here: schemathesis's invalid-auth check sends an
# unknown key to every operation, and whether those land in one window depends on the machine's speed.
APP = create_app(
    _memory,
    load_config({"server": {"api_keys": {KEY: {"tenant": "t", "role": "admin"}}}}).server,
    key_failures=KeyFailures(limit=10**9),
)
CONFIG = schemathesis.config.SchemathesisConfig.from_dict(
    {
        "seed": SEED,
        "auth": {"openapi": {"APIKeyHeader": {"api_key": KEY}, "HTTPBearer": {"bearer": KEY}}},
        "generation": {
            "mode": "all",
            "max-examples": MAX_EXAMPLES,
            "deterministic": True,
            "database": "none",
            "allow-x00": False,  # NUL is refused in every string (README: Input policy): no JSON Schema rule
        },
        "checks": {"enabled": True},
        # examples and fuzzing; the coverage phase's exhaustive boundary sweep would take minutes
        "phases": {"stateful": {"enabled": False}, "coverage": {"enabled": False}},
    }
)
SCHEMA = schemathesis.openapi.from_dict(APP.openapi(), config=CONFIG)


def _integral_as_int(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, dict):
        return {k: _integral_as_int(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integral_as_int(v) for v in value]
    return value


def _semantic_refusal(path: str, body: Any) -> bool:
    """A body whose every field is valid but whose fields contradict each other (a 422 by design,
    not expressible in JSON Schema; tests/server/test_http_routes.py covers those answers): a
    session that ends before it starts, an injection with neither a query nor a user message
    to take one from, or both ``preset`` and ``weights`` (operations.handlers._weights)."""
    if not isinstance(body, dict):
        return False
    if body.get("preset") is not None and body.get("weights") is not None:
        return True
    if path == "/v1/sessions":
        started, ended = body.get("started_at"), body.get("ended_at")
        if isinstance(started, str) and isinstance(ended, str):
            return datetime.fromisoformat(ended) < datetime.fromisoformat(started)
    if path == "/v1/context/inject" and body.get("query") is None:
        users = [m for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") == "user"]
        return not any((message_text(m.get("content")) or "").strip() for m in users)
    return False


@SCHEMA.hook
def filter_body(context: Any, body: Any) -> bool:
    """Leave out the bodies of :func:`_semantic_refusal`."""
    operation = getattr(context, "operation", None)
    return not _semantic_refusal(getattr(operation, "path", ""), body)


@SCHEMA.hook
def map_body(context: Any, body: Any) -> Any:
    """Send ``235.0`` as ``235``: JSON Schema counts an integral float as an integer, memlane's
    input policy does not (``limit: 5.0`` is refused on every interface, README: Input policy)."""
    return _integral_as_int(body)


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    _DB["path"] = tmp_path_factory.mktemp("openapi") / "api.db"
    with serve_in_thread(APP) as url:
        yield url


def test_the_document_is_generated_with_every_error_and_bound() -> None:
    spec = APP.openapi()
    recall = spec["components"]["schemas"]["RecallBody"]["properties"]["limit"]
    assert recall["anyOf"][0]["maximum"] == 50  # the app's max_limit, as the server checks it
    remember = spec["paths"]["/v1/episodes"]["post"]["responses"]
    assert {"201", "400", "401", "422"} <= set(remember)
    compact = {
        ref["$ref"].rsplit("/", 1)[1]
        for ref in remember["201"]["content"]["application/json"]["schema"]["anyOf"]
    }
    assert compact == {"EpisodeOut", "CompactEpisodeOut"}  # detail: "compact" answers what is declared
    inject = spec["components"]["schemas"]["InjectContextBody"]["properties"]
    assert "detail" not in inject  # the route refuses it, so the document does not offer it


@SCHEMA.parametrize()
def test_every_operation_keeps_its_documented_promises(case: Any, base_url: str) -> None:
    case.call_and_validate(base_url=base_url)
