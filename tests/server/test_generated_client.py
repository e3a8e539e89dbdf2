"""A client generated from ``/openapi.json`` by a maintained generator calls every route.

``openapi-python-client`` (dev group) generates a typed client package from the document at
test time, into ``tmp_path`` (nothing generated is committed). The test then calls every
operation of the document through that client against a real uvicorn server and checks that
the client parsed each answer into its declared response model: the document is complete
enough for a generated client to work, not only valid.
"""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the 'server' extra is not installed")
pytest.importorskip("openapi_python_client", reason="openapi-python-client (dev group) is not installed")

from memlane import EpisodicMemory
from memlane.config.file import load_config
from memlane.embeddings.fake import HashingEmbedder
from memlane.server.http import create_app
from tests.server.conftest import serve_in_thread

KEY = "generated-client-admin-key-0123"
PACKAGE = "memlane_generated_client"


def _generate(document: dict[str, Any], where: Path) -> str:
    """Generate the client package ``PACKAGE`` into ``where``; the generator's output."""
    (where / "openapi.json").write_text(json.dumps(document), encoding="utf-8")
    (where / "generator.yaml").write_text(
        f"post_hooks: []\npackage_name_override: {PACKAGE}\n", encoding="utf-8"
    )
    argv = [sys.executable, "-m", "openapi_python_client", "generate", "--meta", "none"]
    done = subprocess.run(
        [*argv, "--path", "openapi.json", "--output-path", PACKAGE, "--config", "generator.yaml"],
        cwd=where,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    return output


@pytest.fixture
def client_package(tmp_path: Path) -> Iterator[tuple[ModuleType, dict[str, Any], str]]:
    """The generated package, the document it came from, and the generator's output."""
    app = create_app(lambda: None, load_config({"server": {"api_keys": {KEY: "t"}}}).server)
    document = app.openapi()
    output = _generate(document, tmp_path)
    sys.path.insert(0, str(tmp_path))
    try:
        yield importlib.import_module(PACKAGE), document, output
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(f"{PACKAGE}.")]:
            del sys.modules[name]


def _operations(document: dict[str, Any]) -> dict[str, str]:
    """operationId -> "METHOD path" of every operation in the document."""
    return {
        op["operationId"]: f"{method.upper()} {path}"
        for path, item in document["paths"].items()
        for method, op in item.items()
    }


def _endpoint(package: ModuleType, operation_id: str) -> ModuleType:
    """The generated module of one operation (``<package>.api.<tag>.<operation id, snake case>``)."""
    api = Path(package.__file__ or "").parent / "api"
    (found,) = list(api.glob(f"*/{re.sub('_+', '_', operation_id)}.py"))
    return importlib.import_module(f"{package.__name__}.api.{found.parent.name}.{found.stem}")


def test_a_generated_client_calls_every_route(
    client_package: tuple[ModuleType, dict[str, Any], str], tmp_path: Path
) -> None:
    package, document, output = client_package
    assert "will not be generated" not in output and "Unable to process" not in output, output
    models = importlib.import_module(f"{package.__name__}.models")
    app = create_app(
        lambda: EpisodicMemory.open(tmp_path / "api.db", embedder=HashingEmbedder()),
        load_config({"server": {"api_keys": {KEY: {"tenant": "t", "role": "admin"}}}}).server,
    )
    called: dict[str, int] = {}

    with serve_in_thread(app) as url:
        client = package.AuthenticatedClient(base_url=url, token=KEY)

        def call(operation_id: str, status: int = 200, **kwargs: Any) -> Any:
            response = _endpoint(package, operation_id).sync_detailed(client=client, **kwargs)
            assert response.status_code == status, (operation_id, response.status_code, response.content)
            called[operation_id] = response.status_code
            return response.parsed

        _call_every_route(call, models)

    assert set(called) == set(_operations(document)), sorted(set(_operations(document)) - set(called))


def _call_every_route(call: Callable[..., Any], models: ModuleType) -> None:
    body = models.__dict__
    assert call("health_health_get").status == "ok"
    lisbon = call(
        "remember_v1_episodes_post",
        201,
        body=body["RememberBody"].from_dict(
            {"event_type": "fact", "content": "The user lives in Paris", "tags": ["home"], "importance": 6}
        ),
    )
    episode_id = lisbon.id
    call(
        "remember_v1_episodes_post",
        201,
        body=body["RememberBody"].from_dict({"event_type": "preference", "content": "Window seat, always"}),
    )
    assert len(call("list_episodes_v1_episodes_get", limit=10).episodes) == 2
    recalled = call(
        "recall_v1_recall_post", body=body["RecallBody"].from_dict({"query": "where does the user live"})
    )
    assert recalled.hits and recalled.hits[0].id == episode_id
    assert call("get_episode_v1_episodes__episode_id__get", episode_id=episode_id).content.endswith("Paris")
    call("export_v1_export_get")  # NDJSON: the generator leaves the body unparsed (not JSON)
    moved = call(
        "supersede_v1_episodes__episode_id__supersede_post",
        201,
        episode_id=episode_id,
        body=body["SupersedeBody"].from_dict({"event_type": "fact", "content": "The user lives in Lisbon"}),
    )
    history = call("history_v1_episodes__episode_id__history_get", episode_id=moved.episode.id)
    assert {e.content for e in history.episodes} == {"The user lives in Paris", "The user lives in Lisbon"}
    call(
        "contradictions_v1_contradictions_post",
        body=body["ContradictionsBody"].from_dict({"text": "Lives in Rome"}),
    )
    messages = [
        {"role": "user", "content": "I am flying to Tokyo next week"},
        {"role": "assistant", "content": "Noted: Tokyo next week."},
    ]
    stored = call(
        "store_session_v1_sessions_post",
        201,
        body=body["StoreSessionBody"].from_dict({"session_id": "chat-1", "messages": messages}),
    )
    assert stored.session_id == "chat-1" and len(stored.messages) == 2
    assert [s.session_id for s in call("recent_sessions_v1_sessions_get").sessions] == ["chat-1"]
    searched = call(
        "search_sessions_v1_sessions_search_post",
        body=body["SearchSessionsBody"].from_dict({"query": "Tokyo"}),
    )
    assert searched.snippets
    assert call("get_session_v1_sessions__session_id__get", session_id="chat-1").session_id == "chat-1"
    context = call(
        "context_v1_context_post",
        body=body["ContextBody"].from_dict({"query": "trip", "token_budget": 500, "min_relevance": 0}),
    )
    assert "Tokyo" in context.text
    injected = call(
        "inject_context_v1_context_inject_post",
        body=body["InjectContextBody"].from_dict({"messages": [{"role": "user", "content": "Any trips?"}]}),
    )
    assert injected.messages
    assert call("stats_v1_stats_get").active >= 2
    fact = body["RememberFactBody"].from_dict({"subject": "Ana", "predicate": "works_at", "object": "Acme"})
    call("remember_fact_v1_facts_post", 201, body=fact)
    introduced = {"subject": "Acme", "predicate": "partner_of", "object": "Globex"}
    call("remember_fact_v1_facts_post", 201, body=body["RememberFactBody"].from_dict(introduced))
    facts = call("query_facts_v1_facts_query_post", body=body["QueryFactsBody"].from_dict({"entity": "ana"}))
    assert [f.object_ for f in facts.facts] == ["acme"]
    assert len(call("timeline_v1_entities__entity__timeline_get", entity="Ana").facts) == 1
    near = call(
        "neighbours_v1_graph_neighbours_post",
        body=body["NeighboursBody"].from_dict({"entity": "Ana", "depth": 2}),
    )
    assert [(n.entity["id"], n.hops) for n in near.neighbours] == [("ana", 0), ("acme", 1), ("globex", 2)]
    chains = call(
        "paths_v1_graph_paths_post",
        body=body["FindPathsBody"].from_dict({"source": "Ana", "target": "Globex"}),
    )
    assert [[f.predicate for f in chain] for chain in chains.paths] == [["works_at", "partner_of"]]
    call("stats_v1_graph_stats_get")
    call("forget_v1_admin_forget_post", body=body["ForgetBody"].from_dict({"dry_run": True}))
    call("compact_v1_admin_compact_post", body=body["CompactBody"].from_dict({"dry_run": True}))
    call("prune_v1_admin_prune_post", body=body["PruneBody"].from_dict({"dry_run": True}))
    call("delete_session_v1_sessions__session_id__delete", 204, session_id="chat-1")
    call("delete_session_v1_sessions__session_id__delete", 404, session_id="chat-1")
    call("delete_episode_v1_episodes__episode_id__delete", 204, episode_id=moved.episode.id)
