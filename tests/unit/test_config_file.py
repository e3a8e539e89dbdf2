"""The YAML configuration: parsing, validation messages that name the key, and building from it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from memlane import ConfigError, EpisodicMemory, LocalEmbedder, OpenAIEmbedder, Scope
from memlane.assembly import build_embedder, build_store
from memlane.config import DEFAULT_CONTEXT_MIN_RELEVANCE, config_path_from_env
from memlane.config.file import (
    DEFAULT_MAX_LIMIT,
    EpisodicSettings,
    MemlaneConfig,
    hash_api_key,
    load_config,
)
from memlane.embeddings.fake import HashingEmbedder
from memlane.recall.ranking import PRESETS, RankingWeights

FULL_YAML = """
# an agent's own config, with memlane's sections inside
agent:
  model: some-llm
  temperature: 0.2
memory:
  type: sqlite
  path: ./data/memlane.db
episodic_memory:
  embedding_model: all-MiniLM-L6-v2
  scope: tenant
  default_limit: 7
  max_limit: 20
  retention_days: 90
  prune_probability: 0.5
  decay_per_day: 0.99
  weights: specific_question
  tenant_id: acme
  session_id: chat-1
server:
  host: 0.0.0.0
  port: 9000
  max_request_bytes: 65536
  api_keys:
    "sha256:{digest}": acme
    "a-plaintext-key-of-24-chars": globex
"""

KEY = "mlk_test-key-for-acme-0123456789"


def write(tmp_path: Path, text: str, name: str = "memlane.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_full_file_is_parsed(tmp_path: Path) -> None:
    path = write(tmp_path, FULL_YAML.format(digest=hash_api_key(KEY).removeprefix("sha256:")))
    config = load_config(path)
    assert config.source == path.resolve()
    assert config.store.type == "sqlite"
    assert config.store.path == str((tmp_path / "data" / "memlane.db").resolve())  # relative to the file
    episodic = config.episodic
    assert episodic is not None
    assert (episodic.embedding_model, episodic.embedding_provider) == ("all-MiniLM-L6-v2", "local")
    assert episodic.memory.scope is Scope.TENANT
    assert episodic.memory.default_limit == 7
    assert episodic.max_limit == 20
    assert episodic.memory.retention_days == 90
    assert episodic.memory.prune_probability == 0.5
    assert episodic.memory.decay_per_day == 0.99
    assert episodic.memory.ranking_weights == PRESETS["specific_question"]
    assert (episodic.tenant_id, episodic.session_id) == ("acme", "chat-1")
    server = config.server
    assert (server.host, server.port, server.max_request_bytes) == ("0.0.0.0", 9000, 65536)
    assert server.tenant_for_key(KEY) == "acme"
    assert server.tenant_for_key("a-plaintext-key-of-24-chars") == "globex"
    assert server.tenant_for_key("a-plaintext-key-of-24-charz") is None
    assert server.tenant_for_key("") is None


def test_defaults_without_any_section() -> None:
    config = load_config({})
    assert config == MemlaneConfig()
    assert config.episodic is None  # no tools
    assert config.memory_config.scope is Scope.SESSION
    assert config.episodic_or_default.max_limit == DEFAULT_MAX_LIMIT
    assert config.server.api_keys == ()


def test_empty_file_and_empty_section(tmp_path: Path) -> None:
    assert load_config(write(tmp_path, "")).episodic is None
    present = load_config(write(tmp_path, "episodic_memory:\n", "b.yaml"))
    assert present.episodic == EpisodicSettings()  # YAML null: present, every default
    assert load_config({"episodic_memory": False}).episodic is None  # explicitly off


def test_a_loaded_config_passes_through() -> None:
    config = load_config({"episodic_memory": {"scope": "global"}})
    assert load_config(config) is config


def test_the_context_relevance_floor_is_a_config_key() -> None:
    default = load_config({"episodic_memory": None}).memory_config.context_min_relevance
    assert default == DEFAULT_CONTEXT_MIN_RELEVANCE > 0
    config = load_config({"episodic_memory": {"context_min_relevance": 0.2}})
    assert config.memory_config.context_min_relevance == 0.2


def test_weights_as_a_mapping() -> None:
    config = load_config({"episodic_memory": {"weights": {"relevance": 2, "recency": 1}}})
    assert config.memory_config.ranking_weights == RankingWeights(2.0, 1.0, 0.0)


def test_mapping_paths_are_relative_to_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert load_config({"memory": {"path": "x.db"}}).store.path == str(tmp_path.resolve() / "x.db")
    assert load_config({"memory": {"path": ":memory:"}}).store.path == ":memory:"


def test_missing_path_falls_back_to_the_environment_then_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMLANE_DB", "/tmp/from-env.db")
    assert load_config({}).store.sqlite_path() == "/tmp/from-env.db"
    monkeypatch.delenv("MEMLANE_DB")
    assert load_config({}).store.sqlite_path() == "memlane.db"


def test_config_path_from_env() -> None:
    assert config_path_from_env({"MEMLANE_CONFIG": "/etc/memlane.yaml"}) == "/etc/memlane.yaml"
    assert config_path_from_env({}) is None


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"episodic_memory": {"scope": "team"}}, "episodic_memory.scope: must be one of"),
        ({"episodic_memory": {"default_limit": 0}}, "episodic_memory.default_limit: must be a positive"),
        ({"episodic_memory": {"default_limit": "5"}}, "episodic_memory.default_limit:"),
        ({"episodic_memory": {"retention_days": -1}}, "episodic_memory.retention_days: must be a positive"),
        ({"episodic_memory": {"prune_probability": 2}}, "episodic_memory.prune_probability: must be in"),
        ({"episodic_memory": {"decay_per_day": 0}}, "episodic_memory.decay_per_day: must be in"),
        (
            {"episodic_memory": {"context_min_relevance": 1.5}},
            "episodic_memory.context_min_relevance: must be a number in [0, 1]",
        ),
        ({"episodic_memory": {"weights": "fastest"}}, "episodic_memory.weights: unknown weight preset"),
        ({"episodic_memory": {"weights": {"speed": 1}}}, "episodic_memory.weights: unknown weight keys"),
        ({"episodic_memory": {"max_limit": 0}}, "episodic_memory.max_limit: must be >= 1"),
        ({"episodic_memory": {"default_limit": 9, "max_limit": 8}}, "episodic_memory.max_limit: must be >="),
        (
            {"episodic_memory": {"scop": "session"}},
            "episodic_memory.scop: unknown key (did you mean 'scope'?)",
        ),
        ({"episodic_memory": ["scope"]}, "episodic_memory: must be a mapping"),
        ({"episodic_memory": {"tenant_id": "  "}}, "episodic_memory.tenant_id:"),
        ({"episodic_memory": {"embedding_model": "bert-base"}}, "episodic_memory.embedding_model: unknown"),
        (
            {"episodic_memory": {"embedding_model": "text-embedding-3-small", "embedding_provider": "local"}},
            "episodic_memory.embedding_model: the local provider only runs",
        ),
        (
            {"episodic_memory": {"embedding_provider": "cohere"}},
            "episodic_memory.embedding_provider: must be",
        ),
        ({"episodic_memory": {"embedding_dims": 128}}, "episodic_memory.embedding_dims: not configurable"),
        (
            {"episodic_memory": {"embedding_model": "my-model", "embedding_provider": "openai"}},
            "episodic_memory.embedding_dims: dims is required",
        ),
        ({"episodic_memory": {"embedding_base_url": "http://x"}}, "episodic_memory.embedding_base_url: only"),
        (
            {"memory": {"type": "mysql"}},
            "memory.type: must be one of ['sqlite', 'postgres', 'redis', 'sliding_window',",
        ),
        ({"memory": {"type": "postgres"}}, "memory.dsn: required with memory.type: postgres"),
        ({"memory": {"type": "postgres", "dsn": "x", "path": "a.db"}}, "memory.path: only valid with"),
        ({"memory": {"dsn": "postgresql://x"}}, "memory.dsn: only valid with memory.type: postgres"),
        ({"memory": {"path": 5}}, "memory.path: must be a non-empty string"),
        ({"memory": {"paht": "x.db"}}, "memory.paht: unknown key (did you mean 'path'?)"),
        ({"server": {"port": 70000}}, "server.port: must be >= 0 and <= 65535"),
        ({"server": {"port": True}}, "server.port: must be an integer"),
        ({"server": {"max_request_bytes": 10}}, "server.max_request_bytes: must be >= 1024"),
        ({"server": {"api_keys": ["k"]}}, "server.api_keys: must be a mapping"),
        (
            {"server": {"api_keys": {"short": "acme"}}},
            "server.api_keys: entry #1 (tenant 'acme'): a plaintext",
        ),
        (
            {"server": {"api_keys": {"sha256:abc": "acme"}}},
            "server.api_keys: entry #1 (tenant 'acme'): 'sha256:'",
        ),
        ({"server": {"api_keys": {"k" * 20: ""}}}, "server.api_keys: entry #1: tenant id must be"),
        (
            {"server": {"api_keys": {"k" * 20: "a", hash_api_key("k" * 20): "b"}}},
            "server.api_keys: entry #2 (tenant 'b'): the same key is also given to tenant 'a'",
        ),
    ],
)
def test_invalid_values_name_the_key(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as excinfo:
        load_config(data)
    assert str(excinfo.value).startswith(message), str(excinfo.value)


def test_errors_never_echo_an_api_key() -> None:
    secret = "super-secret-but-short"[:12]
    with pytest.raises(ConfigError) as excinfo:
        load_config({"server": {"api_keys": {secret: "acme"}}})
    assert secret not in str(excinfo.value)


def test_plaintext_keys_are_accepted_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    config = load_config({"server": {"api_keys": {"p" * 16: "acme"}}})
    assert config.server.tenant_for_key("p" * 16) == "acme"
    assert "plaintext" in caplog.text
    assert "p" * 16 not in caplog.text


def test_file_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "missing.yaml")
    with pytest.raises(ConfigError, match="invalid YAML"):
        load_config(write(tmp_path, "episodic_memory: [unclosed\n"))
    with pytest.raises(ConfigError, match="top level must be a mapping"):
        load_config(write(tmp_path, "- a\n- b\n", "list.yaml"))
    with pytest.raises(ConfigError, match="must be a file path or a mapping"):
        load_config(42)  # type: ignore[arg-type]


def test_embedding_model_names_select_the_provider() -> None:
    def embedder(**section: Any) -> object:
        return build_embedder(load_config({"episodic_memory": section}).episodic)

    assert isinstance(embedder(), LocalEmbedder)
    assert isinstance(build_embedder(None), LocalEmbedder)
    assert isinstance(embedder(embedding_model="sentence-transformers/all-MiniLM-L6-v2"), LocalEmbedder)
    small = embedder(embedding_model="text-embedding-3-small")
    assert isinstance(small, OpenAIEmbedder)
    assert small.model_id == "openai:text-embedding-3-small@1536"
    short = embedder(embedding_model="openai:text-embedding-3-large", embedding_dims=256)
    assert short.model_id == "openai:text-embedding-3-large@256"  # type: ignore[attr-defined]
    local_server = embedder(
        embedding_model="nomic-embed-text",
        embedding_provider="openai",
        embedding_dims=768,
        embedding_base_url="http://127.0.0.1:8080/v1",
    )
    assert local_server.model_id == "openai:nomic-embed-text@768"  # type: ignore[attr-defined]
    hashing = embedder(embedding_provider="hashing", embedding_dims=32)
    assert isinstance(hashing, HashingEmbedder)
    assert hashing.dims == 32


def test_from_config_opens_the_configured_memory(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "memory:\n  path: mem.db\n"
        "episodic_memory:\n  embedding_provider: hashing\n  scope: tenant\n  default_limit: 2\n"
        "  tenant_id: acme\n  session_id: s1\n",
    )
    with EpisodicMemory.from_config(path) as memory:
        assert (memory.tenant_id, memory.session_id) == ("acme", "s1")
        assert memory.config.scope is Scope.TENANT
        assert memory.embedder.model_id == "hashing-64"
        for n in range(3):
            memory.remember_episode("note", f"episode number {n}")
        assert len(memory.recall_episodes("episode")) == 2  # default_limit
    assert (tmp_path / "mem.db").exists()
    with EpisodicMemory.from_config(path, tenant_id="other", session_id="s9") as memory:
        assert (memory.tenant_id, memory.session_id) == ("other", "s9")
        assert memory.count() == 0  # tenant scope: another tenant sees nothing


def test_from_config_with_a_mapping_and_an_injected_embedder(tmp_path: Path) -> None:
    embedder = HashingEmbedder()
    with EpisodicMemory.from_config(
        {"memory": {"path": str(tmp_path / "m.db")}}, embedder=embedder, tenant_id="t"
    ) as memory:
        assert memory.embedder is embedder
        assert memory.tenant_id == "t"
        assert memory.config.scope is Scope.SESSION


def test_from_config_with_an_invalid_config_names_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^episodic_memory\.scope: "):
        EpisodicMemory.from_config({"episodic_memory": {"scope": "everyone"}})


def test_postgres_without_the_backend_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "memlane.stores.postgres", None)  # makes the import fail
    config = load_config({"memory": {"type": "postgres", "dsn": "postgresql://localhost/x"}})
    with pytest.raises(ConfigError, match=r"pip install 'memlane\[postgres\]'"):
        build_store(config.store)


def test_from_config_opens_a_postgres_store(pg_url: str, pg_schema: str) -> None:
    """``memory.type: postgres`` reaches the real server (fixtures from tests/pg_server.py)."""
    config = {
        "memory": {"type": "postgres", "dsn": pg_url, "schema": pg_schema},
        "episodic_memory": {"embedding_provider": "hashing", "tenant_id": "acme"},
    }
    with EpisodicMemory.from_config(config) as memory:
        assert type(memory.store).__name__ == "PostgresStore"
        stored = memory.remember_episode("note", "stored in postgres")
        assert [h.episode.id for h in memory.recall_episodes("postgres")] == [stored.id]


SEED_YAML = """
agent:
  model: some-llm
memory:
  type: {memory_type}
  max_messages: 40
  shared_scope: team
  run_log_retention_days: 14
rag:
  embedding_model: text-embedding-3-small
episodic_memory:
  scope: tenant
"""


@pytest.mark.parametrize("memory_type", ["redis", "sliding_window", "buffer", "custom"])
def test_a_seed_shaped_file_with_a_host_memory_type_makes_episodic_memory_a_no_op(
    tmp_path: Path, memory_type: str
) -> None:
    from memlane.tools import tools_for

    path = write(tmp_path, SEED_YAML.format(memory_type=memory_type))
    config = load_config(path)
    assert config.store.type == memory_type and config.store.host_managed
    assert config.episodic is None
    assert tools_for(path, "openai") == [] and tools_for(path, "anthropic") == []
    with pytest.raises(ConfigError, match=r"^memory\.type: .*no-op"):
        EpisodicMemory.from_config(path)
    assert not list(tmp_path.glob("*.db"))  # nothing was created


def test_the_host_memory_keys_are_accepted_with_memlanes_own_store(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, SEED_YAML.format(memory_type="sqlite")))
    assert config.store.type == "sqlite" and not config.store.host_managed
    assert config.episodic is not None and config.episodic.memory.scope == Scope.TENANT


def test_the_embedding_model_defaults_to_rags(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, SEED_YAML.format(memory_type="sqlite")))
    assert config.episodic is not None
    assert (config.episodic.embedding_model, config.episodic.embedding_provider) == (
        "text-embedding-3-small",
        "openai",
    )
    own = load_config(
        {
            "rag": {"embedding_model": "text-embedding-3-small"},
            "episodic_memory": {"embedding_provider": "hashing"},
        }
    )
    assert own.episodic is not None and own.episodic.embedding_provider == "hashing"
    explicit = load_config(
        {
            "rag": {"embedding_model": "text-embedding-3-small"},
            "episodic_memory": {"embedding_model": "all-MiniLM-L6-v2"},
        }
    )
    assert explicit.episodic is not None and explicit.episodic.embedding_provider == "local"
    with pytest.raises(ConfigError, match=r"^episodic_memory\.embedding_model: .*from rag\.embedding_model"):
        load_config({"rag": {"embedding_model": "bge-small"}, "episodic_memory": None})


def test_a_misspelt_section_is_named(caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(ConfigError, match=r"^episodic_memroy: .*did you mean 'episodic_memory'"):
        load_config({"episodic_memroy": {"scope": "tenant"}})
    with caplog.at_level("WARNING", logger="memlane.config.file"):
        config = load_config({"memroy": {"type": "sqlite"}, "sever": {}, "agent": {}, "tools": []})
    assert config.episodic is None
    assert "did you mean 'memory'" in caplog.text and "did you mean 'server'" in caplog.text
    assert "agent" not in caplog.text and "tools" not in caplog.text
