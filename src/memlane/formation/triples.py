"""Facts for the knowledge graph from a conversation or an episode, through any OpenAI-compatible LLM.

:func:`form_facts` asks the model (:func:`~memlane.formation.llm.complete_json`, the schema
enforced by the server, one retry on a malformed reply) for triples matching
:data:`TRIPLES_SCHEMA`: ``subject``, ``predicate``, ``object``, ``kind`` (``"entity"`` or
``"value"``), ``confidence`` (0-1) and ``importance`` (1-10). It keeps the triples with
``confidence >= min_confidence`` (default 0.7, seed 002's minimum to store a triple) and
``importance >= min_importance`` (default 5, seed 002's extraction threshold), and writes each with
:meth:`memlane.EpisodicMemory.remember_fact` (``method="llm"``, the source episode or session as
provenance), so the structural contradiction rules apply to them as to any fact.

Idempotent per source: when facts of ``method="llm"`` from the same source (session id or
episode id) are already stored, they are returned and the model is not called again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memlane.errors import OutputRejectedError, ValidationError
from memlane.formation.conversation import conversation_turns, render_transcript
from memlane.formation.extract import DEFAULT_MAX_CHUNK_CHARS, chunk_turns
from memlane.formation.llm import ChatLLM, complete_json
from memlane.graph.methods import MIN_CONFIDENCE, facts_from_source
from memlane.stores.graph_base import Fact
from memlane.validation import check_fraction, check_identifier

if TYPE_CHECKING:
    from memlane.memory import EpisodicMemory

__all__ = ["MIN_IMPORTANCE", "TRIPLES_PROMPT_VERSION", "TRIPLES_SCHEMA", "Triple", "form_facts"]

TRIPLES_PROMPT_VERSION = "triples-1"
"""Version of the triple extraction prompt (bumped when its wording changes)."""

MIN_IMPORTANCE = 5
"""Seed 002: extract only triples of importance >= 5 by default."""

MAX_TRIPLES_PER_CHUNK = 20

TRIPLES_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "triples": {
            "type": "array",
            "maxItems": MAX_TRIPLES_PER_CHUNK,
            "items": {
                "type": "object",
                "properties": {
                    "subject": {"type": "string"},
                    "predicate": {"type": "string"},
                    "object": {"type": "string"},
                    "kind": {"type": "string", "enum": ["entity", "value"]},
                    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                    "importance": {"type": "integer", "minimum": 1, "maximum": 10},
                },
                "required": ["subject", "predicate", "object", "kind", "confidence", "importance"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["triples"],
    "additionalProperties": False,
}
"""JSON schema of a triple extraction reply (portable subset; see :mod:`memlane.formation.llm`)."""

_SYSTEM_PROMPT = """\
You extract facts as triples from a conversation, for a knowledge graph. Reply with one JSON object:
{"triples": [{"subject": "...", "predicate": "...", "object": "...", "kind": "entity", \
"confidence": 0.9, "importance": 6}]}
- subject: who or what the fact is about ("user" for the user).
- predicate: a short snake_case relation such as lives_in, works_at, likes, dislikes, diet, \
subscription_tier, uses_database, married_to, knows.
- object: the other entity or the value; kind is "entity" for a person, place, organisation or \
thing, "value" for a literal such as a tier, a number or a date.
- confidence: 0-1, how clearly the conversation states it. importance: 1-10.
Only facts stated in the conversation. If there are none, reply {"triples": []}."""

_EXAMPLE = (
    "user: I moved to Lisbon in March and I now work for Acme.",
    '{"triples": [{"subject": "user", "predicate": "lives_in", "object": "Lisbon", "kind": "entity", '
    '"confidence": 0.95, "importance": 7}, {"subject": "user", "predicate": "works_at", "object": "Acme", '
    '"kind": "entity", "confidence": 0.9, "importance": 7}]}',
)


@dataclass(frozen=True, slots=True)
class Triple:
    """One triple the model proposed (before the thresholds).

    Attributes:
        subject / predicate / object: As the model wrote them (checked non-blank).
        is_entity: ``kind == "entity"`` (else a literal value).
        confidence: 0-1. importance: 1-10.
    """

    subject: str
    predicate: str
    object: str
    is_entity: bool
    confidence: float
    importance: int


def _parse(data: Any) -> list[Triple]:
    out = []
    for i, item in enumerate(data["triples"]):
        try:
            out.append(
                Triple(
                    subject=check_identifier(item["subject"], "subject"),
                    predicate=check_identifier(item["predicate"], "predicate"),
                    object=check_identifier(item["object"], "object"),
                    is_entity=item["kind"] == "entity",
                    confidence=check_fraction(item["confidence"], "confidence"),
                    importance=int(item["importance"]),
                )
            )
        except ValidationError as exc:
            raise OutputRejectedError(f"$.triples[{i}]: {exc}") from None
    return out


def _prompt(transcript: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": _SYSTEM_PROMPT},
        {"role": "user", "content": f"Conversation:\n{_EXAMPLE[0]}"},
        {"role": "assistant", "content": _EXAMPLE[1]},
        {"role": "user", "content": f"Conversation:\n{transcript}"},
    ]


def form_facts(
    memory: EpisodicMemory,
    messages: Sequence[Mapping[str, Any]],
    *,
    llm: ChatLLM,
    session_id: str | None = None,
    episode_id: str | None = None,
    min_confidence: float = MIN_CONFIDENCE,
    min_importance: int = MIN_IMPORTANCE,
    max_chunk_chars: int = DEFAULT_MAX_CHUNK_CHARS,
) -> list[Fact]:
    """Extract triples with ``llm`` and store those above the thresholds as facts (module docstring).

    Args:
        memory: Where the facts go (its tenant and session).
        messages: OpenAI chat messages; for one episode, ``[{"role": "user", "content": episode.content}]``.
        llm: The chat model.
        session_id: The source conversation (provenance; the idempotence key unless ``episode_id``).
        episode_id: The source episode (provenance; the idempotence key when given).
        min_confidence: Triples below it are dropped (default 0.7), in [0, 1].
        min_importance: Triples below it are dropped (default 5), 1-10.
        max_chunk_chars: Transcript characters per request (whole turns), >= 200.

    Returns:
        The facts stored (or already held for this source), in the order written.

    Raises:
        ValidationError: bad arguments or messages (nothing stored).
        MalformedOutputError: a reply was malformed twice. FormationError: a request failed.
        StoreError: the store failed or keeps no graph.
    """
    source_session = None if session_id is None else check_identifier(session_id, "session_id")
    source_episode = None if episode_id is None else check_identifier(episode_id, "episode_id")
    source = source_episode or source_session
    floor = check_fraction(min_confidence, "min_confidence")
    if source is not None:
        held = facts_from_source(memory.context, source, "llm")
        if held:
            return held
    stored: list[Fact] = []
    for chunk in chunk_turns(conversation_turns(messages), max_chunk_chars):
        output = complete_json(
            llm, _prompt(render_transcript(chunk)), schema=TRIPLES_SCHEMA, schema_name="triples", parse=_parse
        )
        for t in output.value:
            if t.confidence < floor or t.importance < min_importance:
                continue
            result = memory.remember_fact(
                t.subject,
                t.predicate,
                t.object if t.is_entity else None,
                value=None if t.is_entity else t.object,
                confidence=t.confidence,
                importance=t.importance,
                source_episode_id=source_episode,
                source_session_id=source_session,
                method="llm",
            )
            if not result.duplicate:
                stored.append(result.fact)
    return stored
