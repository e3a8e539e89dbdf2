"""The ``[Past Conversation Context]`` block: its format, greedy selection under a token budget, injection.

Format (stable; a change to it is a breaking change)::

    [Past Conversation Context]
    Excerpts from earlier conversations and remembered events, most relevant first. Times are UTC.

    (1) Conversation "s-42" · Mon 2026-05-25 14:03 UTC
    user: Please onboard Acme Corp as a vendor.
    assistant: Done: I submitted the vendor onboarding form.

    (2) Event "preference" · Wed 2026-05-20 09:00 UTC
    User prefers window seats

    (3) Facts "Ana" · Tue 2026-05-26 10:00 UTC
    Ana lives in Lisbon (since 2024-06-01)
    Ana works at Acme (since 2025-01-15)
    [End of Past Conversation Context]

* The first and last lines are :data:`CONTEXT_HEADER` and :data:`CONTEXT_FOOTER`; the
  second is :data:`CONTEXT_INTRO`. Items follow, numbered from 1 in block order (best
  score first), each a heading ``(<n>) <Conversation|Event|Facts> "<session id|event type|entity>" ·
  <weekday> <YYYY-MM-DD HH:MM> UTC`` and its lines, with a blank line between items.
* A conversation item is a search snippet (:class:`~memlane.sessions.models.SessionSnippet`):
  one line per message, ``"<name or role>: <text>"`` (see
  :func:`~memlane.sessions.messages.render_message`), dated by the matched turn. An event
  item is a recalled episode's content, dated by its ``created_at``. A facts item holds the
  knowledge graph's facts valid now about one entity the query names
  (:func:`memlane.graph.context.query_fact_groups`), one line per fact, best first, dated by the
  read's ``now`` (the time they are valid at); its short form is its best fact alone.
* Every message or event text is cut at ``max_item_chars`` characters (with ``…``) and
  its whitespace collapsed, so one huge tool output cannot take the whole budget.
* When no candidate reaches the relevance floor (``min_relevance``; every context path
  applies :attr:`memlane.MemoryConfig.context_min_relevance` by default), or there is no
  candidate at all, the block says so instead of listing noise::

      [Past Conversation Context]
      Nothing relevant was found in earlier conversations or remembered events.
      [End of Past Conversation Context]

  (:data:`CONTEXT_NOTHING_RELEVANT`; the block's ``items`` are empty and ``relevant`` is
  ``False``; :func:`memlane.sessions.SessionMemory.inject_context` then injects nothing). The
  block is the empty string when ``token_budget`` is 0, when even that note does not fit, and
  when relevant candidates exist but none fits the budget.

Selection (:func:`assemble_context`) is greedy by score: candidates (event hits, session
snippets and fact groups, all scored by :func:`memlane.recall.ranking.rank`) are taken best first;
one whose own match strength (:func:`match_strength`) is below ``min_relevance`` is dropped;
otherwise it is added if the
*whole rendered block* still counts at most ``token_budget`` tokens, else its shorter
form (a snippet without its context turns) is tried, else it is skipped and the next
candidate is tried. The budget is checked on the exact final text, so it is never
exceeded, whatever the tokenizer does at item boundaries.

Injection (:func:`inject_block`) returns a new message list with the block placed right
before the latest ``user`` message, as a ``system`` message (default) or prepended to that
user message's content (``placement="user"``, for providers that accept only one leading
system message). The caller's list and its messages are never modified.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from memlane import wire
from memlane.errors import ValidationError
from memlane.models import RecallHit, ScoreBreakdown
from memlane.sessions.messages import render_message
from memlane.sessions.models import SYSTEM_ROLES, SessionSnippet
from memlane.sessions.tokens import TokenCounter
from memlane.validation import check_at_least, check_choice, check_fraction

if TYPE_CHECKING:
    from memlane.graph.context import FactGroup

__all__ = [
    "CONTEXT_FOOTER",
    "CONTEXT_HEADER",
    "CONTEXT_INTRO",
    "CONTEXT_NOTHING_RELEVANT",
    "DEFAULT_MAX_ITEM_CHARS",
    "NOTHING_RELEVANT_BLOCK",
    "ContextBlock",
    "ContextItem",
    "Placement",
    "assemble_context",
    "check_budget",
    "event_item",
    "facts_item",
    "format_time",
    "inject_block",
    "latest_user_index",
    "match_strength",
    "render_block",
    "snippet_item",
]

CONTEXT_HEADER = "[Past Conversation Context]"
CONTEXT_INTRO = (
    "Excerpts from earlier conversations and remembered events, most relevant first. Times are UTC."
)
CONTEXT_FOOTER = "[End of Past Conversation Context]"
CONTEXT_NOTHING_RELEVANT = "Nothing relevant was found in earlier conversations or remembered events."
"""The block's only line (between header and footer) when no candidate reaches the relevance floor."""
DEFAULT_MAX_ITEM_CHARS = 1000
"""Default cap on the characters of one message or event text in the block."""
DEFAULT_TOKEN_BUDGET = 1000
"""Default hard limit on the block's tokens, for every interface (Python, tools/MCP, HTTP, CLI)."""

Placement = Literal["system", "user"]


def format_time(value: datetime) -> str:
    """``"Mon 2026-05-25 14:03 UTC"`` (English weekday, minutes, UTC)."""
    at = value.astimezone(UTC)
    weekday = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")[at.weekday()]
    return f"{weekday} {at:%Y-%m-%d %H:%M} UTC"


_HEADINGS = {"conversation": "Conversation", "event": "Event", "facts": "Facts"}


@dataclass(frozen=True, slots=True)
class ContextItem:
    """A candidate for the block.

    Attributes:
        kind: ``"conversation"`` (a session snippet), ``"event"`` (an event episode) or
            ``"facts"`` (the current facts about one entity).
        label: The session id, the event type or the entity's name.
        at: When it happened (UTC): the snippet's ``created_at`` or the episode's; for facts, the
            time they are valid at (the read's ``now``).
        breakdown: Its score breakdown (each signal in [0, 1]).
        lines: The body lines.
        short_lines: A shorter body tried when ``lines`` does not fit (``()`` = none).
        source: The :class:`SessionSnippet`, :class:`~memlane.models.RecallHit` or
            :class:`~memlane.graph.context.FactGroup` it came from.
    """

    kind: Literal["conversation", "event", "facts"]
    label: str
    at: datetime
    breakdown: ScoreBreakdown
    lines: tuple[str, ...]
    short_lines: tuple[str, ...]
    source: SessionSnippet | RecallHit | FactGroup

    @property
    def heading(self) -> str:
        """``Conversation "s-42" · Mon 2026-05-25 14:03 UTC`` (without the number)."""
        kind = _HEADINGS[self.kind]
        label = self.label.replace('"', "'")
        return f'{kind} "{label}" · {format_time(self.at)}'


def snippet_item(snippet: SessionSnippet, *, max_item_chars: int = DEFAULT_MAX_ITEM_CHARS) -> ContextItem:
    """A :class:`ContextItem` for a session snippet; its short form is the matched turn alone."""

    def lines(messages: Sequence[Any]) -> tuple[str, ...]:
        return tuple(
            render_message(m, max_chars=max_item_chars) for m in messages if m.role not in SYSTEM_ROLES
        )

    full = lines(snippet.messages)
    short = lines(snippet.matched)
    return ContextItem(
        kind="conversation",
        label=snippet.session_id,
        at=snippet.created_at,
        breakdown=snippet.breakdown,
        lines=full,
        short_lines=short if short != full else (),
        source=snippet,
    )


def event_item(hit: RecallHit, *, max_item_chars: int = DEFAULT_MAX_ITEM_CHARS) -> ContextItem:
    """A :class:`ContextItem` for a ranked event episode (``hit.breakdown`` must be set).

    Raises:
        ValidationError: the hit has no breakdown (it came from a structured lookup).
    """
    if hit.breakdown is None:
        raise ValidationError("only ranked recall hits (with a breakdown) can go into a context block")
    text = _cut(hit.episode.content, max_item_chars)
    return ContextItem(
        kind="event",
        label=hit.episode.event_type,
        at=hit.episode.created_at,
        breakdown=hit.breakdown,
        lines=(text,),
        short_lines=(),
        source=hit,
    )


def _cut(text: str, max_item_chars: int) -> str:
    """``text`` with its whitespace collapsed, cut at ``max_item_chars`` characters (with ``…``)."""
    text = " ".join(text.split())
    if len(text) > max_item_chars:
        text = text[: max(1, max_item_chars) - 1].rstrip() + "…"
    return text


def facts_item(
    group: FactGroup, at: datetime, *, max_item_chars: int = DEFAULT_MAX_ITEM_CHARS
) -> ContextItem:
    """A :class:`ContextItem` for the facts about one entity (valid at ``at``); short form: the best fact."""
    lines = tuple(_cut(line, max_item_chars) for line in group.lines)
    return ContextItem(
        kind="facts",
        label=group.entity.name,
        at=at,
        breakdown=group.breakdown,
        lines=lines,
        short_lines=lines[:1] if len(lines) > 1 else (),
        source=group,
    )


def render_block(entries: Sequence[tuple[ContextItem, Sequence[str]]]) -> str:
    """Render the block for ``(item, body lines)`` pairs in order; ``""`` when there are none."""
    if not entries:
        return ""
    out = [CONTEXT_HEADER, CONTEXT_INTRO]
    for number, (item, body) in enumerate(entries, start=1):
        out.append("")
        out.append(f"({number}) {item.heading}")
        out.extend(body)
    out.append(CONTEXT_FOOTER)
    return "\n".join(out)


NOTHING_RELEVANT_BLOCK = "\n".join((CONTEXT_HEADER, CONTEXT_NOTHING_RELEVANT, CONTEXT_FOOTER))
"""The whole block when nothing reaches the relevance floor (see the module docstring)."""


@dataclass(frozen=True, slots=True)
class ContextBlock:
    """The outcome of building a context block.

    Attributes:
        text: The block (format in the module docstring): the selected items, the "nothing
            relevant" note when no candidate reached the floor, or ``""`` (budget 0, or nothing fit).
        tokens: Its token count (0 for ``""``); always ``<= token_budget``.
        token_budget: The budget it was built under.
        tokenizer: Which tokenizer counted (e.g. ``"toktok o200k_base"``).
        items: The selected items in block order.
        shortened: How many of them were included in their short form.
        below_min_relevance: Candidates dropped for a match strength below ``min_relevance``.
        over_budget: Candidates skipped because even their short form did not fit.
        min_relevance: The relevance floor the candidates were held to (0 = none).
    """

    text: str
    tokens: int
    token_budget: int
    tokenizer: str
    items: tuple[ContextItem, ...]
    shortened: int = 0
    below_min_relevance: int = 0
    over_budget: int = 0
    min_relevance: float = 0.0

    @property
    def relevant(self) -> bool:
        """Whether anything relevant went into the block (``False`` for the "nothing relevant" note
        and for ``""``): what ``inject_context`` checks before injecting it."""
        return bool(self.items)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable summary (the text, counts, and each item's kind, label, time and breakdown)."""
        return {
            "text": self.text,
            "tokens": self.tokens,
            "token_budget": self.token_budget,
            "tokenizer": self.tokenizer,
            "items": [
                {
                    "kind": item.kind,
                    "label": item.label,
                    "at": wire.timestamp(item.at),
                    "breakdown": wire.breakdown(item.breakdown),
                }
                for item in self.items
            ],
            "shortened": self.shortened,
            "below_min_relevance": self.below_min_relevance,
            "over_budget": self.over_budget,
            "min_relevance": self.min_relevance,
            "relevant": self.relevant,
        }


def match_strength(breakdown: ScoreBreakdown) -> float:
    """How well a candidate itself matches the query: the signal the relevance floor is applied to.

    ``breakdown.dense``, the calibrated cosine ``clip((cosine - floor) / (ceil - floor), 0, 1)``
    of the ranking profile (:class:`memlane.config.profile.DenseCalibration`; 0.1 and 0.7 by
    default): an absolute similarity of the candidate's own text, comparable across queries and
    memories, and not lifted by its neighbours, recency, importance or the other candidates. A
    fused hybrid ``relevance`` would not do: its keyword part is scaled by the query's best
    match, so the best hit of any query scores high.

    When the recall compared vectors but this candidate was not among the dense candidates
    (found by keywords only, e.g. a rare word in a turn whose meaning is far from the query),
    its cosine is below every dense candidate's and it counts as 0. When no vectors were
    compared (``retrieval="keyword"``, or the embedder's fallback) the floor has no absolute
    scale to judge by: BM25 depends on the store's size and the query's words (one matching
    conversation in a small store scores ~0.07), so every keyword candidate counts as 1 (it
    shares a query term) and the floor does not filter.
    """
    if breakdown.dense is not None:
        return breakdown.dense
    if breakdown.retrieval != "keyword" and not breakdown.fallback:
        return 0.0
    return 1.0


def check_budget(token_budget: object) -> int:
    """Return ``token_budget`` if it is an int in 0..:data:`memlane.validation.MAX_COUNT` (bools refused).

    Raises:
        ValidationError: anything else.
    """
    return check_at_least(token_budget, "token_budget", 0)


def assemble_context(
    candidates: Sequence[ContextItem],
    *,
    token_budget: int,
    counter: TokenCounter,
    min_relevance: float | None = None,
) -> ContextBlock:
    """Select candidates greedily by score under a hard token budget and render the block.

    Args:
        candidates: Items in any order; they are taken by score descending (ties: newer
            first, then conversations before events, then label).
        token_budget: Maximum tokens of the block, an int >= 0 (0 always gives ``""``).
        counter: Counts the tokens of the rendered block.
        min_relevance: The relevance floor: drop candidates whose :func:`match_strength` is
            below this value in [0, 1]; ``None`` or 0 keeps all.

    Returns:
        The :class:`ContextBlock`; ``counter.count(block.text) <= token_budget`` always. When no
        candidate reaches the floor (or there is none) its text is :data:`NOTHING_RELEVANT_BLOCK`
        if that fits the budget, else ``""``.

    Raises:
        ValidationError: a bad ``token_budget`` or ``min_relevance``.
    """
    budget = check_budget(token_budget)
    floor = 0.0 if min_relevance is None else float(check_fraction(min_relevance, "min_relevance"))
    ordered = sorted(
        candidates,
        key=lambda c: (-c.breakdown.score, -c.at.timestamp(), c.kind != "conversation", c.label),
    )
    relevant = [item for item in ordered if match_strength(item.breakdown) >= floor]
    chosen: list[tuple[ContextItem, Sequence[str]]] = []
    tokens = 0
    shortened = over = 0
    for item in relevant:
        for body in (item.lines, item.short_lines):
            if not body:
                continue
            trial = [*chosen, (item, body)]
            count = counter.count(render_block(trial))
            if count <= budget:
                chosen = trial
                tokens = count
                shortened += body is item.short_lines
                break
        else:
            over += 1
    text = render_block(chosen)
    if not relevant and budget > 0 and counter.count(NOTHING_RELEVANT_BLOCK) <= budget:
        text = NOTHING_RELEVANT_BLOCK
        tokens = counter.count(text)
    return ContextBlock(
        text=text,
        tokens=tokens if text else 0,
        token_budget=budget,
        tokenizer=counter.name,
        items=tuple(item for item, _ in chosen),
        shortened=shortened,
        below_min_relevance=len(ordered) - len(relevant),
        over_budget=over,
        min_relevance=floor,
    )


def latest_user_index(messages: Sequence[Mapping[str, Any]]) -> int | None:
    """Index of the last message whose role is ``user``, or ``None``."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") == "user":
            return index
    return None


def inject_block(
    messages: Sequence[Mapping[str, Any]], block: str, *, placement: Placement = "system"
) -> list[dict[str, Any]]:
    """Return a deep copy of ``messages`` with ``block`` placed before the latest user message.

    Args:
        messages: OpenAI-format messages (not modified).
        block: The context block; ``""`` returns a plain deep copy.
        placement: ``"system"``: a new ``{"role": "system", "content": block}`` message is
            inserted right before the latest user message (at the end if there is none).
            ``"user"``: the block and a blank line are prepended to the latest user
            message's content (a string, or a list of parts, which gets a leading text
            part); without a user message, falls back to ``"system"`` at the end.

    Returns:
        A new list of new dicts.

    Raises:
        ValidationError: an unknown placement.
    """
    check_choice(placement, "placement", ("system", "user"))
    out = [copy.deepcopy(dict(m)) for m in messages]
    if not block:
        return out
    index = latest_user_index(out)
    if index is None:
        out.append({"role": "system", "content": block})
        return out
    if placement == "system":
        out.insert(index, {"role": "system", "content": block})
        return out
    target = out[index]
    content = target.get("content")
    if isinstance(content, list):
        target["content"] = [{"type": "text", "text": block + "\n\n"}, *content]
    else:
        target["content"] = block + "\n\n" + ("" if content is None else str(content))
    return out
