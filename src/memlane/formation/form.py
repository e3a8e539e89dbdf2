"""``form_episodes``: extract facts and a summary from a conversation and remember them in one batch."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memlane.errors import ValidationError
from memlane.formation.conversation import conversation_turns
from memlane.formation.extract import DEFAULT_MAX_CHUNK_CHARS, extract_facts
from memlane.formation.llm import ChatLLM, OnLLMError, check_on_llm_error
from memlane.formation.summarize import summarize_session
from memlane.models import Episode, Scope
from memlane.validation import check_identifier

if TYPE_CHECKING:
    from memlane.memory import EpisodeInput, EpisodicMemory

logger = logging.getLogger(__name__)

__all__ = ["form_episodes", "previous_formation"]


def previous_formation(memory: EpisodicMemory, session_id: str) -> list[Episode]:
    """The episodes an earlier formation stored from ``session_id`` (their provenance names it).

    Args:
        memory: The memory (its tenant); the episodes are looked up in session ``session_id``.
        session_id: The conversation's session id.

    Returns:
        Those episodes, oldest first; empty if the session was never formed.

    Raises:
        ValidationError: a bad ``session_id``. StoreError: the store failed.
    """
    in_session = _in_session(memory, session_id)
    return [
        episode
        for episode in in_session.iter_episodes()
        if isinstance(episode.metadata.get("formation"), dict)
        and episode.metadata["formation"].get("source_session_id") == session_id
    ]


def _in_session(memory: EpisodicMemory, session_id: str) -> EpisodicMemory:
    config = dataclasses.replace(memory.config, scope=Scope.SESSION.value)
    return memory.with_context(session_id=session_id, config=config)


def form_episodes(  # noqa: PLR0913  (keyword-only options = `memlane form` flags)
    memory: EpisodicMemory,
    messages: Sequence[Mapping[str, Any]],
    *,
    llm: ChatLLM | None = None,
    session_id: str | None = None,
    summarize: bool = True,
    extract: bool = True,
    on_llm_error: OnLLMError = "raise",
    summary_importance: float | None = None,
    max_chunk_chars: int = DEFAULT_MAX_CHUNK_CHARS,
    replace: bool = False,
) -> list[Episode]:
    """Form episodes from a conversation and remember them atomically.

    Runs :func:`~memlane.formation.extract_facts` and/or
    :func:`~memlane.formation.summarize_session` (with ``llm``, or their deterministic
    fallbacks without it), then stores everything with one
    :meth:`EpisodicMemory.remember_episodes` call: one embedder call, one transaction.
    Every model call happens before that call, so a failure stores nothing.

    Args:
        memory: Where to remember (its tenant; see ``session_id`` for the session).
        messages: OpenAI chat messages (see :mod:`memlane.formation.conversation`).
        llm: A chat model (e.g. :class:`~memlane.formation.OpenAICompatibleLLM`), or
            ``None`` for deterministic formation: raw turns plus an extractive summary.
        session_id: The conversation's session id. Recorded as ``source_session_id`` in
            every episode's provenance, and the episodes are stored in that session;
            ``None`` stores them in ``memory``'s session with no source recorded.
        summarize: Add one ``session_summary`` episode.
        extract: Add the extracted facts (or, without a model, the raw turns).
        on_llm_error: ``"raise"`` (default: nothing is stored), or ``"fallback"``: the
            failed part is formed deterministically instead, with the failure and the raw
            replies recorded under ``metadata["formation"]["llm_error"]``.
        summary_importance: Importance of the summary episode, 1-10, or ``None`` (unrated).
        max_chunk_chars: Transcript characters per extraction request, >= 200.
        replace: With ``session_id``, when the session was formed before
            (:func:`previous_formation`): ``False`` (default) forms and stores nothing and
            returns the earlier episodes (a second call is idempotent, like ``memlane form``);
            ``True`` stores the new episodes, then deletes the earlier ones.

    Returns:
        The stored episodes: facts (or turns) in conversation order, then the summary (or
        the earlier formation's episodes, see ``replace``). Empty, and nothing stored, when
        the conversation has no user/assistant text.

    Raises:
        ValidationError: malformed messages or arguments (e.g. both ``summarize`` and
            ``extract`` false).
        MalformedOutputError: a reply was malformed twice (``on_llm_error="raise"``).
        FormationError: a request failed (``on_llm_error="raise"``).
        EmbeddingError, StoreError: as for :meth:`EpisodicMemory.remember_episodes`.
    """
    if not (summarize or extract):
        raise ValidationError("form_episodes needs summarize=True or extract=True")
    policy = check_on_llm_error(on_llm_error)
    source = None if session_id is None else check_identifier(session_id, "session_id")
    if not conversation_turns(messages):
        return []
    earlier = [] if source is None else previous_formation(memory, source)
    if earlier and not replace:
        logger.info("session %r was already formed (%d episodes): nothing stored", source, len(earlier))
        return earlier
    items: list[EpisodeInput] = []
    if extract:
        items.extend(
            extract_facts(
                messages, llm=llm, session_id=source, max_chunk_chars=max_chunk_chars, on_llm_error=policy
            )
        )
    if summarize:
        items.append(
            summarize_session(
                messages, llm=llm, session_id=source, importance=summary_importance, on_llm_error=policy
            )
        )
    if source is not None:
        items = [dataclasses.replace(item, session_id=source) for item in items]
    stored = memory.remember_episodes(items)
    if earlier:
        in_session = _in_session(memory, earlier[0].session_id)
        for episode in earlier:
            in_session.delete_episode(episode.id)
    return stored
