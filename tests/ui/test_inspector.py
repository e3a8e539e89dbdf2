"""The memory inspector in a real headless Chromium against a real server and a real store.

Each test saves a screenshot to the artefacts directory (see ``conftest.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from tests.ui.conftest import ACME_KEY, ADMIN_KEY, GLOBEX_MARKER, GLOBEX_SESSION, XSS, Seeded, login


def _shot(page: Any, artifacts: Path, name: str) -> None:
    page.screenshot(path=str(artifacts / f"{name}.png"), full_page=True)


def test_the_timeline_loads_after_login(page: Any, server: str, seeded: Seeded, artifacts: Path) -> None:
    login(page, server, ACME_KEY)
    rows = page.locator("#timeline tr.episode")
    assert rows.count() == seeded.acme_count
    assert "trip-lisbon" in page.inner_text("#timeline")
    assert page.locator("#timeline tr.day").count() >= 5  # grouped by day
    statuses = {rows.nth(i).locator("[data-status]").inner_text() for i in range(rows.count())}
    assert statuses == {"active", "superseded", "archived"}
    assert page.inner_text("#f-tenant") == "acme"  # an agent key sees its tenant, no tenant filter
    assert page.locator("select#f-tenant").count() == 0
    assert page.locator("#timeline svg.strip").count() == seeded.acme_count  # valid/recorded time strips
    _shot(page, artifacts, "timeline")
    page.select_option("#f-status", "superseded")
    page.click("form.filters button[type=submit]")
    superseded = {row.get_attribute("data-episode-id") for row in page.locator("#timeline tr.episode").all()}
    assert superseded == set(seeded.chain[:2])
    page.goto(f"{server}/inspect?tag=seat&status=all&axis=recorded&start=2026-01-01")
    assert page.locator("#timeline tr.episode").count() == 3


def test_a_search_shows_breakdown_bars(page: Any, server: str, seeded: Seeded, artifacts: Path) -> None:
    login(page, server, ACME_KEY)
    page.click("nav >> text=Search")
    page.fill("#q", "what does the user eat on flights?")
    page.click("form.filters button[type=submit]")
    hits = page.locator("#hits article.hit")
    assert hits.count() >= 3
    top = hits.first
    assert "vegetarian" in top.inner_text()
    for signal in ("relevance", "recency", "importance"):
        bar = top.locator(f"g.bar-row[data-signal={signal}] rect.bar")
        assert float(bar.get_attribute("width")) > 0
        assert 0 < float(bar.get_attribute("data-value")) <= 1
    assert top.locator("svg.contributions rect.bar").count() == 3
    assert "decided by" in top.inner_text() or "nothing ranked below it" in top.inner_text()
    assert "Score " in hits.nth(1).inner_text()
    # the inspector shows the ranking an agent gets from the API, score for score
    api = httpx.post(
        f"{server}/v1/recall",
        json={"query": "what does the user eat on flights?", "scope": "tenant", "limit": 10},
        headers={"Authorization": f"Bearer {ACME_KEY}"},
    ).json()
    shown = [(h.get_attribute("data-episode-id"), h.locator(".score").inner_text()) for h in hits.all()]
    assert shown == [(h["id"], f"{h['breakdown']['score']:.3f}") for h in api["hits"]]
    assert GLOBEX_MARKER not in page.content()
    _shot(page, artifacts, "search")


def test_an_episode_page_shows_the_superseded_chain(
    page: Any, server: str, seeded: Seeded, artifacts: Path
) -> None:
    login(page, server, ACME_KEY)
    first, second, third = seeded.chain
    page.goto(f"{server}/inspect/episodes/{second}")
    items = page.locator("#history li.chain-item")
    assert [i.get_attribute("data-episode-id") for i in items.all()] == [first, second, third]
    assert [i.locator("[data-status]").inner_text() for i in items.all()] == [
        "superseded",
        "superseded",
        "active",
    ]
    assert "current" in (items.nth(1).get_attribute("class") or "")
    assert "user changed their mind" in items.nth(0).inner_text()
    assert "aisle on flights over 8 hours" in items.nth(2).inner_text()
    _shot(page, artifacts, "history")
    items.nth(2).locator("a").first.click()  # follow the chain to the newest episode
    assert page.locator("#history li.current").get_attribute("data-episode-id") == third


def test_a_session_shows_its_messages_and_tool_calls(
    page: Any, server: str, seeded: Seeded, artifacts: Path
) -> None:
    login(page, server, ACME_KEY)
    page.click("nav >> text=Sessions")
    page.click("#sessions >> text=trip-lisbon")
    conversation = page.locator("#conversation li.msg")
    assert [m.locator(".role").inner_text().lower() for m in conversation.all()] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    call = page.locator("#conversation .tool-call")
    assert call.count() == 1
    assert "book_train" in call.inner_text() and '"to": "Sintra"' in call.inner_text()
    assert "call_train_1" in conversation.nth(3).inner_text()  # the tool result names its call
    assert "BK-4522" in conversation.nth(4).inner_text()
    assert (
        page.locator("#session-episodes tr.episode").count() == seeded.acme_count - 1
    )  # all but the xss one
    _shot(page, artifacts, "session")
    page.goto(f"{server}/inspect/sessions?agent=travel-agent&user=ana")
    assert "trip-lisbon" in page.inner_text("main")
    assert GLOBEX_MARKER not in page.content()


def test_an_agent_key_never_sees_another_tenant(page: Any, server: str, seeded: Seeded) -> None:
    login(page, server, ACME_KEY)
    urls = [
        "/inspect",
        "/inspect?status=all&limit=1000",
        "/inspect/search?q=vegetarian+aisle+seats+Lisbon+Sintra+train&limit=50&status=all",
        "/inspect/sessions",
        "/inspect/sessions?agent=travel-agent&user=ana",
        "/inspect/stats",
    ]
    for path in urls:
        response = page.goto(server + path)
        assert response.status == 200, path
        assert GLOBEX_MARKER not in page.content(), path
        assert GLOBEX_SESSION not in page.content(), path
    assert page.inner_text("#stats").split()[1] == str(seeded.acme_count)  # the tenant's count only
    for path in (f"/inspect/episodes/{seeded.globex_id}", f"/inspect/sessions/{GLOBEX_SESSION}"):
        response = page.goto(server + path)
        assert response.status == 404, path  # like an unknown id, as on /v1
        assert GLOBEX_MARKER not in page.content()
    response = page.goto(f"{server}/inspect?tenant=globex")
    assert response.status == 403
    assert GLOBEX_MARKER not in page.content()


def test_an_admin_key_gets_the_tenant_filter(page: Any, server: str, seeded: Seeded, artifacts: Path) -> None:
    login(page, server, ADMIN_KEY)
    assert "admin key" in page.inner_text(".who")
    options = page.locator("select#f-tenant option").all_inner_texts()
    assert options == ["all tenants", "acme", "globex"]
    assert GLOBEX_MARKER in page.inner_text("#timeline") and "trip-lisbon" in page.inner_text("#timeline")
    _shot(page, artifacts, "admin-all-tenants")
    page.select_option("select#f-tenant", "globex")
    page.click("form.filters button[type=submit]")
    assert page.locator("#timeline tr.episode").count() == 2
    assert "trip-lisbon" not in page.inner_text("#timeline")
    page.click("nav >> text=Stats")  # the nav keeps the chosen tenant
    assert page.inner_text("#stats").split()[1] == "2"
    page.goto(f"{server}/inspect/stats")
    assert page.locator("#plot svg.histogram rect.hist-bar").count() > 2
    _shot(page, artifacts, "stats")
    page.goto(f"{server}/inspect/sessions/{GLOBEX_SESSION}?tenant=globex")
    assert f"{GLOBEX_MARKER} book my train" in page.inner_text("#conversation")


def test_stored_text_is_shown_not_run(page: Any, server: str, seeded: Seeded) -> None:
    login(page, server, ACME_KEY)
    for path in ("/inspect", f"/inspect/episodes/{seeded.xss_id}", "/inspect/sessions/weird%3Csession%3E"):
        page.goto(server + path)
        assert page.locator("script").count() == 0
        assert page.locator("img").count() == 0
        assert XSS in page.inner_text("main"), path  # the text itself, literally
    assert "<b>tag</b>" in page.inner_text("main")


def test_login_cookie_wrong_key_and_logout(page: Any, server: str, artifacts: Path) -> None:
    page.goto(f"{server}/inspect/stats")
    assert "/inspect/login" in page.url
    page.fill("#key", "not-a-key-at-all-0000")
    page.click("button[type=submit]")
    assert "Unknown API key" in page.inner_text("main")
    _shot(page, artifacts, "login-wrong-key")
    page.fill("#key", ACME_KEY)
    page.click("button[type=submit]")
    assert page.url.endswith("/inspect/stats")  # back where the person was going
    (cookie,) = page.context.cookies()
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/inspect"
    assert ACME_KEY not in cookie["value"]
    page.click("text=Log out")
    assert "/inspect/login" in page.url
    page.goto(f"{server}/inspect")
    assert "/inspect/login" in page.url
