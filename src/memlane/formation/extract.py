"""Fact extraction: a conversation becomes event episodes.

With a chat model (:func:`extract_facts` with ``llm=``), the transcript is sent in
chunks of whole turns with a worked example, and the model answers with JSON matching
:data:`FACTS_SCHEMA`: a list of facts, each with ``event_type``, ``content``, ``tags``
and ``importance``. Replies are validated and retried once by
:func:`memlane.formation.llm.complete_json`; a fact that breaks memlane's own rules
(blank content, an over-long event type) rejects the whole reply like a schema error,
so nothing is dropped quietly.

Without a model (``llm=None``) extraction is deterministic and offline: every user and
assistant turn becomes one ``conversation_turn`` episode holding the turn's text
verbatim (:func:`raw_turn_episodes`).

Every episode records its provenance under ``metadata["formation"]`` (see
:func:`memlane.formation.conversation.formation_metadata`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memlane.errors import FormationError, ValidationError
from memlane.formation.conversation import Turn, conversation_turns, formation_metadata, render_transcript
from memlane.formation.llm import (
    ChatLLM,
    OnLLMError,
    OutputRejectedError,
    check_on_llm_error,
    complete_json,
    failure_details,
)
from memlane.memory import EpisodeInput
from memlane.validation import check_identifier, check_text, normalize_tags

__all__ = [
    "DEFAULT_MAX_CHUNK_CHARS",
    "EXTRACT_PROMPT_VERSION",
    "FACTS_SCHEMA",
    "MAX_FACTS_PER_CHUNK",
    "TURN_EVENT_TYPE",
    "chunk_turns",
    "extract_facts",
    "raw_turn_episodes",
]

EXTRACT_PROMPT_VERSION = "extract_facts/1"
"""Version of the extraction prompt and schema; recorded in provenance. Bump on any change."""

TURN_EVENT_TYPE = "conversation_turn"
"""Event type of the verbatim turns stored without a model; the role is a tag."""

MAX_FACTS_PER_CHUNK = 20
"""Most facts one reply may hold (``maxItems``); a longer list is malformed output."""

DEFAULT_MAX_CHUNK_CHARS = 12_000
"""Default transcript characters per extraction request (about 3,000 tokens)."""

FACTS_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "facts": {
            "type": "array",
            "maxItems": MAX_FACTS_PER_CHUNK,
            "items": {
                "type": "object",
                "properties": {
                    "event_type": {"type": "string"},
                    "content": {"type": "string"},
                    "tags": {"type": "array", "maxItems": 8, "items": {"type": "string"}},
                    "importance": {"type": "integer", "minimum": 1, "maximum": 10},
                },
                "required": ["event_type", "content", "tags", "importance"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["facts"],
    "additionalProperties": False,
}
"""JSON schema of an extraction reply (portable subset; see :mod:`memlane.formation.llm`)."""

_SYSTEM_PROMPT = """\
You extract durable facts from a conversation between a user and an assistant, for the \
assistant's long-term memory. Reply with one JSON object and nothing else:
{"facts": [{"event_type": "...", "content": "...", "tags": ["..."], "importance": 5}]}
- event_type: a short snake_case category such as preference, fact, plan, decision or problem.
- content: one self-contained sentence about the user, understandable without the conversation.
- tags: up to 5 lower-case keywords.
- importance: an integer from 1 (trivial) to 10 (critical, such as an allergy or a hard constraint).
Only include facts stated in the conversation. If nothing is worth remembering, reply {"facts": []}."""

_EXAMPLE_TRANSCRIPT = """\
user: I'm flying to Lisbon next week. Please always book me a window seat.
assistant: Noted: a window seat for your Lisbon flight, and for every flight after it."""

_EXAMPLE_REPLY = (
    '{"facts": [{"event_type": "preference", "content": "User always wants a window seat on flights.", '
    '"tags": ["travel", "flights"], "importance": 6}, {"event_type": "plan", "content": '
    '"User is flying to Lisbon next week.", "tags": ["travel", "lisbon"], "importance": 5}]}'
)


def _prompt(transcript: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": _SYSTEM_PROMPT},
        {"role": "user", "content": f"Conversation:\n{_EXAMPLE_TRANSCRIPT}"},
        {"role": "assistant", "content": _EXAMPLE_REPLY},
        {"role": "user", "content": f"Conversation:\n{transcript}"},
    ]


def chunk_turns(turns: Sequence[Turn], max_chars: int) -> list[list[Turn]]:
    """Split turns into consecutive chunks whose rendered transcripts fit ``max_chars``.

    Turns are never split: a single turn longer than ``max_chars`` forms its own chunk.

    Args:
        turns: The turns, in order.
        max_chars: Transcript characters per chunk, >= 1.

    Returns:
        The chunks, in order; empty when ``turns`` is empty.
    """
    chunks: list[list[Turn]] = []
    current: list[Turn] = []
    size = 0
    for turn in turns:
        length = len(turn.role) + 2 + len(turn.text) + 1
        if current and size + length > max_chars:
            chunks.append(current)
            current, size = [], 0
        current.append(turn)
        size += length
    if current:
        chunks.append(current)
    return chunks


def _parse_facts(data: Any) -> list[tuple[str, str, tuple[str, ...], int]]:
    facts = []
    for i, fact in enumerate(data["facts"]):
        try:
            event_type = check_identifier(fact["event_type"], "event_type")
            content = check_text(fact["content"], "content").strip()
            tags = normalize_tags(fact["tags"])
        except ValidationError as exc:
            raise OutputRejectedError(f"$.facts[{i}]: {exc}") from None
        facts.append((event_type, content, tags, int(fact["importance"])))
    return facts


def _turn_episodes(turns: Sequence[Turn], source: str | None, **extra: Any) -> list[EpisodeInput]:
    episodes = []
    for turn in turns:
        details: dict[str, Any] = {"turn_index": turn.index, "role": turn.role}
        if turn.name is not None:
            details["name"] = turn.name
        episodes.append(
            EpisodeInput(
                event_type=TURN_EVENT_TYPE,
                content=turn.text,
                tags=[turn.role],
                metadata=formation_metadata(
                    method="raw_turn",
                    model=None,
                    prompt_version=None,
                    source_session_id=source,
                    **details,
                    **extra,
                ),
            )
        )
    return episodes


def raw_turn_episodes(
    messages: Sequence[Mapping[str, Any]], *, session_id: str | None = None
) -> list[EpisodeInput]:
    """The deterministic fallback: one ``conversation_turn`` episode per user/assistant turn.

    Content is the turn's text verbatim (stripped); tags are ``[role]``; importance is
    ``None`` (unrated). Provenance: ``method="raw_turn"``, ``turn_index``, ``role``
    (and ``name`` when the message had one).

    Args:
        messages: OpenAI chat messages (see :mod:`memlane.formation.conversation`).
        session_id: The source session's id, recorded in provenance, or ``None``.

    Returns:
        One :class:`~memlane.EpisodeInput` per turn, in order.

    Raises:
        ValidationError: malformed messages.
    """
    source = None if session_id is None else check_identifier(session_id, "session_id")
    return _turn_episodes(conversation_turns(messages), source)


def _llm_facts(llm: ChatLLM, chunk: Sequence[Turn], source: str | None) -> list[EpisodeInput]:
    output = complete_json(
        llm,
        _prompt(render_transcript(chunk)),
        schema=FACTS_SCHEMA,
        schema_name="facts",
        parse=_parse_facts,
    )
    return [
        EpisodeInput(
            event_type=event_type,
            content=content,
            tags=tags,
            importance=importance,
            metadata=formation_metadata(
                method="llm",
                model=output.model,
                prompt_version=EXTRACT_PROMPT_VERSION,
                source_session_id=source,
                turn_range=[chunk[0].index, chunk[-1].index],
                attempts=output.attempts,
            ),
        )
        for event_type, content, tags, importance in output.value
    ]


def extract_facts(
    messages: Sequence[Mapping[str, Any]],
    *,
    llm: ChatLLM | None = None,
    session_id: str | None = None,
    max_chunk_chars: int = DEFAULT_MAX_CHUNK_CHARS,
    on_llm_error: OnLLMError = "raise",
) -> list[EpisodeInput]:
    """Turn a conversation into event episodes, with a chat model or deterministically.

    With ``llm``: one request per chunk of whole turns (at most ``max_chunk_chars`` of
    transcript each); each fact becomes an episode with the model's ``event_type``,
    ``content``, ``tags`` and ``importance`` (1-10). Provenance: ``method="llm"``,
    ``model``, ``prompt_version`` (:data:`EXTRACT_PROMPT_VERSION`), ``source_session_id``,
    ``turn_range`` (first and last message index of the chunk) and ``attempts`` (1, or 2
    after a retry). A model may legitimately find no facts.

    Without ``llm``: :func:`raw_turn_episodes`.

    Args:
        messages: OpenAI chat messages (see :mod:`memlane.formation.conversation`).
        llm: The chat model, or ``None`` for the deterministic fallback.
        session_id: The source session's id, recorded in provenance, or ``None``.
        max_chunk_chars: Transcript characters per request, >= 200.
        on_llm_error: ``"raise"`` (default), or ``"fallback"``: a chunk whose request
            failed or whose reply was malformed twice becomes raw turn episodes instead,
            each recording the failure and the raw replies under ``llm_error``
            (:func:`memlane.formation.llm.failure_details`); other chunks keep their facts.

    Returns:
        The episodes to remember, in conversation order (nothing is stored here).

    Raises:
        ValidationError: malformed messages or arguments.
        MalformedOutputError: a chunk's reply was malformed twice (raw texts kept).
        FormationError: a request failed.
    """
    if llm is None:
        return raw_turn_episodes(messages, session_id=session_id)
    if isinstance(max_chunk_chars, bool) or not isinstance(max_chunk_chars, int) or max_chunk_chars < 200:
        raise ValidationError(f"max_chunk_chars must be an integer >= 200, got {max_chunk_chars!r}")
    fallback = check_on_llm_error(on_llm_error) == "fallback"
    source = None if session_id is None else check_identifier(session_id, "session_id")
    episodes = []
    for chunk in chunk_turns(conversation_turns(messages), max_chunk_chars):
        try:
            episodes.extend(_llm_facts(llm, chunk, source))
        except FormationError as exc:
            if not fallback:
                raise
            episodes.extend(_turn_episodes(chunk, source, **failure_details(exc, llm.model)))
    return episodes
