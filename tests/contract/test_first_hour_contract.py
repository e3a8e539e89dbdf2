"""First-hour surprises (#23), on every backend: the empty session-scoped recall hint, list-form
message content, formation twice, and a custom embedder that raises a foreign error."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from numpy.typing import NDArray

from memlane import EmbeddingError, Scope
from memlane.embeddings.fake import HashingEmbedder
from memlane.formation import form_episodes
from tests.conftest import MemoryFactory

HINT_LOGGER = "memlane.recall.methods"


def test_an_empty_session_recall_says_when_other_sessions_match(
    make_memory: MemoryFactory, caplog: pytest.LogCaptureFixture
) -> None:
    make_memory(session_id="chat-1").remember_episode(
        "preference", "User prefers window seats", tags=["travel"]
    )
    chat2 = make_memory(session_id="chat-2")
    with caplog.at_level("WARNING", logger=HINT_LOGGER):
        assert chat2.recall_episodes("window seat") == []
        assert chat2.recall_episodes(tags=["travel"]) == []
    hints = [r for r in caplog.records if r.name == HINT_LOGGER]
    assert len(hints) == 2
    assert "'chat-2'" in hints[0].getMessage() and "scope='tenant'" in hints[0].getMessage()
    caplog.clear()
    with caplog.at_level("WARNING", logger=HINT_LOGGER):
        assert chat2.recall_episodes(tags=["no-such-tag"]) == []  # nothing matches anywhere
        assert make_memory(tenant_id="other", session_id="chat-2").recall_episodes("window") == []
        tenant = make_memory(session_id="chat-2", scope=Scope.TENANT.value)
        assert [h.episode.session_id for h in tenant.recall_episodes("window seat")] == ["chat-1"]
        chat2.remember_episode("note", "The printer on floor 3 is broken")
        # the session has episodes, none relevant enough: no hint about the scope
        assert chat2.recall_episodes("window seat", min_relevance=0.99) == []
    assert not [r for r in caplog.records if r.name == HINT_LOGGER]


def test_list_form_content_comes_back_as_given(make_memory: MemoryFactory) -> None:
    sessions = make_memory().sessions
    content = [
        {"type": "text", "text": "I moved to Lisbon"},
        {"type": "image_url", "image_url": {"url": "x"}},
    ]
    sessions.store_session("c-1", [{"role": "user", "content": content}], agent_id="a", user_id="u")
    stored = sessions.get_session("c-1")
    assert stored is not None and stored.messages[0].to_dict() == {"role": "user", "content": content}
    assert sessions.search_sessions("a", "u", "Lisbon")


MESSAGES = [
    {"role": "user", "content": "I always take the window seat on long flights."},
    {"role": "assistant", "content": "Noted: window seats for long flights."},
]


def test_forming_a_session_twice_stores_no_duplicates(make_memory: MemoryFactory) -> None:
    memory = make_memory(scope=Scope.TENANT.value)
    first = form_episodes(memory, MESSAGES, session_id="chat-9")
    assert first and memory.count() == len(first)
    again = form_episodes(memory, MESSAGES, session_id="chat-9")
    assert [e.id for e in again] == [e.id for e in first] and memory.count() == len(first)
    replaced = form_episodes(memory, MESSAGES, session_id="chat-9", replace=True)
    assert memory.count() == len(replaced) and not {e.id for e in replaced} & {e.id for e in first}


class _Unreachable(HashingEmbedder):
    """A custom embedder whose endpoint is down: it raises its own ``ConnectionError``."""

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        raise ConnectionError("connection refused")


def test_a_foreign_embedder_error_falls_back_like_an_embedding_error(make_memory: MemoryFactory) -> None:
    memory = make_memory(embedder_=_Unreachable())
    stored = memory.remember_episode("fact", "The user lives in Lisbon")
    assert stored.embedding_model is None  # stored without a vector
    hits = memory.recall_episodes("Lisbon")
    assert [h.episode.id for h in hits] == [stored.id] and hits[0].breakdown is not None
    assert hits[0].breakdown.fallback is True
    strict = make_memory(embedder_=_Unreachable(), embedding_fallback=False)
    with pytest.raises(EmbeddingError, match="ConnectionError: connection refused") as raised:
        strict.remember_episode("fact", "x")
    assert isinstance(raised.value.__cause__, ConnectionError)
    with pytest.raises(EmbeddingError):
        strict.recall_episodes("Lisbon")


def test_session_owners_say_what_agent_and_user_ids_to_pass(make_memory: MemoryFactory) -> None:
    sessions = make_memory().sessions
    assert sessions.owners() == []
    one = [{"role": "user", "content": "hello"}]
    for session_id, agent, user in [
        ("a", "bot", "ana"),
        ("b", "bot", "ana"),
        ("c", "bot", "bo"),
        ("d", "x", "ana"),
    ]:
        sessions.store_session(session_id, one, agent_id=agent, user_id=user)
    make_memory(tenant_id="other").sessions.store_session("z", one, agent_id="bot", user_id="zed")
    assert sessions.owners() == [("bot", "ana", 2), ("bot", "bo", 1), ("x", "ana", 1)]
