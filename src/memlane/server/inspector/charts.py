"""Inline SVG charts of the inspector: score breakdown bars, time-interval strips, histograms.

Plain SVG elements with classes (colours live in ``static/inspector.css``); no script, no
external resource, so the pages work under a ``default-src 'none'`` content security policy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from memlane.server.inspector.html import Html, el

__all__ = [
    "Bar",
    "GraphEdge",
    "GraphNode",
    "bar_rows",
    "contribution_bar",
    "histogram",
    "interval_strip",
    "neighbourhood_graph",
]

Bar = tuple[str, float | None, str]
"""``(label, value in [0, 1] or None, css class)`` of one bar row."""


def _num(value: float) -> str:
    return f"{value:.1f}"


def bar_rows(
    bars: Sequence[Bar], *, width: int = 320, label_width: int = 82, row: int = 18, values: bool = True
) -> Html:
    """Horizontal bars, one per signal, each on a [0, 1] track with its value printed.

    Args:
        bars: Rows; a ``None`` value is drawn as an empty track marked ``n/a``.
        width: Total SVG width in px.
        label_width: Width of the label column in px.
        row: Row height in px.
        values: Print each value after its bar.
    """
    track = width - label_width - (48 if values else 4)
    rows: list[Html] = []
    for i, (label, value, css) in enumerate(bars):
        y = i * row
        shown = "n/a" if value is None else f"{value:.3f}"
        filled = 0.0 if value is None else max(0.0, min(1.0, value)) * track
        rows.append(
            el(
                "g",
                el("title", f"{label}: {shown}"),
                el("text", label, x=0, y=y + 13, class_="bar-label"),
                el("rect", x=label_width, y=y + 3, width=track, height=row - 6, rx=3, class_="track"),
                el(
                    "rect",
                    x=label_width,
                    y=y + 3,
                    width=_num(filled),
                    height=row - 6,
                    rx=3,
                    class_=f"bar {css}",
                    data_value=shown,
                ),
                el("text", shown, x=label_width + track + 6, y=y + 13, class_="bar-value")
                if values
                else None,
                class_="bar-row",
                data_signal=label,
            )
        )
    height = row * len(bars)
    return el(
        "svg",
        rows,
        xmlns="http://www.w3.org/2000/svg",
        width=width,
        height=height,
        viewBox=f"0 0 {width} {height}",
        role="img",
        aria_label="score breakdown",
        class_="breakdown",
    )


def contribution_bar(
    parts: Sequence[tuple[str, float, str]], *, width: int = 320, label_width: int = 82
) -> Html:
    """One stacked bar: how much each weighted signal adds to the score (they sum to the score).

    Args:
        parts: ``(label, contribution in [0, 1], css class)``; contributions sum to at most 1.
        width: Total SVG width in px.
        label_width: Width of the label column in px.
    """
    track = width - label_width - 48
    x = float(label_width)
    segments: list[Html] = []
    for label, value, css in parts:
        w = max(0.0, value) * track
        segments.append(
            el(
                "rect",
                el("title", f"{label} adds {value:.3f}"),
                x=_num(x),
                y=3,
                width=_num(w),
                height=12,
                class_=f"bar {css}",
                data_signal=label,
                data_points=repr(value),
            )
        )
        x += w
    total = sum(v for _, v, _ in parts)
    return el(
        "svg",
        el("text", "score =", x=0, y=13, class_="bar-label"),
        el("rect", x=label_width, y=3, width=track, height=12, rx=3, class_="track"),
        segments,
        el("text", f"{total:.3f}", x=label_width + track + 6, y=13, class_="bar-value"),
        xmlns="http://www.w3.org/2000/svg",
        width=width,
        height=18,
        viewBox=f"0 0 {width} 18",
        role="img",
        aria_label="contributions to the score",
        class_="contributions",
    )


def interval_strip(
    start: datetime,
    end: datetime | None,
    recorded: datetime,
    retired: datetime | None,
    *,
    lo: float,
    hi: float,
    now: datetime,
    width: int = 170,
) -> Html:
    """A small bar of an episode's valid time on a shared axis, with its recorded time marked.

    The bar runs from ``start`` (valid_from) to ``end`` (valid_until; open to ``now`` when
    ``None``); a dot marks ``recorded`` (when memlane learned it) and a cross bar ``retired``
    (invalidated_at). ``lo``/``hi`` are the axis bounds in POSIX seconds.
    """
    span = max(hi - lo, 1.0)

    def x(t: datetime) -> float:
        return 4 + (min(max(t.timestamp(), lo), hi) - lo) / span * (width - 8)

    x0, x1 = x(start), x(end or now)
    parts: list[Html] = [
        el("line", x1=4, y1=9, x2=width - 4, y2=9, class_="axis"),
        el(
            "rect",
            x=_num(x0),
            y=4,
            width=_num(max(x1 - x0, 2.0)),
            height=10,
            rx=2,
            class_="valid" if end is None else "valid ended",
        ),
        el("circle", cx=_num(x(recorded)), cy=9, r=3, class_="recorded"),
    ]
    if retired is not None:
        parts.append(el("line", x1=_num(x(retired)), y1=1, x2=_num(x(retired)), y2=17, class_="retired"))
    until = "now" if end is None else f"{end:%Y-%m-%d %H:%M}"
    title = f"valid {start:%Y-%m-%d %H:%M} → {until}; recorded {recorded:%Y-%m-%d %H:%M}"
    if retired is not None:
        title += f"; retired {retired:%Y-%m-%d %H:%M}"
    return el(
        "svg",
        el("title", title),
        parts,
        xmlns="http://www.w3.org/2000/svg",
        width=width,
        height=18,
        viewBox=f"0 0 {width} 18",
        class_="strip",
    )


def _panel(
    title: str, labels: Sequence[str], counts: Sequence[int], css: str, *, top: int, width: int, height: int
) -> Html:
    """One bar panel of :func:`histogram`: counts per bin on their own scale, starting at ``top``."""
    left = 44
    plot_w, plot_h = width - left - 8, height - 22
    peak = max([*counts, 1])
    step = plot_w / len(labels)
    bars = [
        el(
            "rect",
            el("title", f"{labels[i]}: {counts[i]} {title}"),
            x=_num(left + i * step + step * 0.12),
            y=_num(top + 18 + plot_h - counts[i] / peak * plot_h),
            width=_num(max(step * 0.76, 1.0)),
            height=_num(counts[i] / peak * plot_h),
            class_=f"hist-bar {css}",
        )
        for i in range(len(labels))
        if counts[i]
    ]
    return el(
        "g",
        el("text", title, x=left, y=top + 11, class_="panel-title"),
        el("line", x1=left, y1=top + 18 + plot_h, x2=width - 8, y2=top + 18 + plot_h, class_="axis"),
        el("text", str(peak), x=left - 6, y=top + 26, class_="tick", text_anchor="end"),
        el("text", "0", x=left - 6, y=top + 18 + plot_h, class_="tick", text_anchor="end"),
        bars,
    )


def histogram(
    labels: Sequence[str],
    happened: Sequence[int],
    recorded: Sequence[int],
    *,
    width: int = 1000,
    panel_height: int = 110,
) -> Html:
    """Episodes per time bin, in two panels sharing the time axis, each on its own scale.

    The top panel counts episodes by when they happened (``created_at``), the bottom one by
    when memlane recorded them (``recorded_at``); a bulk import shows up as one tall bar
    below while the bars above spread over the months the conversations covered.

    Args:
        labels: One label per bin (e.g. ``2026-05``), same length as the counts.
        happened: Episodes whose ``created_at`` falls in each bin.
        recorded: Episodes whose ``recorded_at`` falls in each bin.
        width: Width of the SVG's coordinate system in px (it scales to its container).
        panel_height: Height of each panel in px.
    """
    n = len(labels)
    if n == 0:
        return el("p", "No episodes to plot.", class_="muted")
    gap = 14
    height = 2 * panel_height + gap + 22
    left, step = 44, (width - 44 - 8) / n
    every = max(1, n // 10)
    ticks = [
        el(
            "text",
            labels[i],
            x=_num(left + i * step + step / 2),
            y=height - 6,
            class_="tick",
            text_anchor="middle",
        )
        for i in range(0, n, every)
    ]
    return el(
        "svg",
        _panel(
            "happened (created_at)", labels, happened, "happened", top=0, width=width, height=panel_height
        ),
        _panel(
            "recorded (recorded_at)",
            labels,
            recorded,
            "recorded",
            top=panel_height + gap,
            width=width,
            height=panel_height,
        ),
        ticks,
        xmlns="http://www.w3.org/2000/svg",
        viewBox=f"0 0 {width} {height}",
        preserveAspectRatio="xMinYMin meet",
        role="img",
        aria_label="episodes over time",
        class_="histogram",
    )


@dataclass(frozen=True, slots=True)
class GraphNode:
    """A node of :func:`neighbourhood_graph`. Attributes: key: Its id (edges name it). label: The text
    shown (escaped; cut to 24 characters). hops: Its ring (0 = the centre). href: Where it links."""

    key: str
    label: str
    hops: int
    href: str


GraphEdge = tuple[str, str, str]
"""``(source key, target key, label)`` of one edge of :func:`neighbourhood_graph`."""

_LABEL_CHARS = 24


def _cut_label(text: str, limit: int = _LABEL_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _positions(
    nodes: Sequence[GraphNode], cx: float, cy: float, step: float
) -> dict[str, tuple[float, float]]:
    """A radial layout: the centre node in the middle, hop ``k`` on a ring of radius ``k * step``,
    each ring's nodes evenly spaced (rings turned against each other so labels do not line up)."""
    rings: dict[int, list[GraphNode]] = {}
    for node in nodes:
        rings.setdefault(node.hops, []).append(node)
    out: dict[str, tuple[float, float]] = {}
    for hops, ring in rings.items():
        for i, node in enumerate(ring):
            if hops == 0:
                out[node.key] = (cx, cy)
                continue
            angle = 2 * math.pi * i / len(ring) + hops * 0.45 - math.pi / 2
            out[node.key] = (cx + hops * step * math.cos(angle), cy + hops * step * 0.82 * math.sin(angle))
    return out


def neighbourhood_graph(
    nodes: Sequence[GraphNode], edges: Sequence[GraphEdge], *, width: int = 760, height: int = 460
) -> Html:
    """An entity's neighbourhood as a small node-link diagram (inline SVG, no script).

    Args:
        nodes: The entities, the centre first (``hops`` 0); each links to its page.
        edges: Facts between two of ``nodes``, drawn as lines with the predicate at the middle
            (and as a tooltip); an edge naming an unknown node is left out.
        width: SVG width in px. height: SVG height in px.
    """
    deepest = max((n.hops for n in nodes), default=0)
    step = (min(width, height / 0.82) / 2 - 60) / max(deepest, 1)
    at = _positions(nodes, width / 2, height / 2, step)
    lines: list[Html] = []
    for source, target, label in edges:
        if source not in at or target not in at or source == target:
            continue
        (x1, y1), (x2, y2) = at[source], at[target]
        lines.append(
            el(
                "g",
                el("title", f"{source} {label} {target}"),
                el("line", x1=_num(x1), y1=_num(y1), x2=_num(x2), y2=_num(y2), class_="edge"),
                el(
                    "text",
                    _cut_label(label, 20),
                    x=_num((x1 + x2) / 2),
                    y=_num((y1 + y2) / 2 - 3),
                    text_anchor="middle",
                    class_="edge-label",
                ),
                class_="graph-edge",
                data_source=source,
                data_target=target,
            )
        )
    circles: list[Html] = []
    for node in nodes:
        x, y = at[node.key]
        radius = 11 if node.hops == 0 else 8
        circles.append(
            el(
                "a",
                el("title", node.label),
                el("circle", cx=_num(x), cy=_num(y), r=radius, class_=f"node hop-{min(node.hops, 4)}"),
                el(
                    "text",
                    _cut_label(node.label),
                    x=_num(x),
                    y=_num(y + radius + 13),
                    text_anchor="middle",
                    class_="node-label",
                ),
                href=node.href,
                class_="graph-node",
                data_entity=node.key,
                data_hops=node.hops,
            )
        )
    return el(
        "svg",
        el("g", lines, class_="edges"),
        el("g", circles, class_="nodes"),
        xmlns="http://www.w3.org/2000/svg",
        width=width,
        height=height,
        viewBox=f"0 0 {width} {height}",
        role="img",
        aria_label="the entity's neighbourhood in the knowledge graph",
        class_="graph",
    )
