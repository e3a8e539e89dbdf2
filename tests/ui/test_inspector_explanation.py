"""The inspector's search page renders the ranking's own breakdown: its parts add up to the score it shows.

Issue #19: the page used to re-derive the ranking (the header said "weighted mean", the stacked bar
read 0.441 under a headline 0.469, the sentences named importance or recency where relevance
decided). Here the real ``memlane serve`` app on a real SQLite file (bundled model) is asked for the
search page and, for the same queries, the HTTP API for the hits an agent gets; for every hit shown
the rendered contributions must add up to the headline score, the bar's total must read the same,
and the sentence must name the component that really decided (the breakdown's ``decided_by``).
"""

from __future__ import annotations

import html
import re
from urllib.parse import urlencode

import httpx
import pytest

from tests.ui.conftest import ACME_KEY

QUERIES = (
    "did any payment fail?",
    "what does the user eat on flights?",
    "what did the user book in May?",
    "window or aisle seat",
)

_SCORE = re.compile(r'<span class="score" title="score" data-score="([^"]+)">([^<]+)</span>')
_POINTS = re.compile(r'data-signal="(\w+)" data-points="([^"]+)"')
_BAR = re.compile(r'<svg[^>]*class="contributions">(.*?)</svg>', re.S)
_TOTAL = re.compile(r'<text[^>]*class="bar-value">([^<]+)</text>')
_LINES = re.compile(r"<li>(.*?)</li>", re.S)


def _cards(page: str) -> list[tuple[str, str]]:
    """``(episode id, card html)`` of every hit on the search page, in rank order."""
    parts = page.split('<article class="hit" data-episode-id="')[1:]
    return [(part.split('"', 1)[0], part.split("</article>", 1)[0]) for part in parts]


@pytest.mark.parametrize("preset", [None, "cold_start", "conversation"])
@pytest.mark.parametrize("query", QUERIES)
def test_every_shown_hit_adds_up_and_names_what_decided(server: str, query: str, preset: str | None) -> None:
    params = {"q": query, "limit": 10, **({"preset": preset} if preset else {})}
    page = httpx.get(f"{server}/inspect/search?{urlencode(params)}", headers={"X-API-Key": ACME_KEY})
    assert page.status_code == 200
    assert "weighted mean" not in page.text
    body = {"query": query, "scope": "tenant", "limit": 10, **({"preset": preset} if preset else {})}
    api = httpx.post(f"{server}/v1/recall", json=body, headers={"Authorization": f"Bearer {ACME_KEY}"}).json()
    cards = _cards(page.text)
    assert [episode_id for episode_id, _ in cards] == [h["id"] for h in api["hits"]]
    assert cards, "the query must find something"
    for (_, card), hit in zip(cards, api["hits"], strict=True):
        b = hit["breakdown"]
        (score, shown), *_ = _SCORE.findall(card)
        assert float(score) == pytest.approx(b["score"], abs=1e-12) and shown == f"{b['score']:.3f}"
        points = dict(_POINTS.findall(card))
        assert sorted(points) == ["importance", "recency", "relevance"]
        assert sum(float(v) for v in points.values()) == pytest.approx(float(score), abs=1e-9)
        (bar,) = _BAR.findall(card)
        assert _TOTAL.findall(bar) == [shown]  # the stacked bar reads the headline score
        lines = [html.unescape(line) for line in _LINES.findall(card)]
        if b["lead"] is None:
            assert any("nothing ranked below it" in line for line in lines)
        else:
            assert any(f"decided by {b['decided_by']}" in line for line in lines), lines
        times = " \N{MULTIPLICATION SIGN} "
        terms = " + ".join(
            f"{c['signal']} {c['value']:.3f}{times}{c['weight']:.3f}" for c in b["contributions"]
        )
        assert f"Score {shown} = {terms}." in lines
