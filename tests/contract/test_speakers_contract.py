"""The agent-turn discount through the public API, on every backend, with the real bundled model.

A conversation stored the way memlane's turn formation stores one (each turn tagged with its role,
:func:`memlane.formation.raw_turn_episodes`): the assistant's long reply restates the user's standing
instruction and matches a question about it better than the user's own turn does. The default ranking
puts the user's turn first (the reply is discounted, and its breakdown says so); a question addressed to
the assistant ("what did you ...") discounts nothing.
"""

from __future__ import annotations

import pytest

from memlane import EpisodicMemory, LocalEmbedder
from memlane.config.profile import DEFAULT_PROFILE
from memlane.formation import raw_turn_episodes
from tests.conftest import MemoryFactory

USER = "From now on, always format my Python code with black and add type hints."
ASSISTANT = (
    "Understood! From now on I will format all of your Python code with black and add type hints to "
    "every function. Black keeps the code formatting consistent, and type hints on parameters and "
    "return values make the Python code easier to read and check with mypy."
)
MESSAGES = [
    {"role": "user", "content": USER},
    {"role": "assistant", "content": ASSISTANT},
    {"role": "user", "content": "Thanks. Next, can we plan the database schema for the orders table?"},
    {
        "role": "assistant",
        "content": "Sure: an orders table with an id, a customer id, a status and timestamps.",
    },
]


@pytest.fixture
def real(make_memory: MemoryFactory, local_embedder: LocalEmbedder) -> EpisodicMemory:
    memory = make_memory(embedder_=local_embedder)
    memory.remember_episodes(raw_turn_episodes(MESSAGES))
    return memory


def test_the_users_instruction_outranks_the_assistants_restatement(real: EpisodicMemory) -> None:
    hits = real.recall_episodes(
        "How should the Python code be formatted, with black and type hints?", limit=4
    )
    by = {h.episode.content: h.breakdown for h in hits}
    user, agent = by[USER], by[ASSISTANT]
    assert user is not None and agent is not None
    assert [h.episode.content for h in hits][:2] == [USER, ASSISTANT]
    d = DEFAULT_PROFILE.speakers.agent_discount
    assert agent.agent_discount == d and user.agent_discount is None
    assert agent.relevance / (1 - d) > user.relevance  # undiscounted, the restatement would lead


def test_a_question_to_the_assistant_discounts_nothing(real: EpisodicMemory) -> None:
    hits = real.recall_episodes("How did you say you would format my Python code?", limit=4)
    assert hits and all(h.breakdown is not None and h.breakdown.agent_discount is None for h in hits)
