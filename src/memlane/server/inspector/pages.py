"""The inspector's pages: timeline, search, episode history, login and errors."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from memlane import Episode, RankingWeights, RecallHit
from memlane.graph import Entity
from memlane.models import SIGNALS
from memlane.server.inspector import charts
from memlane.server.inspector.data import (
    Explanation,
    Filters,
    Timeline,
    axis_time,
    episode_status,
)
from memlane.server.inspector.html import Html, el, join, url
from memlane.server.inspector.layout import (
    PREFIX,
    View,
    badge,
    content_cell,
    episode_link,
    filter_bar,
    page,
    pretty_json,
    session_link,
    status_counts,
    status_of,
    tags,
    time_axes,
    when,
)
from memlane.server.inspector.pages_graph import mentioned_entities_section

__all__ = ["SearchForm", "episode_page", "error_page", "login_page", "search_page", "timeline_page"]

_CSS = {"relevance": "sig-relevance", "recency": "sig-recency", "importance": "sig-importance"}


def _importance(value: float | None) -> Html:
    return el("span", "unrated", class_="muted") if value is None else el("span", f"{value:g}", class_="num")


def timeline_page(view: View, flt: Filters, data: Timeline, tenants: Sequence[str]) -> Html:
    """Episodes newest first on the chosen axis, grouped by day, with valid/recorded time strips."""
    bar = filter_bar(view, PREFIX, flt, tenants=tenants, sessions=data.sessions, event_types=data.event_types)
    shown = len(data.episodes)
    summary = el(
        "p",
        f"{data.matched} episode{'s' if data.matched != 1 else ''} match",
        f" (showing the newest {shown} by {flt.axis} time)" if shown < data.matched else "",
        ". ",
        status_counts(data.statuses),
        class_="summary",
    )
    if not data.episodes:
        return page(
            view,
            "Timeline",
            join([bar, summary, el("p", "Nothing to show.", class_="empty")]),
            active="Timeline",
        )
    times = [t for ep in data.episodes for t in (ep.valid_from, ep.recorded_at, ep.valid_until or data.now)]
    lo, hi = min(t.timestamp() for t in times), max(t.timestamp() for t in times)
    rows: list[Html] = []
    day = ""
    for ep in data.episodes:
        t = axis_time(ep, flt.axis)
        if f"{t:%Y-%m-%d}" != day:
            day = f"{t:%Y-%m-%d}"
            rows.append(el("tr", el("th", f"{t:%A %d %B %Y}", colspan=7), class_="day"))
        status = episode_status(ep, data.now)
        rows.append(
            el(
                "tr",
                el("td", when(t), el("div", episode_link(view, ep, "details →"), class_="small")),
                el("td", badge(ep.event_type, "event")),
                el("td", content_cell(ep)),
                el(
                    "td",
                    session_link(view, ep.tenant_id, ep.session_id),
                    el("div", ep.tenant_id, class_="small muted") if view.tenant is None else None,
                ),
                el("td", _importance(ep.importance), class_="num"),
                el(
                    "td",
                    charts.interval_strip(
                        ep.valid_from,
                        ep.valid_until,
                        ep.recorded_at,
                        ep.invalidated_at,
                        lo=lo,
                        hi=hi,
                        now=data.now,
                    ),
                    el(
                        "div",
                        "valid ",
                        when(ep.valid_from),
                        " → ",
                        when(ep.valid_until, "now"),
                        class_="small",
                    ),
                    el("div", "recorded ", when(ep.recorded_at), class_="small muted"),
                ),
                el("td", status_of(ep, data.now)),
                class_=f"episode status-{status}",
                data_episode_id=ep.id,
            )
        )
    head = el(
        "tr",
        el("th", {"created": "Happened", "valid": "Valid from", "recorded": "Recorded"}[flt.axis]),
        el("th", "Event"),
        el("th", "Content"),
        el("th", "Session"),
        el("th", "Imp."),
        el("th", "Valid time ", el("span", "▬ valid · ● recorded · | retired", class_="legend")),
        el("th", "Status"),
    )
    table = el("table", el("thead", head), el("tbody", join(rows)), class_="timeline", id="timeline")
    return page(view, "Timeline", join([bar, summary, table]), active="Timeline")


def _weights_line(
    weights: RankingWeights, preset: str | None, retrieval: str, fusion: str, tie_band: float | None
) -> Html:
    shares = weights.normalized()
    parts = ", ".join(f"{name} {share:.2f}" for name, share in zip(SIGNALS, shares, strict=True))
    band = "" if tie_band is None else f" (tie band {tie_band:.3f} for these weights)"
    how = (
        "score: the seed formula, the weighted mean of cosine, recency and importance"
        if weights.formula == "seed"
        else "score: relevance first; recency and importance only reorder hits whose relevance is within the "
        f"tie band{band}"
    )
    return el(
        "p",
        f"{how}; the stacked bar shows what each signal adds (the parts add up to the score). "
        "Weight shares: ",
        el("b", parts),
        f" ({preset or 'configured default'}) · retrieval {retrieval}",
        f", fusion {fusion}" if retrieval == "hybrid" else "",
        class_="summary",
    )


def _hit_card(view: View, rank: int, hit: RecallHit, why: Explanation, now: datetime) -> Html:
    ep, b = hit.episode, hit.breakdown
    assert b is not None
    bars: list[charts.Bar] = [
        ("relevance", b.relevance, "sig-relevance"),
        ("recency", b.recency, "sig-recency"),
        ("importance", b.importance, "sig-importance"),
    ]
    sub: list[charts.Bar] = []
    if b.dense is not None:
        sub.append(("dense", b.dense, "sig-dense"))
    if b.keyword is not None:
        sub.append(("keyword", b.keyword, "sig-keyword"))
    contrib = [(name, why.contributions[name], _CSS[name]) for name in SIGNALS]
    return el(
        "article",
        el(
            "header",
            el("span", f"#{rank}", class_="rank"),
            el("span", f"{b.score:.3f}", class_="score", title="score", data_score=repr(b.score)),
            badge(ep.event_type, "event"),
            status_of(ep, now),
            el("span", session_link(view, ep.tenant_id, ep.session_id), class_="small"),
            el("span", "tenant ", ep.tenant_id, class_="small muted") if view.tenant is None else None,
            when(ep.created_at),
            episode_link(view, ep, "details →"),
        ),
        content_cell(ep, 600),
        el(
            "div",
            el(
                "div",
                charts.bar_rows(bars),
                charts.contribution_bar(contrib),
                charts.bar_rows(sub) if sub else None,
                class_="bars",
            ),
            el("ul", join(el("li", line) for line in why.lines), class_="why"),
            class_="hit-body",
        ),
        class_="hit",
        data_episode_id=ep.id,
    )


@dataclass(frozen=True, slots=True)
class SearchForm:
    """What the search box shows.

    Attributes:
        query: The query typed ("" before a search).
        preset: The chosen weight preset, or ``None`` for the configured default.
        presets: The preset names offered.
        now: The recall's reference time.
        now_given: Whether the person chose ``now``.
    """

    query: str
    preset: str | None
    presets: Sequence[str]
    now: datetime
    now_given: bool = False


def search_page(
    view: View,
    flt: Filters,
    form: SearchForm,
    results: tuple[list[RecallHit], list[Explanation], RankingWeights, str, str] | None,
    tenants: Sequence[str],
) -> Html:
    """The search box and, after a query, each hit with its score breakdown and explanation.

    ``results``: the hits, their explanations (:func:`memlane.server.inspector.data.explain`),
    the weights, the retrieval mode and the fusion.
    """
    query, preset, presets, now, now_given = form.query, form.preset, form.presets, form.now, form.now_given
    box = el(
        "div",
        el(
            "label",
            el("span", "Query"),
            el(
                "input",
                type="search",
                name="q",
                value=query,
                id="q",
                placeholder="what would the agent ask?",
                autofocus=True,
            ),
            class_="field grow",
        ),
        el(
            "label",
            el("span", "Weights"),
            el(
                "select",
                join(
                    [
                        el("option", "configured default", value=""),
                        *(el("option", p, value=p, selected=p == preset) for p in presets),
                    ]
                ),
                name="preset",
                id="f-preset",
            ),
            class_="field",
        ),
        el(
            "label",
            el("span", "Now (UTC)"),
            el(
                "input",
                type="datetime-local",
                name="now",
                id="f-now",
                value=f"{now:%Y-%m-%dT%H:%M}" if now_given else "",
                title="Replay the recall as of this time (recency and time words); empty: the clock's now",
            ),
            class_="field",
        ),
        class_="searchbox",
    )
    bar = filter_bar(view, PREFIX + "/search", flt, tenants=tenants, extra=box, show_range=False)
    note = el(
        "p",
        "Status 'active' ranks exactly what recall_episodes gives an agent; 'all' also ranks archived "
        "episodes. Superseded episodes are never recalled. Looking does not count as a retrieval.",
        class_="muted small",
    )
    if results is None:
        return page(view, "Search", join([bar, note]), active="Search")
    hits, whys, weights, retrieval, fusion = results
    tie_band = next((h.breakdown.tie_band for h in hits if h.breakdown is not None), None)
    head = join(
        [
            _weights_line(weights, preset, retrieval, fusion, tie_band),
            el("p", "Recall as of ", when(now), class_="small muted"),
        ]
    )
    if not hits:
        return page(view, "Search", join([bar, head, el("p", "No hits.", class_="empty")]), active="Search")
    cards = join(
        _hit_card(view, i, h, w, now) for i, (h, w) in enumerate(zip(hits, whys, strict=True), start=1)
    )
    return page(
        view, "Search", join([bar, head, el("section", cards, class_="hits", id="hits")]), active="Search"
    )


def _fields(ep: Episode) -> Html:
    rows = [
        ("id", el("span", ep.id, class_="mono")),
        ("tenant", el("span", ep.tenant_id, class_="mono")),
        ("session", el("span", ep.session_id, class_="mono")),
        ("event type", badge(ep.event_type, "event")),
        ("tags", tags(ep.tags) if ep.tags else el("span", "none", class_="muted")),
        ("importance", _importance(ep.importance)),
        ("happened (created_at)", when(ep.created_at)),
        ("valid time", join([when(ep.valid_from), " → ", when(ep.valid_until, "open (still true)")])),
        ("recorded at", when(ep.recorded_at)),
        ("retired at", when(ep.invalidated_at, "not retired")),
        ("archived at", when(ep.archived_at, "not archived")),
        ("retrievals", f"{ep.retrieve_count} (last {ep.last_retrieved_at or 'never'})"),
        ("embedding", ep.embedding_model or "none (stored without a vector)"),
    ]
    return el("dl", join(join([el("dt", k), el("dd", v)]) for k, v in rows), class_="fields")


def episode_page(
    view: View, episode: Episode, chain: list[Episode], now: datetime, entities: Sequence[Entity] = ()
) -> Html:
    """One episode's fields, the entities it names (each a link to its page) and its supersede chain."""
    items: list[Html] = []
    for ep in chain:
        current = ep.id == episode.id
        note: Html | None = None
        if ep.superseded_by is not None:
            note = el(
                "div",
                "superseded by ",
                el(
                    "a",
                    ep.superseded_by,
                    href=url(PREFIX + "/episodes", view.params(), ep.superseded_by),
                    class_="mono",
                ),
                f": {ep.supersede_reason}" if ep.supersede_reason else "",
                class_="small",
            )
        items.append(
            el(
                "li",
                el(
                    "div",
                    status_of(ep, now),
                    " ",
                    episode_link(view, ep),
                    " ",
                    el("span", "(this episode)", class_="muted") if current else None,
                    class_="chain-head",
                ),
                el("div", ep.content, class_="content"),
                time_axes(ep),
                note,
                class_="chain-item current" if current else "chain-item",
                data_episode_id=ep.id,
            )
        )
    history = el(
        "section",
        el("h2", "History (supersede chain, oldest first)"),
        el("p", "This episode has no predecessors or successors.", class_="muted")
        if len(chain) == 1
        else None,
        el("ol", join(items), class_="chain", id="history"),
    )
    meta = (
        el("section", el("h2", "Metadata"), pretty_json(dict(episode.metadata))) if episode.metadata else None
    )
    body = join(
        [
            el("section", el("div", episode.content, class_="content big"), _fields(episode), class_="card"),
            mentioned_entities_section(view, entities),
            history,
            meta,
        ]
    )
    return page(view, "Episode", body, active="Timeline")


def login_page(error: str | None = None, next_url: str = PREFIX) -> Html:
    """The login form: paste an API key; the server answers with a session cookie."""
    form = el(
        "form",
        el(
            "label",
            el("span", "API key"),
            el(
                "input",
                type="password",
                name="key",
                id="key",
                autocomplete="off",
                required=True,
                autofocus=True,
            ),
            class_="field grow",
        ),
        el("input", type="hidden", name="next", value=next_url),
        el("button", "Log in", type="submit", class_="primary"),
        method="post",
        action=PREFIX + "/login",
        class_="login",
    )
    text = el(
        "p",
        "Use a key from the server's server.api_keys (make one with 'memlane api-key TENANT'; add "
        "'--role admin' for a key that may view every tenant). The key is exchanged for a session cookie "
        "(HttpOnly, SameSite=Strict) and is not kept by the browser.",
        class_="muted small",
    )
    body = join([el("h1", "Log in"), el("p", error, class_="error") if error else None, form, text])
    return page(None, "Log in", el("section", body, class_="card narrow"), heading=False)


def error_page(view: View | None, status: int, message: str) -> Html:
    """A short error page."""
    titles = {
        401: "Not logged in",
        403: "Forbidden",
        404: "Not found",
        422: "Invalid request",
        503: "Unavailable",
    }
    return page(view, titles.get(status, "Error"), el("p", message, class_="error", id="error"))
