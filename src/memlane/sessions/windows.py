"""Windowing: how a transcript is cut into turns that are embedded and searched.

A **turn** starts at each ``user`` message and runs up to (not including) the next one:
the user's message, the assistant's reply and any tool calls and results in between.
Conversation messages before the first user message (an assistant greeting) form a turn
of their own. System and developer messages belong to no turn's text: one before the
first turn is outside every turn, one in the middle of a conversation is absorbed into
the turn it follows (so the turn's position range stays contiguous) but is never
embedded or shown.

Each turn is embedded once, at store time, from :func:`turn_text`: one
:func:`~memlane.sessions.messages.render_message` line per conversation message
(``"user: ..."``, ``"assistant: ... [called get_weather({...})]"``, ``"tool: ..."``).
A search ranks turns; the snippet it returns is the matched turn plus
``context_turns`` turns on each side, read back from the stored session at search time
(so context added by a later append is shown too).

Windows never span ``store_session`` calls: an appended batch is split into turns on its
own, so a batch that starts with an assistant message makes a turn of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memlane.sessions.messages import render_message
from memlane.sessions.models import SYSTEM_ROLES, Message

__all__ = ["MAX_EMBED_MESSAGE_CHARS", "Turn", "split_turns", "turn_text"]

MAX_EMBED_MESSAGE_CHARS = 2000
"""Each message contributes at most this many characters to the embedded text (the bundled
model reads only its first 256 word pieces anyway; this bounds huge tool outputs)."""


@dataclass(frozen=True, slots=True)
class Turn:
    """One turn of a message list.

    Attributes:
        index: 0-based turn number within the list.
        first: Position of the turn's first message (inclusive).
        last: Position of its last message (inclusive; absorbed system messages included).
        text: The text embedded for it (see :func:`turn_text`).
    """

    index: int
    first: int
    last: int
    text: str


def turn_text(messages: Sequence[Message], *, max_message_chars: int = MAX_EMBED_MESSAGE_CHARS) -> str:
    """The embedded text of a turn: one rendered line per conversation message, joined by newlines.

    Args:
        messages: The turn's messages (system/developer messages are skipped).
        max_message_chars: Per-message character cap (>= 1).
    """
    return "\n".join(
        render_message(m, max_chars=max_message_chars) for m in messages if m.role not in SYSTEM_ROLES
    )


def split_turns(messages: Sequence[Message]) -> list[Turn]:
    """Cut a message list into turns (rules in the module docstring).

    Args:
        messages: Validated messages, in order.

    Returns:
        The turns in order; empty when there is no conversation message (only system
        or developer messages). Their ``[first, last]`` ranges are disjoint and increasing.
    """
    spans: list[list[int]] = []
    for position, message in enumerate(messages):
        if message.role in SYSTEM_ROLES:
            if spans:
                spans[-1][1] = position
            continue
        if message.role == "user" or not spans:
            spans.append([position, position])
        else:
            spans[-1][1] = position
    return [
        Turn(index=i, first=first, last=last, text=turn_text(messages[first : last + 1]))
        for i, (first, last) in enumerate(spans)
    ]
