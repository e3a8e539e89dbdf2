"""Session summaries: a conversation becomes one ``session_summary`` episode.

With a chat model (:func:`summarize_session` with ``llm=``), the whole transcript is
sent once with a worked example, and the model answers with JSON matching
:data:`SUMMARY_SCHEMA` (``summary`` and ``tags``); replies are validated and retried once
by :func:`memlane.formation.llm.complete_json`. Very long sessions need a model whose
context holds the whole transcript; a server that refuses the request raises
:class:`~memlane.errors.FormationError`.

Without a model (``llm=None``) the summary is *extractive*, deterministic and offline
(:func:`extractive_summary`): the SumBasic algorithm picks the sentences whose content
words are most frequent in the session, then lists them in conversation order.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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
from memlane.validation import check_identifier, check_text, clamp_importance, normalize_tags

__all__ = [
    "DEFAULT_SUMMARY_MAX_CHARS",
    "DEFAULT_SUMMARY_MAX_SENTENCES",
    "STOPWORDS",
    "SUMMARY_EVENT_TYPE",
    "SUMMARY_PROMPT_VERSION",
    "SUMMARY_SCHEMA",
    "ExtractiveSummary",
    "extractive_summary",
    "summarize_session",
]

SUMMARY_EVENT_TYPE = "session_summary"
"""Event type of every summary episode."""

SUMMARY_PROMPT_VERSION = "summarize_session/1"
"""Version of the summary prompt and schema; recorded in provenance. Bump on any change."""

DEFAULT_SUMMARY_MAX_SENTENCES = 5
"""Most sentences an extractive summary picks."""

DEFAULT_SUMMARY_MAX_CHARS = 1_000
"""Longest extractive summary, in characters."""

SUMMARY_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "summary": {"type": "string"},
        "tags": {"type": "array", "maxItems": 8, "items": {"type": "string"}},
    },
    "required": ["summary", "tags"],
    "additionalProperties": False,
}
"""JSON schema of a summary reply (portable subset; see :mod:`memlane.formation.llm`)."""

_SYSTEM_PROMPT = """\
You summarise a conversation between a user and an assistant for the assistant's long-term \
memory. Reply with one JSON object and nothing else:
{"summary": "...", "tags": ["..."]}
- summary: two to four sentences on what the user wanted, what was decided or done, and \
what is still open.
- tags: up to 5 lower-case keywords."""

_EXAMPLE_TRANSCRIPT = """\
user: Can you find me a hotel in Porto for May 3 to 5? Under 120 euros a night.
assistant: Casa Ribeira has a double room for 110 euros a night. Shall I book it?
user: Yes, book it. I'll sort out the train from Lisbon myself."""

_EXAMPLE_REPLY = (
    '{"summary": "User asked for a hotel in Porto from May 3 to 5 under 120 euros a night. '
    "The assistant booked a double room at Casa Ribeira for 110 euros a night. "
    'User will arrange the train from Lisbon.", "tags": ["travel", "hotel", "porto"]}'
)

_STOPWORD_TEXT = """
    a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing done down during each either else
    even ever every few for from further get got had has have having he her here hers herself him
    himself his how i if in into is it its itself just let like may me might mine more most much
    must my myself no nor not now of off ok okay on once one only or other our ours ourselves out
    over own please really same shall she should so some such sure than thank thanks that the
    their theirs them themselves then there these they this those through to too under until up
    upon us very was we well were what when where which while who whom why will with would yes yet
    you your yours yourself yourselves
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
"""English function words ignored when weighing sentences (extractive summaries)."""

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"[^\W_]+")
_MIN_CONTENT_WORDS = 3


@dataclass(frozen=True, slots=True)
class ExtractiveSummary:
    """An extractive summary and where its sentences came from.

    Attributes:
        text: The summary: the picked sentences in conversation order, one
            ``role: sentence`` line each.
        turn_indices: Message index of each picked sentence's turn, in the same order.
    """

    text: str
    turn_indices: tuple[int, ...]


def _content_words(sentence: str) -> list[str]:
    return [w for w in _WORD.findall(sentence.lower()) if len(w) > 1 and w not in STOPWORDS]


def extractive_summary(
    turns: Sequence[Turn],
    *,
    max_sentences: int = DEFAULT_SUMMARY_MAX_SENTENCES,
    max_chars: int = DEFAULT_SUMMARY_MAX_CHARS,
) -> ExtractiveSummary:
    """Summarise turns by picking their most informative sentences (SumBasic; no model, no network).

    The rule (SumBasic, Nenkova & Vanderwende 2005, "The impact of frequency on
    summarization", Microsoft Research MSR-TR-2005-101):

    1. Split each turn into sentences (at ``.``, ``!`` or ``?`` followed by whitespace,
       and at line breaks). A sentence's content words are its lower-cased words of two
       or more letters/digits that are not in :data:`STOPWORDS`.
    2. ``p(w)`` = count of content word ``w`` / count of all content words in the session.
    3. Repeatedly pick the sentence with the highest mean ``p(w)`` over its content words
       (ties: the earliest), then square ``p(w)`` of every word it contains, so later
       picks favour words not yet covered. Only sentences with at least three content
       words compete, unless no sentence has that many.
    4. Stop after ``max_sentences`` picks, when the next pick would exceed ``max_chars``,
       or when no candidate is left. The picks are listed in conversation order.

    The first pick is always kept, cut to ``max_chars`` (ending in ``…``) if longer.

    Args:
        turns: The conversation's turns (non-empty).
        max_sentences: Most sentences, >= 1.
        max_chars: Longest summary in characters, >= 20.

    Returns:
        The :class:`ExtractiveSummary`.

    Raises:
        ValidationError: no turns, or a limit out of range.
    """
    if not turns:
        raise ValidationError("the conversation has no user or assistant text to summarise")
    if isinstance(max_sentences, bool) or not isinstance(max_sentences, int) or max_sentences < 1:
        raise ValidationError(f"max_sentences must be a positive integer, got {max_sentences!r}")
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 20:
        raise ValidationError(f"max_chars must be an integer >= 20, got {max_chars!r}")
    sentences = _sentences(turns)
    picked = sorted(_sumbasic_picks(sentences, max_sentences, max_chars))
    text = "\n".join(_line(sentences[i]) for i in picked)
    if len(text) > max_chars:  # only possible with a single over-long sentence
        text = text[: max_chars - 1].rstrip() + "…"
    return ExtractiveSummary(text=text, turn_indices=tuple(sentences[i][0].index for i in picked))


_Sentence = tuple[Turn, str, list[str]]
"""A sentence of a turn: ``(turn, sentence, its content words)``."""


def _sentences(turns: Sequence[Turn]) -> list[_Sentence]:
    """Every non-empty sentence of ``turns``, in conversation order (rule 1)."""
    sentences: list[_Sentence] = []
    for turn in turns:
        for piece in _SENTENCE_END.split(turn.text):
            sentence = " ".join(piece.split())
            if sentence:
                sentences.append((turn, sentence, _content_words(sentence)))
    return sentences


def _line(sentence: _Sentence) -> str:
    return f"{sentence[0].role}: {sentence[1]}"


def _sumbasic_picks(sentences: Sequence[_Sentence], max_sentences: int, max_chars: int) -> list[int]:
    """The positions of the sentences SumBasic picks, in pick order (rules 2-4)."""
    counts = Counter(w for _, _, words in sentences for w in words)
    total = sum(counts.values())
    prob = {w: c / total for w, c in counts.items()}
    eligible = [i for i, (_, _, words) in enumerate(sentences) if len(words) >= _MIN_CONTENT_WORDS]
    if not eligible:
        eligible = [i for i, (_, _, words) in enumerate(sentences) if words] or [0]

    def weight(i: int) -> float:
        words = sentences[i][2]
        return sum(prob[w] for w in words) / len(words) if words else 0.0

    picked: list[int] = []
    length = 0
    candidates = list(eligible)
    while candidates and len(picked) < max_sentences:
        best = max(candidates, key=lambda i: (weight(i), -i))
        extra = len(_line(sentences[best])) + (1 if picked else 0)
        if picked and length + extra > max_chars:
            break
        picked.append(best)
        length += extra
        candidates.remove(best)
        for w in set(sentences[best][2]):
            prob[w] = prob[w] ** 2
    return picked


def _parse_summary(data: Any) -> tuple[str, tuple[str, ...]]:
    try:
        summary = check_text(data["summary"], "summary").strip()
        tags = normalize_tags(data["tags"])
    except ValidationError as exc:
        raise OutputRejectedError(f"$: {exc}") from None
    return summary, tags


def _prompt(transcript: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": _SYSTEM_PROMPT},
        {"role": "user", "content": f"Conversation:\n{_EXAMPLE_TRANSCRIPT}"},
        {"role": "assistant", "content": _EXAMPLE_REPLY},
        {"role": "user", "content": f"Conversation:\n{transcript}"},
    ]


def summarize_session(
    messages: Sequence[Mapping[str, Any]],
    *,
    llm: ChatLLM | None = None,
    session_id: str | None = None,
    importance: float | None = None,
    max_sentences: int = DEFAULT_SUMMARY_MAX_SENTENCES,
    max_chars: int = DEFAULT_SUMMARY_MAX_CHARS,
    on_llm_error: OnLLMError = "raise",
) -> EpisodeInput:
    """Summarise a conversation as one ``session_summary`` episode.

    With ``llm``: the model's summary and tags. Provenance: ``method="llm"``, ``model``,
    ``prompt_version`` (:data:`SUMMARY_PROMPT_VERSION`), ``source_session_id``,
    ``turn_range`` and ``attempts``.

    Without ``llm``: :func:`extractive_summary`, tagged ``extractive``. Provenance:
    ``method="extractive"``, ``algorithm="sumbasic"``, ``source_session_id``,
    ``turn_range`` and ``source_turns`` (message index of each picked sentence).

    Args:
        messages: OpenAI chat messages (see :mod:`memlane.formation.conversation`).
        llm: The chat model, or ``None`` for the extractive fallback.
        session_id: The source session's id, recorded in provenance, or ``None``.
        importance: Importance of the summary episode, 1-10 (clamped), or ``None`` (unrated).
        max_sentences: Extractive summaries: most sentences, >= 1.
        max_chars: Extractive summaries: longest summary in characters, >= 20.
        on_llm_error: ``"raise"`` (default), or ``"fallback"``: if the request fails or
            the reply is malformed twice, return the extractive summary instead, recording
            the failure and the raw replies under ``llm_error``
            (:func:`memlane.formation.llm.failure_details`).

    Returns:
        The episode to remember (nothing is stored here).

    Raises:
        ValidationError: malformed messages or arguments, or no user/assistant text at all.
        MalformedOutputError: the reply was malformed twice (raw texts kept).
        FormationError: the request failed.
    """
    turns = conversation_turns(messages)
    if not turns:
        raise ValidationError("the conversation has no user or assistant text to summarise")
    fallback = check_on_llm_error(on_llm_error) == "fallback"
    source = None if session_id is None else check_identifier(session_id, "session_id")
    rating = clamp_importance(importance)
    turn_range = [turns[0].index, turns[-1].index]
    extractive = extractive_summary(turns, max_sentences=max_sentences, max_chars=max_chars)

    def extractive_episode(**extra: Any) -> EpisodeInput:
        return EpisodeInput(
            event_type=SUMMARY_EVENT_TYPE,
            content=extractive.text,
            tags=["extractive"],
            importance=rating,
            metadata=formation_metadata(
                method="extractive",
                model=None,
                prompt_version=None,
                source_session_id=source,
                algorithm="sumbasic",
                turn_range=turn_range,
                source_turns=sorted(set(extractive.turn_indices)),
                **extra,
            ),
        )

    if llm is None:
        return extractive_episode()
    try:
        output = complete_json(
            llm,
            _prompt(render_transcript(turns)),
            schema=SUMMARY_SCHEMA,
            schema_name="session_summary",
            parse=_parse_summary,
        )
    except FormationError as exc:
        if not fallback:
            raise
        return extractive_episode(**failure_details(exc, llm.model))
    summary, tags = output.value
    return EpisodeInput(
        event_type=SUMMARY_EVENT_TYPE,
        content=summary,
        tags=tags,
        importance=rating,
        metadata=formation_metadata(
            method="llm",
            model=output.model,
            prompt_version=SUMMARY_PROMPT_VERSION,
            source_session_id=source,
            turn_range=turn_range,
            attempts=output.attempts,
        ),
    )
