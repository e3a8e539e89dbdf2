"""Episode recall, session search and the context block run one recall pipeline (issue #19).

Part of the store contract: every test runs on each backend (``tests/backends.py``). With the
default ``embedding_fallback=True`` a failing embedder degrades every ranked read (and
``store_session``) to keywords instead of raising; session search finds keyword matches
anywhere in the owner's windows, not only among the best dense ones.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import pytest
from numpy.typing import NDArray

from memlane import EmbeddingError, EpisodicMemory
from memlane.embeddings.fake import FailingEmbedder
from memlane.tools import MemoryTools
from tests.conftest import MemoryFactory

OWNER = {"agent_id": "support", "user_id": "u-7"}


def _conversation(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}, {"role": "assistant", "content": "Noted."}]


def test_a_failing_embedder_degrades_every_ranked_read_to_keywords(
    make_memory: MemoryFactory, caplog: pytest.LogCaptureFixture
) -> None:
    broken = make_memory(embedder_=FailingEmbedder())
    with caplog.at_level(logging.WARNING, logger="memlane.context"):
        stored = broken.sessions.store_session("s-9", _conversation("my passport renewal is due"), **OWNER)
        episode = broken.remember_episode("note", "passport office opens at nine")
    assert "without vectors" in caplog.text
    assert len(stored.messages) == 2 and episode.embedding_model is None

    (hit,) = broken.recall_episodes("passport")
    assert hit.breakdown is not None and (hit.breakdown.retrieval, hit.breakdown.fallback) == (
        "keyword",
        True,
    )

    (snippet,) = broken.sessions.search_sessions(query="passport renewal", **OWNER)
    assert snippet.session_id == "s-9"
    assert (snippet.breakdown.retrieval, snippet.breakdown.fallback) == ("keyword", True)
    assert snippet.breakdown.dense is None and snippet.breakdown.keyword is not None

    block = broken.sessions.build_context_block("passport", token_budget=500, **OWNER)
    assert {item.kind for item in block.items} == {"conversation", "event"}
    assert all(item.breakdown.fallback for item in block.items)
    text = broken.sessions.build_context("passport", token_budget=500, **OWNER)
    assert "passport renewal" in text and "passport office" in text

    result = MemoryTools(broken, **OWNER).handle_tool_call("get_context", {"query": "passport"})
    assert result["ok"] is True and "passport renewal" in result["text"]


def test_with_the_fallback_off_session_search_and_storing_raise(make_memory: MemoryFactory) -> None:
    strict = make_memory(embedder_=FailingEmbedder(), embedding_fallback=False)
    with pytest.raises(EmbeddingError):
        strict.sessions.store_session("s-1", _conversation("hello"), **OWNER)
    assert strict.sessions.get_session("s-1") is None
    with pytest.raises(EmbeddingError):
        strict.sessions.search_sessions(query="hello", **OWNER)
    with pytest.raises(EmbeddingError):
        strict.sessions.build_context("hello", token_budget=100, **OWNER)


def test_windows_stored_without_vectors_are_keyword_only_for_a_healthy_reader(
    make_memory: MemoryFactory,
) -> None:
    make_memory(embedder_=FailingEmbedder()).sessions.store_session(
        "s-1", _conversation("the quokka escaped from the zoo"), **OWNER
    )
    healthy = make_memory()
    # min_relevance=0: a window without a vector has no cosine, so the default relevance floor
    # (on the calibrated cosine, sessions.context.match_strength) leaves it out of a hybrid search
    (snippet,) = healthy.sessions.search_sessions(query="quokka", min_relevance=0, **OWNER)
    assert snippet.session_id == "s-1" and not snippet.breakdown.fallback
    assert snippet.breakdown.dense is None and snippet.breakdown.keyword is not None
    assert make_memory(retrieval="dense").sessions.search_sessions(query="quokka", **OWNER) == []


class _AxisEmbedder:
    """Texts about the zoo's quokka point opposite to every query; the filler turns at 60 degrees
    from the queries (cosine 0.5: similar, not identical)."""

    model_id = "axis-4"
    dims = 4

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        for i, text in enumerate(texts):
            if "quokka" in text and "zoo" in text:
                out[i, 0] = -1.0
            elif "filler" in text:
                out[i, :2] = (0.5, 0.8660254)
            else:
                out[i, 0] = 1.0
        return out


def test_session_search_finds_keyword_matches_beyond_the_dense_pool(make_memory: MemoryFactory) -> None:
    memory = make_memory(embedder_=_AxisEmbedder())
    filler = [
        message
        for i in range(210)
        for message in _conversation(f"filler turn number {i} about the weather and the trains")
    ]
    memory.sessions.store_session("s-filler", filler, **OWNER)
    memory.sessions.store_session("s-zoo", _conversation("we saw a quokka at the zoo"), **OWNER)
    # The quokka window is the least similar of 211 to the query's vector, outside the dense
    # pool of 200; the keyword index still finds it, and the hybrid fusion ranks an exact
    # keyword match above turns that are only similar. (min_relevance=0: the
    # default floor on the cosine would drop a keyword-only find; this checks where the
    # candidates come from, tests/contract/test_relevance_floor_contract.py checks the floor.)
    snippets = memory.sessions.search_sessions(query="quokka", top_k=3, min_relevance=0, **OWNER)
    (zoo,) = [s for s in snippets if s.session_id == "s-zoo"]
    assert (
        zoo.breakdown.retrieval == "hybrid"
        and zoo.breakdown.keyword is not None
        and zoo.breakdown.keyword > 0.0
    )


def test_session_search_uses_the_configured_retrieval(make_memory: MemoryFactory) -> None:
    memory = make_memory()
    memory.sessions.store_session("s-1", _conversation("the invoice for March is overdue"), **OWNER)
    for retrieval in ("hybrid", "dense", "keyword"):
        reader: EpisodicMemory = make_memory(retrieval=retrieval)
        (snippet,) = reader.sessions.search_sessions(query="overdue invoice", **OWNER)
        assert snippet.breakdown.retrieval == retrieval
