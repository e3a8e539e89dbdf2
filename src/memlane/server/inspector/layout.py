"""The inspector's page frame, filter bar and small shared pieces (badges, times, tables)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from memlane import Episode, __version__
from memlane.server.inspector.auth import Principal
from memlane.server.inspector.data import AXES, STATUSES, Filters, episode_status
from memlane.server.inspector.html import Html, el, join, url

__all__ = [
    "PREFIX",
    "View",
    "badge",
    "content_cell",
    "entity_link",
    "episode_link",
    "filter_bar",
    "page",
    "pretty_json",
    "session_link",
    "status_badge",
    "status_counts",
    "status_of",
    "tags",
    "tenant_picker",
    "when",
]

PREFIX = "/inspect"
"""Where the inspector is mounted."""

_NAV = (
    ("Timeline", ""),
    ("Search", "/search"),
    ("Sessions", "/sessions"),
    ("Entities", "/entities"),
    ("Stats", "/stats"),
)
_AXIS_NAMES = {"created": "happened", "valid": "valid time", "recorded": "recorded"}


@dataclass(frozen=True, slots=True)
class View:
    """Who is looking at which tenant (``None``: every tenant, admins only)."""

    who: Principal
    tenant: str | None

    def params(self, **more: object) -> dict[str, object | None]:
        """Query parameters that keep the viewed tenant (admins), plus ``more``."""
        base: dict[str, object | None] = {"tenant": self.tenant} if self.who.is_admin else {}
        return {**base, **more}


def when(t: datetime | None, empty: str = "—") -> Html:
    """A UTC time as ``YYYY-MM-DD HH:MM`` with the full ISO time as a tooltip."""
    if t is None:
        return el("span", empty, class_="muted")
    return el("time", f"{t:%Y-%m-%d %H:%M}", datetime=t.isoformat(), title=t.isoformat())


class BiTemporal(Protocol):
    """Anything with both time axes: an episode or a fact."""

    @property
    def valid_from(self) -> datetime: ...
    @property
    def valid_until(self) -> datetime | None: ...
    @property
    def recorded_at(self) -> datetime: ...
    @property
    def invalidated_at(self) -> datetime | None: ...


def time_axes(item: BiTemporal) -> Html:
    """One line of ``item``'s valid time and recorded time: ``valid A → B · recorded C · retired D``."""
    return el(
        "div",
        "valid ",
        when(item.valid_from),
        " → ",
        when(item.valid_until, "now"),
        " · recorded ",
        when(item.recorded_at),
        " · retired ",
        when(item.invalidated_at, "—"),
        class_="small",
    )


def badge(text: str, kind: str = "") -> Html:
    """A small rounded label."""
    return el("span", text, class_=f"badge {kind}".strip())


def status_badge(status: str) -> Html:
    """The badge of an episode status (see :data:`memlane.server.inspector.data.STATUSES`)."""
    return el("span", status, class_=f"badge status status-{status}", data_status=status)


def tags(values: Sequence[str]) -> Html:
    """Tags as chips."""
    return join(el("span", t, class_="tag") for t in values)


def episode_link(view: View, episode: Episode, text: object | None = None) -> Html:
    """A link to an episode's page (its id by default)."""
    href = url(PREFIX + "/episodes", view.params(), episode.id)
    return el(
        "a", episode.id if text is None else text, href=href, class_="mono" if text is None else "details"
    )


def session_link(view: View, tenant: str, session_id: str) -> Html:
    """A link to a session's page within ``tenant``."""
    params = {"tenant": tenant} if view.who.is_admin else {}
    return el("a", session_id, href=url(PREFIX + "/sessions", params, session_id), class_="mono session-link")


def entity_link(view: View, tenant: str, key: str, text: object | None = None) -> Html:
    """A link to an entity's page within ``tenant`` (its key as the path; its name by default)."""
    params = {"tenant": tenant} if view.who.is_admin else {}
    return el(
        "a", key if text is None else text, href=url(PREFIX + "/entities", params, key), class_="entity-link"
    )


def content_cell(episode: Episode, limit: int = 280) -> Html:
    """An episode's content (cut at ``limit`` characters) with its tags."""
    text = episode.content if len(episode.content) <= limit else episode.content[: limit - 1] + "…"
    return el("div", el("div", text, class_="content"), tags(episode.tags) if episode.tags else None)


def pretty_json(value: Any) -> Html:
    """``value`` as indented JSON in a ``<pre>`` (escaped)."""
    return el("pre", json.dumps(value, indent=2, ensure_ascii=False, default=str), class_="json")


def _options(values: Sequence[tuple[str, str]], selected: str | None) -> Html:
    return join(
        el("option", label, value=value, selected=value == (selected or "")) for value, label in values
    )


def filter_bar(
    view: View,
    action: str,
    flt: Filters,
    *,
    tenants: Sequence[str],
    sessions: Sequence[str] = (),
    event_types: Sequence[str] = (),
    extra: Html | None = None,
    show_range: bool = True,
) -> Html:
    """The GET form of filters shared by the timeline and search pages."""
    fields: list[Html] = []
    if extra is not None:
        fields.append(extra)
    if view.who.is_admin:
        choices = [("", "all tenants"), *((t, t) for t in tenants)]
        if view.tenant and view.tenant not in tenants:
            choices.append((view.tenant, view.tenant))
        fields.append(
            _field("Tenant", el("select", _options(choices, view.tenant), name="tenant", id="f-tenant"))
        )
    else:
        fields.append(_field("Tenant", el("span", view.tenant or "", class_="fixed mono", id="f-tenant")))
    fields.append(
        _field(
            "Session",
            el(
                "input",
                type="text",
                name="session",
                value=flt.session or "",
                list="sessions",
                id="f-session",
                placeholder="any",
            ),
        )
    )
    fields.append(
        _field(
            "Event type",
            el(
                "input",
                type="text",
                name="event_type",
                value=flt.event_type or "",
                list="event-types",
                id="f-event-type",
                placeholder="any",
            ),
        )
    )
    # one field per tag (each value is one tag, commas included, as on the API), plus an empty one
    for position, tag in enumerate((*flt.tags, "")):
        fields.append(
            _field(
                "Tag" if position == 0 else "and tag",
                el(
                    "input",
                    type="text",
                    name="tag",
                    value=tag,
                    id="f-tags" if position == 0 else f"f-tag-{position}",
                    placeholder="any" if position == 0 else "another (all must match)",
                ),
            )
        )
    fields.append(
        _field(
            "Status",
            el("select", _options([(s, s) for s in STATUSES], flt.status), name="status", id="f-status"),
        )
    )
    if show_range:
        fields.append(
            _field(
                "Time axis",
                el(
                    "select",
                    _options([(a, _AXIS_NAMES[a]) for a in AXES], flt.axis),
                    name="axis",
                    id="f-axis",
                ),
            )
        )
        fields.append(
            _field(
                "From",
                el(
                    "input",
                    type="date",
                    name="start",
                    id="f-start",
                    value="" if flt.start is None else f"{flt.start:%Y-%m-%d}",
                ),
            )
        )
        fields.append(
            _field(
                "Before",
                el(
                    "input",
                    type="date",
                    name="end",
                    id="f-end",
                    value="" if flt.end is None else f"{flt.end:%Y-%m-%d}",
                ),
            )
        )
    fields.append(el("button", "Apply", type="submit", class_="primary"))
    lists = join(
        [
            el("datalist", join(el("option", value=s) for s in sessions), id="sessions"),
            el("datalist", join(el("option", value=e) for e in event_types), id="event-types"),
        ]
    )
    return el("form", join(fields), lists, method="get", action=action, class_="filters")


def tenant_picker(view: View, action: str, tenants: Sequence[str]) -> Html | None:
    """For admins: a one-field form choosing the viewed tenant (``None`` for other keys)."""
    if not view.who.is_admin:
        return None
    choices = [("", "all tenants"), *((t, t) for t in tenants)]
    select = el("select", _options(choices, view.tenant), name="tenant", id="f-tenant")
    button = el("button", "Show", type="submit", class_="primary")
    return el("form", _field("Tenant", select), button, method="get", action=action, class_="filters")


def _field(label: str, control: Html) -> Html:
    return el("label", el("span", label), control, class_="field")


def status_counts(counts: Mapping[str, int]) -> Html:
    """``active 12 · superseded 3 ...`` as badges."""
    return join(
        el("span", status_badge(s), " ", el("b", str(counts.get(s, 0))), class_="count")
        for s in STATUSES[1:]
        if counts.get(s)
    )


def page(view: View | None, title: str, body: Html, *, active: str = "", heading: bool = True) -> Html:
    """The whole HTML document: header with navigation and identity, then ``body``."""
    head = el(
        "head",
        el("meta", charset="utf-8"),
        el("meta", name="viewport", content="width=device-width, initial-scale=1"),
        el("meta", name="referrer", content="same-origin"),
        el("title", f"{title} · memlane inspector"),
        el("link", rel="stylesheet", href=PREFIX + "/static/inspector.css"),
    )
    nav: Html = Html("")
    who: Html = Html("")
    if view is not None:
        nav = el(
            "nav",
            join(
                el(
                    "a",
                    name,
                    href=url(PREFIX + path, view.params()),
                    class_="active" if name == active else None,
                )
                for name, path in _NAV
            ),
        )
        logout = (
            el(
                "form",
                el("button", "Log out", type="submit", class_="link"),
                method="post",
                action=PREFIX + "/logout",
            )
            if view.who.via_cookie
            else None
        )
        scope = "all tenants" if view.tenant is None else f"viewing {view.tenant}"
        who = el(
            "div",
            el("span", view.who.label, class_="who-key"),
            el("span", scope, class_="who-scope"),
            logout,
            class_="who",
        )
    header = el(
        "header",
        el("a", "memlane", el("span", "inspector"), href=PREFIX, class_="brand"),
        nav,
        who,
        class_="top",
    )
    footer = el("footer", f"memlane {__version__} · read-only · times in UTC")
    document = el(
        "html",
        head,
        el("body", header, el("main", el("h1", title) if heading else None, body), footer),
        lang="en",
    )
    return Html("<!doctype html>\n" + document)


def status_of(episode: Episode, now: datetime) -> Html:
    """The status badge of ``episode`` at ``now``."""
    return status_badge(episode_status(episode, now))
