"""The inspector's statistics page: store figures and episodes over time."""

from __future__ import annotations

from collections.abc import Sequence

from memlane.server.inspector import charts
from memlane.server.inspector.data import StatsView
from memlane.server.inspector.html import Html, el, join
from memlane.server.inspector.layout import PREFIX, View, badge, page, status_counts, tenant_picker, when

__all__ = ["stats_page"]


def stats_page(view: View, data: StatsView, tenants: Sequence[str]) -> Html:
    """Store statistics for the view and a plot of episodes over time."""
    s = data.stats
    cards = [
        ("episodes", f"{s.episodes:,}"),
        ("with vectors", f"{s.with_vectors:,}"),
        ("tenants", f"{s.tenants:,}"),
        ("sessions", f"{s.sessions:,}"),
        ("oldest", when(s.oldest)),
        ("newest", when(s.newest)),
        (
            "embedding model",
            "none" if s.embedding_model is None else f"{s.embedding_model[0]} ({s.embedding_model[1]} dims)",
        ),
        ("schema version", str(s.schema_version)),
    ]
    if view.who.is_admin:
        cards.append(("location", s.location))
    wide = {"embedding model", "location"}
    grid = el(
        "div",
        join(
            el(
                "div",
                el("div", k, class_="k"),
                el("div", v, class_="v mono" if k in wide else "v"),
                class_="stat wide" if k in wide else "stat",
            )
            for k, v in cards
        ),
        class_="stats",
        id="stats",
    )
    plot = el(
        "section",
        el("h2", f"Episodes per {data.bin_name}"),
        el(
            "p",
            "Top: by when each episode happened. Bottom: by when memlane recorded it (a bulk import "
            "is one tall bar). Each panel has its own scale.",
            class_="small muted",
        ),
        charts.histogram(data.labels, data.happened, data.recorded),
        class_="card",
        id="plot",
    )
    types = sorted(s.event_types.items(), key=lambda kv: (-kv[1], kv[0]))
    peak = max((n for _, n in types), default=1)
    type_rows = el(
        "table",
        el(
            "tbody",
            join(
                el(
                    "tr",
                    el("td", badge(name, "event")),
                    el(
                        "td",
                        charts.bar_rows(
                            [("", n / peak, "sig-count")], width=260, label_width=0, values=False
                        ),
                    ),
                    el("td", str(n), class_="num"),
                )
                for name, n in types
            ),
        ),
        class_="list",
    )
    status = el("p", "Status: ", status_counts(data.statuses), class_="summary")
    tenants_table = None
    if view.tenant is None and data.per_tenant:
        tenants_table = el(
            "section",
            el("h2", "Episodes per tenant"),
            el(
                "table",
                el(
                    "tbody",
                    join(
                        el("tr", el("td", t, class_="mono"), el("td", str(n), class_="num"))
                        for t, n in sorted(data.per_tenant.items())
                    ),
                ),
                class_="list",
            ),
        )
    body = join(
        [
            tenant_picker(view, PREFIX + "/stats", tenants),
            grid,
            status,
            plot,
            el("section", el("h2", "Event types"), type_rows),
            tenants_table,
        ]
    )
    return page(view, "Stats", body, active="Stats")
