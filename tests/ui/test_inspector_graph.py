"""The inspector's knowledge-graph pages in a real headless Chromium against a real server.

The seeded acme tenant (``conftest._seed_graph``): Ana moved from Berlin to Lisbon, works at Acme
Travel and introduced Bruno, who works there too; an entity named with markup knows Ana, Ana has a
markup nickname and a friend whose name carries a right-to-left override; globex has its own Ana.
Each test saves its screenshots under its own ``tmp_path`` and checks the files were written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from tests.ui.conftest import ACME_KEY, ADMIN_KEY, BIDI_ENTITY, GLOBEX_MARKER, XSS, XSS_ENTITY, login


def _shot(page: Any, tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 10_000, path  # a real picture of the page
    return path


def _no_injection(page: Any) -> None:
    assert page.locator("script").count() == 0
    assert page.locator("img").count() == 0
    assert page.locator("main svg [onload], main svg script").count() == 0


def test_an_entity_page_shows_facts_history_episodes_and_its_neighbourhood(
    page: Any, server: str, tmp_path: Path
) -> None:
    login(page, server, ACME_KEY)
    page.click("nav >> text=Entities")
    rows = page.locator("#entities tbody tr")
    assert rows.first.get_attribute("data-entity") == "ana"  # the most current facts first
    assert "Acme Travel" in page.inner_text("#entities")
    _shot(page, tmp_path, "entities")
    page.click("#entities a.entity-link >> text=Ana")
    assert page.url.endswith("/inspect/entities/ana")
    assert page.inner_text("#entity-name") == "Ana"
    current = page.inner_text("#current")
    assert "lisbon" in current and "Acme Travel" in current and "Bruno" in current  # lisbon: a tag first
    assert "Berlin" not in current  # retired: it is in the history only
    assert page.locator("#current tbody tr").count() == 6
    history = page.locator("#history li")
    assert history.count() == 7
    berlin = page.locator("#history li", has_text="Berlin")
    assert berlin.locator("[data-status]").inner_text() == "superseded"
    text = berlin.inner_text()
    assert "valid" in text and "recorded" in text and "retired" in text and "lives_in" in text
    assert berlin.locator("svg.strip").count() == 1  # valid and recorded time on one axis
    nodes = page.locator("#graph svg.graph a.graph-node")
    keys = {nodes.nth(i).get_attribute("data-entity") for i in range(nodes.count())}
    assert {"ana", "lisbon", "acme travel", "bruno"} <= keys and "berlin" not in keys
    assert page.locator("#graph a.graph-node[data-hops='0']").get_attribute("data-entity") == "ana"
    edges = page.locator("#graph g.graph-edge")
    pairs = {
        (edges.nth(i).get_attribute("data-source"), edges.nth(i).get_attribute("data-target"))
        for i in range(edges.count())
    }
    assert ("bruno", "acme travel") in pairs  # an edge between two neighbours, not only to Ana
    assert GLOBEX_MARKER not in page.content()
    _shot(page, tmp_path, "entity-ana")
    page.click("#graph a.graph-node[data-entity='bruno']")  # the diagram's nodes are links
    page.wait_for_url("**/inspect/entities/bruno?depth=1")
    assert page.inner_text("#entity-name") == "Bruno"
    page.click("#depth >> text=2")
    two = page.locator("#graph a.graph-node")
    hops = {
        two.nth(i).get_attribute("data-entity"): two.nth(i).get_attribute("data-hops")
        for i in range(two.count())
    }
    assert hops["bruno"] == "0" and hops["ana"] == "1" and hops["lisbon"] == "2"
    _shot(page, tmp_path, "entity-bruno-depth-2")


def test_an_episode_links_the_entities_it_names_and_they_link_back(
    page: Any, server: str, tmp_path: Path
) -> None:
    login(page, server, ACME_KEY)
    page.click("#timeline tr.episode:has-text('TP1234') a.details")
    names = page.inner_text("#entities")
    assert "lisbon" in names and "Berlin" in names  # the tag "lisbon" named that entity first
    episode = page.url.rsplit("/", 1)[-1]
    _shot(page, tmp_path, "episode-entities")
    page.click("#entities a.entity-link >> text=lisbon")
    assert page.inner_text("#entity-name") == "lisbon"
    linked = {li.get_attribute("data-episode-id") for li in page.locator("#linked li").all()}
    assert episode in linked
    assert "Acme Travel" in page.inner_text("#current")  # Acme Travel based_in (lives_in) Lisbon: as object
    _shot(page, tmp_path, "entity-lisbon")


def test_hostile_entity_names_and_facts_are_shown_not_run(page: Any, server: str, tmp_path: Path) -> None:
    login(page, server, ACME_KEY)
    page.goto(f"{server}/inspect/entities/ana")
    _no_injection(page)
    main = page.inner_text("main")
    assert XSS in main and XSS_ENTITY in main  # the texts themselves, literally
    assert "evil<U+202E>gnp.exe" in main and BIDI_ENTITY not in main  # the override cannot reorder
    labels = page.locator("#graph text.node-label").all_text_contents()
    assert any(label.startswith("<img src=x") for label in labels)  # cut to fit, still text
    _shot(page, tmp_path, "entity-hostile")
    page.locator("#current a.entity-link", has_text="<img src=x").click()  # its own page
    assert page.inner_text("#entity-name") == XSS_ENTITY
    _no_injection(page)
    page.goto(f"{server}/inspect/entities?q={quote('<img')}")
    assert XSS_ENTITY in page.inner_text("#entities")
    _no_injection(page)


def test_another_tenants_entities_do_not_exist_for_a_key(page: Any, server: str, tmp_path: Path) -> None:
    login(page, server, ACME_KEY)
    page.goto(f"{server}/inspect/entities/{quote(GLOBEX_MARKER + ' Oslo')}")
    assert "no entity" in page.inner_text("#error")
    page.goto(f"{server}/inspect/entities?tenant=globex")
    assert "may only view its own tenant" in page.inner_text("#error")
    page.context.clear_cookies()
    login(page, server, ADMIN_KEY)
    page.click("nav >> text=Entities")
    assert "choose one" in page.inner_text("main")  # every tenant in view: pick one
    page.select_option("#f-tenant", "globex")
    page.click("form.filters button[type=submit]")
    assert "GLOBEX-CONFIDENTIAL Oslo" in page.inner_text("#entities")
    page.click("#entities a.entity-link >> text=Ana")
    assert "tenant=globex" in page.url and "Oslo" in page.inner_text("#current")
    assert "Acme Travel" not in page.inner_text("main")
    _shot(page, tmp_path, "admin-globex-ana")


def test_entity_pages_are_sent_with_the_no_script_policy(server: str) -> None:
    headers = {"Authorization": f"Bearer {ACME_KEY}"}
    for path in ("/inspect/entities", "/inspect/entities/ana?depth=4", "/inspect/entities/lisbon"):
        response = httpx.get(server + path, headers=headers)
        assert response.status_code == 200, path
        assert "default-src 'none'" in response.headers["content-security-policy"]
        assert (
            "<script" not in response.text
            and "<img" not in response.text
            and "<svg onload" not in response.text
        )
    bad = httpx.get(server + "/inspect/entities/ana?depth=5", headers=headers)
    assert bad.status_code == 422 and "depth must be between 1 and 4" in bad.text
