"""Memory formation: turn a conversation into episodes, with an LLM or deterministically.

* :func:`extract_facts` — event episodes (``event_type``, ``content``, ``tags``,
  ``importance``) from a conversation; without a model, one ``conversation_turn``
  episode per turn.
* :func:`summarize_session` — one ``session_summary`` episode; without a model, an
  extractive (SumBasic) summary.
* :func:`form_episodes` — both, remembered in one atomic batch.
* :func:`form_facts` — triples for the knowledge graph (confidence >= 0.7, importance >= 5),
  stored with ``remember_fact``; idempotent per source episode or session.

Models: any OpenAI-compatible chat endpoint through :class:`OpenAICompatibleLLM`
(``openai`` extra; ``base_url`` for local servers), or anything implementing
:class:`ChatLLM`. Replies must match a JSON schema; a malformed reply is retried once and
then raised as :class:`~memlane.errors.MalformedOutputError` with the raw text kept
(or, with ``on_llm_error="fallback"``, replaced by the deterministic method with the
failure recorded). Without a model nothing needs a network or a paid service.

Every formed episode records its provenance in ``metadata["formation"]``::

    {"method": "llm" | "raw_turn" | "extractive", "model": ..., "prompt_version": ...,
     "source_session_id": ..., ...}

Example::

    from memlane import EpisodicMemory
    from memlane.formation import OpenAICompatibleLLM, form_episodes

    llm = OpenAICompatibleLLM("gpt-4o-mini")  # or: base_url="http://127.0.0.1:8080/v1", api_key="local"
    with EpisodicMemory.open("memlane.db", tenant_id="acme") as memory:
        episodes = form_episodes(memory, messages, llm=llm, session_id="s-42")
"""

from memlane.errors import FormationError, MalformedOutputError
from memlane.formation.conversation import Turn, conversation_turns
from memlane.formation.extract import (
    EXTRACT_PROMPT_VERSION,
    TURN_EVENT_TYPE,
    extract_facts,
    raw_turn_episodes,
)
from memlane.formation.form import form_episodes, previous_formation
from memlane.formation.llm import ChatLLM, ChatReply, OpenAICompatibleLLM, StructuredOutput, complete_json
from memlane.formation.summarize import (
    SUMMARY_EVENT_TYPE,
    SUMMARY_PROMPT_VERSION,
    extractive_summary,
    summarize_session,
)
from memlane.formation.triples import (
    MIN_IMPORTANCE,
    TRIPLES_PROMPT_VERSION,
    TRIPLES_SCHEMA,
    Triple,
    form_facts,
)

__all__ = [
    "EXTRACT_PROMPT_VERSION",
    "MIN_IMPORTANCE",
    "SUMMARY_EVENT_TYPE",
    "SUMMARY_PROMPT_VERSION",
    "TRIPLES_PROMPT_VERSION",
    "TRIPLES_SCHEMA",
    "TURN_EVENT_TYPE",
    "ChatLLM",
    "ChatReply",
    "FormationError",
    "MalformedOutputError",
    "OpenAICompatibleLLM",
    "StructuredOutput",
    "Triple",
    "Turn",
    "complete_json",
    "conversation_turns",
    "extract_facts",
    "extractive_summary",
    "form_episodes",
    "form_facts",
    "previous_formation",
    "raw_turn_episodes",
    "summarize_session",
]
