"""The inspector's session pages: sessions with episodes, and one session's conversation."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from memlane import Message, SessionEpisode
from memlane.server.inspector.data import SessionRow, SessionView, episode_status
from memlane.server.inspector.html import Html, el, join, url
from memlane.server.inspector.layout import (
    PREFIX,
    View,
    badge,
    content_cell,
    episode_link,
    page,
    pretty_json,
    session_link,
    status_of,
    tenant_picker,
    when,
)

__all__ = ["ConversationLookup", "session_page", "sessions_page"]


@dataclass(frozen=True, slots=True)
class ConversationLookup:
    """The stored-conversation part of the sessions page.

    Attributes:
        agent: The agent id asked for ("" when none).
        user: The user id asked for ("" when none).
        recent: That agent's and user's conversations, or ``None`` when not asked.
        error: Why the look-up failed, or ``None``.
        owners: The tenant's ``(agent_id, user_id, conversations)``, each shown as a link.
    """

    agent: str = ""
    user: str = ""
    recent: list[SessionEpisode] | None = None
    error: str | None = None
    owners: Sequence[tuple[str, str, int]] = ()


def sessions_page(
    view: View, tenants: Sequence[str], rows: list[SessionRow], total: int, lookup: ConversationLookup
) -> Html:
    """Sessions with episodes, a look-up by id, and stored conversations by agent and user
    (with the tenant's agent/user ids that have some, each a link to their list)."""
    agent, user, recent, error, owners = lookup.agent, lookup.user, lookup.recent, lookup.error, lookup.owners
    tenant_field = (
        el("input", type="hidden", name="tenant", value=view.tenant or "") if view.who.is_admin else None
    )
    form = el(
        "form",
        tenant_field,
        el(
            "label",
            el("span", "Agent id"),
            el("input", type="text", name="agent", value=agent, required=True),
            class_="field",
        ),
        el(
            "label",
            el("span", "User id"),
            el("input", type="text", name="user", value=user, required=True),
            class_="field",
        ),
        el("button", "List their stored conversations", type="submit", class_="primary"),
        method="get",
        action=PREFIX + "/sessions",
        class_="filters",
    )
    parts: list[Html] = []
    if view.tenant is None:
        picker = tenant_picker(view, PREFIX + "/sessions", tenants)
        if picker is not None:
            parts.append(picker)
        parts.append(
            el("p", "Pick a tenant to list its stored conversations by agent and user.", class_="muted")
        )
    else:
        parts.append(form)
        parts.append(_owners_table(view, owners))
    if error:
        parts.append(el("p", error, class_="error"))
    if recent is not None:
        conv_rows = [
            el(
                "tr",
                el("td", session_link(view, s.tenant_id, s.session_id)),
                el("td", when(s.started_at)),
                el("td", when(s.ended_at)),
                el("td", str(len(s.messages)), class_="num"),
            )
            for s in recent
        ]
        parts.append(
            el(
                "table",
                el(
                    "thead",
                    el(
                        "tr",
                        el("th", "Stored conversation"),
                        el("th", "Started"),
                        el("th", "Ended"),
                        el("th", "Messages"),
                    ),
                ),
                el("tbody", join(conv_rows) if conv_rows else el("tr", el("td", "none", colspan=4))),
                class_="list",
            )
        )
    table_rows = [
        el(
            "tr",
            el("td", session_link(view, r.tenant_id, r.session_id)),
            el("td", r.tenant_id) if view.tenant is None else None,
            el("td", str(r.episodes), class_="num"),
            el("td", when(r.first)),
            el("td", when(r.last)),
        )
        for r in rows
    ]
    parts.append(el("h2", f"Sessions with episodes ({total})"))
    parts.append(
        el(
            "table",
            el(
                "thead",
                el(
                    "tr",
                    el("th", "Session"),
                    el("th", "Tenant") if view.tenant is None else None,
                    el("th", "Episodes"),
                    el("th", "First"),
                    el("th", "Last"),
                ),
            ),
            el("tbody", join(table_rows)),
            class_="list",
            id="sessions",
        )
    )
    return page(view, "Sessions", join(parts), active="Sessions")


def _message(message: Message, position: int) -> Html:
    calls = [
        el(
            "div",
            el(
                "div",
                el("span", "tool call", class_="badge tool"),
                " ",
                el("b", call.name, class_="mono"),
                " ",
                el("span", call.id, class_="mono muted small"),
            ),
            el("pre", _pretty_arguments(call.arguments) or call.arguments, class_="json"),
            class_="tool-call",
            data_call_id=call.id,
        )
        for call in message.tool_calls
    ]
    answers = (
        el("div", "result of ", el("span", message.tool_call_id, class_="mono"), class_="small muted")
        if message.tool_call_id
        else None
    )
    text: Html | None = None
    if message.content:
        pretty = _pretty_arguments(message.content) if message.role == "tool" else None
        text = el("pre", pretty, class_="json") if pretty else el("div", message.content, class_="content")
    return el(
        "li",
        el(
            "div",
            el("span", message.role, class_=f"role role-{message.role}"),
            el("span", message.name, class_="muted small") if message.name else None,
            el("span", f"#{position}", class_="muted small"),
            class_="msg-head",
        ),
        answers,
        text,
        join(calls),
        class_=f"msg msg-{message.role}",
    )


def _pretty_arguments(arguments: str) -> str | None:
    """``arguments`` re-indented when it is a JSON object or array, else ``None``."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return None
    return json.dumps(value, indent=2, ensure_ascii=False) if isinstance(value, dict | list) else None


def _owners_table(view: View, owners: Sequence[tuple[str, str, int]]) -> Html:
    """The tenant's agent and user ids that have stored conversations, each linking to their list."""
    tenant = view.tenant if view.who.is_admin else None
    rows = [
        el(
            "tr",
            el(
                "td",
                el(
                    "a",
                    f"{agent} / {user}",
                    href=url(PREFIX + "/sessions", {"tenant": tenant, "agent": agent, "user": user}),
                    class_="mono owner-link",
                ),
            ),
            el("td", str(count), class_="num"),
        )
        for agent, user, count in owners
    ]
    empty = el("tr", el("td", "no stored conversations in this tenant", colspan=2))
    return el(
        "table",
        el("thead", el("tr", el("th", "Agent / user with stored conversations"), el("th", "Conversations"))),
        el("tbody", join(rows) if rows else empty),
        class_="list owners",
    )


_KEYS_SHOWN = 120
"""Characters of the metadata keys listed in the folded metadata's summary line."""


def session_page(view: View, data: SessionView, now: datetime) -> Html:
    """A session's stored conversation (messages and tool calls) and its event episodes."""
    parts: list[Html] = []
    conv = data.conversation
    if conv is not None:
        parts.append(
            el(
                "p",
                "agent ",
                el("b", conv.agent_id, class_="mono"),
                " · user ",
                el("b", conv.user_id, class_="mono"),
                " · ",
                when(conv.started_at),
                " → ",
                when(conv.ended_at),
                f" · {len(conv.messages)} messages",
                class_="summary",
            )
        )
        if conv.metadata:  # folded: a LoCoMo session's metadata would push the conversation off screen
            keys = ", ".join(sorted(str(k) for k in conv.metadata))
            keys = keys if len(keys) <= _KEYS_SHOWN else keys[: _KEYS_SHOWN - 1] + "…"
            parts.append(
                el(
                    "details",
                    el("summary", f"metadata ({len(conv.metadata)} keys: {keys})"),
                    pretty_json(dict(conv.metadata)),
                    class_="metadata",
                    id="session-metadata",
                )
            )
        parts.append(el("h2", "Conversation"))
        parts.append(
            el(
                "ol",
                join(_message(m, i) for i, m in enumerate(conv.messages)),
                class_="conversation",
                id="conversation",
            )
        )
    elif data.tenant_id is None:
        parts.append(
            el(
                "p",
                "Viewing every tenant: pick a tenant to see this session's stored conversation.",
                class_="muted",
            )
        )
    else:
        parts.append(el("p", "No stored conversation with this id (only event episodes).", class_="muted"))
    rows = [
        el(
            "tr",
            el("td", when(ep.created_at)),
            el("td", badge(ep.event_type, "event")),
            el("td", content_cell(ep)),
            el("td", ep.tenant_id) if data.tenant_id is None else None,
            el("td", status_of(ep, now)),
            el("td", episode_link(view, ep, "details →")),
            class_=f"episode status-{episode_status(ep, now)}",
            data_episode_id=ep.id,
        )
        for ep in data.episodes
    ]
    parts.append(el("h2", f"Episodes of this session ({len(data.episodes)})"))
    head = el(
        "thead",
        el(
            "tr",
            el("th", "Happened"),
            el("th", "Event"),
            el("th", "Content"),
            el("th", "Tenant") if data.tenant_id is None else None,
            el("th", "Status"),
            el("th", ""),
        ),
    )
    parts.append(
        el(
            "table",
            head,
            el("tbody", join(rows)) if rows else el("tbody", el("tr", el("td", "none", colspan=6))),
            class_="list",
            id="session-episodes",
        )
    )
    return page(view, f"Session {data.session_id}", join(parts), active="Sessions")
