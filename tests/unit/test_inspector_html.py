"""The inspector's HTML builder escapes everything that is not markup it built itself."""

from __future__ import annotations

from memlane.server.inspector.html import Html, el, esc, join, url


def test_text_and_attributes_are_escaped() -> None:
    evil = '"><script>alert(1)</script>'
    out = el("a", evil, href=evil, title="x'y", class_="c", data_id="1", hidden=True, disabled=False)
    assert "<script>" not in out
    assert out == (
        '<a href="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;" '
        'title="x&#x27;y" class="c" data-id="1" hidden>'
        "&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;</a>"
    )


def test_markup_passes_through_once_and_lists_are_flattened() -> None:
    inner = el("b", "<i>")
    assert el("p", inner, [" ", "&", None, [el("br")]]) == "<p><b>&lt;i&gt;</b> &amp;<br></p>"
    assert esc(inner) is inner
    assert join(["<", Html("<hr>")], sep="&") == "&lt;&amp;<hr>"


def test_urls_encode_segments_and_drop_empty_parameters() -> None:
    assert url("/inspect/episodes", {"tenant": "a b", "x": None, "y": ""}, "id/with?odd#chars") == (
        "/inspect/episodes/id%2Fwith%3Fodd%23chars?tenant=a+b"
    )
    assert url("/inspect") == "/inspect"


def test_a_session_page_folds_long_metadata_above_the_conversation() -> None:
    from datetime import UTC, datetime

    from memlane import Message, SessionEpisode
    from memlane.server.inspector.auth import Principal
    from memlane.server.inspector.data import SessionView
    from memlane.server.inspector.layout import View
    from memlane.server.inspector.pages_sessions import session_page

    at = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    metadata = {
        "locomo_sample": "conv-26",
        "speakers": ["Caroline", "Melanie"],
        "observation": ["x" * 80] * 30,
    }
    conversation = SessionEpisode(
        "conv-26:1", "t", "locomo", "conv-26", (Message("user", "Hi Mel!"),), at, at, metadata
    )
    html = str(
        session_page(View(Principal("t", False), "t"), SessionView("conv-26:1", "t", [], conversation), at)
    )
    folded = html.index('<details class="metadata"')
    assert folded < html.index('id="conversation"')
    assert "metadata (3 keys: locomo_sample, observation, speakers)" in html
    assert "<details open" not in html  # closed by default: the conversation comes first on screen


def test_the_neighbourhood_graph_escapes_labels_and_stays_in_its_box() -> None:
    import re

    from memlane.server.inspector.charts import GraphNode, neighbourhood_graph

    hostile = '<img src=x onerror=alert(1)>"'
    nodes = [
        GraphNode("ana", "Ana", 0, "/inspect/entities/ana"),
        *(GraphNode(f"n{i}", hostile if i == 0 else f"n{i}", 1 + i % 3, f"/x?a=1&b={i}") for i in range(9)),
    ]
    svg = neighbourhood_graph(nodes, [("ana", "n0", "knows<b>"), ("ana", "ghost", "x"), ("n1", "n1", "self")])
    assert "<img" not in svg and "<b>" not in svg and "&lt;img src=x onerror=alert(1)&gt;&quot;" in svg
    assert 'href="/x?a=1&amp;b=0"' in svg  # attribute values escaped too
    assert svg.count('class="graph-edge"') == 1  # an unknown node or a loop draws no edge
    assert svg.count('class="graph-node"') == len(nodes)
    xs = [float(x) for x in re.findall(r'<circle cx="([\d.]+)"', svg)]
    ys = [float(y) for y in re.findall(r'<circle cx="[\d.]+" cy="([\d.]+)"', svg)]
    assert all(10 < x < 750 for x in xs) and all(10 < y < 450 for y in ys)  # inside the 760x460 box
