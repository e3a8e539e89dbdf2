"""The inspector's knowledge-graph pages: the tenant's entities, and one entity.

An entity's page shows its current facts, its history (every fact with its valid time and
recorded time, and why a retired one was retired), the episodes linked to it on write, and a
small diagram of its neighbourhood (:func:`memlane.server.inspector.charts.neighbourhood_graph`);
every entity named on it links to its own page.
"""

from __future__ import annotations

from collections.abc import Sequence

from memlane.graph import MAX_GRAPH_DEPTH, Entity, Fact
from memlane.server.inspector import charts
from memlane.server.inspector.data_graph import EntityRow, EntityView, is_current
from memlane.server.inspector.html import Html, el, join, url
from memlane.server.inspector.layout import (
    PREFIX,
    View,
    badge,
    content_cell,
    entity_link,
    episode_link,
    page,
    status_badge,
    tenant_picker,
    time_axes,
    when,
)

__all__ = ["entities_page", "entity_page", "mentioned_entities_section"]

_ACTIVE = "Entities"


def _choose_tenant(view: View, tenants: Sequence[str], action: str) -> Html:
    return join(
        [
            el("p", "The knowledge graph belongs to one tenant: choose one.", class_="empty"),
            tenant_picker(view, action, tenants),
        ]
    )


def entities_page(
    view: View, tenants: Sequence[str], rows: list[EntityRow] | None, total: int, query: str
) -> Html:
    """The tenant's entities that facts name, with a filter by name (``rows`` is ``None``: no tenant)."""
    if rows is None:
        return page(view, "Entities", _choose_tenant(view, tenants, PREFIX + "/entities"), active=_ACTIVE)
    form = el(
        "form",
        el("input", type="hidden", name="tenant", value=view.tenant or "") if view.who.is_admin else None,
        el(
            "label",
            el("span", "Name"),
            el("input", type="search", name="q", value=query, id="entity-q", placeholder="any"),
            class_="field grow",
        ),
        el("button", "Filter", type="submit", class_="primary"),
        method="get",
        action=PREFIX + "/entities",
        class_="filters",
    )
    summary = el("p", f"{total} entit{'y' if total == 1 else 'ies'} named by facts", class_="summary")
    if not rows:
        return page(view, "Entities", join([form, summary, el("p", "Nothing to show.", class_="empty")]))
    assert view.tenant is not None
    tenant = view.tenant
    body = join(
        el(
            "tr",
            el("td", entity_link(view, tenant, r.id, r.name)),
            el("td", r.id, class_="mono small"),
            el("td", str(r.current), class_="num"),
            el("td", str(r.total), class_="num"),
            data_entity=r.id,
        )
        for r in rows
    )
    head = el("tr", el("th", "Entity"), el("th", "Key"), el("th", "Current facts"), el("th", "All facts"))
    table = el("table", el("thead", head), el("tbody", body), class_="entities", id="entities")
    return page(view, "Entities", join([form, summary, table]), active=_ACTIVE)


def _target(view: View, tenant: str, fact: Fact, names: dict[str, str]) -> Html:
    parts: list[Html] = []
    if fact.object is not None:
        parts.append(entity_link(view, tenant, fact.object, names.get(fact.object, fact.object)))
    if fact.value is not None:
        parts.append(el("span", fact.value, class_="fact-value"))
    return join(parts, " = ")


def _facts_table(view: View, tenant: str, facts: list[Fact], names: dict[str, str], table_id: str) -> Html:
    rows = join(
        el(
            "tr",
            el("td", entity_link(view, tenant, f.subject, names.get(f.subject, f.subject))),
            el("td", badge(f.predicate, "predicate")),
            el("td", _target(view, tenant, f, names)),
            el("td", when(f.valid_from), " → ", when(f.valid_until, "now"), class_="small"),
            el("td", f"{f.confidence:.2f}", class_="num"),
            el("td", "—" if f.importance is None else f"{f.importance:g}", class_="num"),
            el("td", f.method, class_="small muted"),
            data_fact_id=f.id,
        )
        for f in facts
    )
    head = el(
        "tr",
        el("th", "Subject"),
        el("th", "Predicate"),
        el("th", "Object / value"),
        el("th", "Valid"),
        el("th", "Conf."),
        el("th", "Imp."),
        el("th", "How"),
    )
    return el("table", el("thead", head), el("tbody", rows), class_="facts", id=table_id)


def _history(view: View, tenant: str, found: EntityView, names: dict[str, str]) -> Html:
    facts = found.history
    times = [t for f in facts for t in (f.valid_from, f.recorded_at, f.valid_until or found.now)]
    lo, hi = min(t.timestamp() for t in times), max(t.timestamp() for t in times)
    items = []
    for f in facts:
        live = is_current(f, found.now)
        retired = (
            el("div", "retired: ", f.supersede_reason or "—", class_="small") if f.invalidated_at else None
        )
        items.append(
            el(
                "li",
                el(
                    "div",
                    status_badge("active" if live else "superseded" if f.invalidated_at else "ended"),
                    " ",
                    entity_link(view, tenant, f.subject, names.get(f.subject, f.subject)),
                    " ",
                    badge(f.predicate, "predicate"),
                    " ",
                    _target(view, tenant, f, names),
                    class_="chain-head",
                ),
                charts.interval_strip(
                    f.valid_from, f.valid_until, f.recorded_at, f.invalidated_at, lo=lo, hi=hi, now=found.now
                ),
                time_axes(f),
                retired,
                class_="fact-item" if live else "fact-item retired",
                data_fact_id=f.id,
            )
        )
    return el("ol", join(items), class_="fact-history", id="history")


def _names(found: EntityView) -> dict[str, str]:
    names = {n.entity.id: n.entity.name for n in found.neighbours}
    names.setdefault(found.entity.id, found.entity.name)
    return names


def _graph(view: View, tenant: str, found: EntityView, names: dict[str, str]) -> Html:
    params = {"tenant": tenant} if view.who.is_admin else {}
    nodes = [
        charts.GraphNode(
            n.entity.id,
            n.entity.name,
            n.hops,
            url(PREFIX + "/entities", {**params, "depth": found.depth}, n.entity.id),
        )
        for n in found.neighbours
    ]
    edges = [(f.subject, f.object or "", f.predicate) for f in found.edges]
    depth_links = join(
        [
            "depth ",
            join(
                (
                    el("b", str(d))
                    if d == found.depth
                    else el(
                        "a", str(d), href=url(PREFIX + "/entities", {**params, "depth": d}, found.entity.id)
                    )
                )
                for d in range(1, MAX_GRAPH_DEPTH + 1)
            ),
        ],
        " ",
    )
    cut = (
        el("p", f"{found.cut} more entities within {found.depth} hops are not drawn.", class_="small muted")
        if found.cut
        else None
    )
    return el(
        "section",
        el("h2", "Neighbourhood"),
        el("p", depth_links, class_="small depth", id="depth"),
        charts.neighbourhood_graph(nodes, edges)
        if len(nodes) > 1
        else el("p", "No fact links this entity to another one.", class_="muted"),
        cut,
        el("p", "Current facts between these entities; each node opens its page.", class_="small muted"),
        class_="card",
        id="graph",
    )


def _fields(entity: Entity) -> Html:
    rows = [
        ("key", el("span", entity.id, class_="mono")),
        ("type", badge(entity.entity_type)),
        ("aliases", join((el("span", a, class_="tag") for a in entity.aliases), " ") or "none"),
        ("first recorded", when(entity.created_at)),
        ("tenant", el("span", entity.tenant_id, class_="mono")),
    ]
    return el("dl", join(join([el("dt", k), el("dd", v)]) for k, v in rows), class_="fields")


def entity_page(view: View, found: EntityView) -> Html:
    """One entity: its fields, current facts, neighbourhood, history and linked episodes."""
    tenant = found.entity.tenant_id
    names = _names(found)
    for f in found.history:
        names.setdefault(f.subject, f.subject)
    current = (
        _facts_table(view, tenant, found.current, names, "current")
        if found.current
        else el("p", "No current facts.", class_="muted", id="current")
    )
    linked = (
        el(
            "ul",
            join(
                el(
                    "li",
                    episode_link(view, e, "episode →"),
                    " ",
                    badge(e.event_type, "event"),
                    " ",
                    when(e.created_at),
                    content_cell(e, 200),
                    data_episode_id=e.id,
                )
                for e in found.linked
            ),
            class_="linked",
            id="linked",
        )
        if found.linked
        else el("p", "No episode is linked to this entity.", class_="muted", id="linked")
    )
    body = join(
        [
            el(
                "section",
                el("div", found.entity.name, class_="content big", id="entity-name"),
                _fields(found.entity),
                class_="card",
            ),
            el("section", el("h2", "Current facts"), current),
            _graph(view, tenant, found, names),
            el(
                "section",
                el("h2", "History (every fact, oldest valid time first)"),
                el("p", "▬ valid time · ● recorded · | retired", class_="small muted"),
                _history(view, tenant, found, names)
                if found.history
                else el("p", "No facts.", class_="muted"),
            ),
            el("section", el("h2", "Linked episodes"), linked),
        ]
    )
    return page(view, "Entity", body, active=_ACTIVE)


def mentioned_entities_section(view: View, entities: Sequence[Entity]) -> Html | None:
    """The episode page's list of the entities it names (``None`` when it names none)."""
    if not entities:
        return None
    links = join((entity_link(view, e.tenant_id, e.id, e.name) for e in entities), " · ")
    return el("section", el("h2", "Entities"), el("p", links, id="entities"))
