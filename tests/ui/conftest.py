"""Fixtures for the inspector's browser tests: a seeded SQLite store, a real server, headless Chromium.

The store is real (a SQLite file, the bundled all-MiniLM-L6-v2 model) and holds two tenants,
``acme`` and ``globex``; the server is the real ``memlane serve`` app under uvicorn on
127.0.0.1 (ephemeral port); the browser is Debian's ``chromium`` driven by Playwright.

Chromium and Playwright are required in CI (``CI=true``: a missing one fails the run);
elsewhere the browser tests are skipped with the reason. Screenshots go to
``$MEMLANE_UI_ARTIFACTS`` (default ``test-artifacts/ui`` in the repository).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memlane import EpisodeInput, EpisodicMemory, FrozenClock, LocalEmbedder, MemoryConfig
from memlane.config.api_keys import hash_api_key
from memlane.config.file import load_config

pytest.importorskip("uvicorn")
from memlane.server.http import create_app
from tests.server.conftest import serve_in_thread

ROOT = Path(__file__).resolve().parents[2]
NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
"""The served memory's frozen "now"."""

ACME_KEY = "acme-agent-key-0123456789abcdef"
GLOBEX_KEY = "globex-agent-key-0123456789abcdef"
ADMIN_KEY = "ops-admin-key-0123456789abcdef"
GLOBEX_MARKER = "GLOBEX-CONFIDENTIAL"
"""Appears in every globex episode and message: must never reach an acme page."""
GLOBEX_SESSION = "ops-globex-7f3a"
"""globex's session id: must never be listed to acme."""
XSS = '<script>alert("xss")</script><img src=x onerror=alert(1)>'
XSS_ENTITY = '<img src=x onerror=alert(2)> "><svg onload=alert(3)>'
"""An entity name that is markup: must be shown as text on every page (and in the graph's SVG)."""
BIDI_ENTITY = "evil\u202egnp.exe"
"""An entity name with a right-to-left override: shown with the control spelled out."""


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def chromium_path() -> str:
    """The system Chromium (``$MEMLANE_CHROMIUM`` or ``chromium`` on ``PATH``); fail in CI, else skip."""
    path = os.environ.get("MEMLANE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(path).exists():
        reason = f"no Chromium at {path} (apt-get install chromium, or set MEMLANE_CHROMIUM)"
        if _in_ci():
            pytest.fail(f"CI needs a browser for the inspector tests: {reason}")
        pytest.skip(reason)
    return path


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """Where screenshots go (created)."""
    path = Path(os.environ.get("MEMLANE_UI_ARTIFACTS") or ROOT / "test-artifacts" / "ui")
    path.mkdir(parents=True, exist_ok=True)
    return path


@dataclass(frozen=True)
class Seeded:
    """The seeded database and the ids the tests look for."""

    path: Path
    chain: tuple[str, str, str]  # oldest -> newest supersede chain (acme)
    archived_id: str
    xss_id: str
    globex_id: str
    acme_count: int


def _seed(path: Path) -> Seeded:
    clock = FrozenClock(NOW - timedelta(days=40))
    embedder = LocalEmbedder()
    base = EpisodicMemory.open(path, embedder=embedder, config=MemoryConfig(scope="tenant"), clock=clock)
    acme = base.with_context(tenant_id="acme", session_id="trip-lisbon")
    start = NOW - timedelta(days=60)
    items = [
        (
            "preference",
            "User is vegetarian; always request a vegetarian meal on long flights.",
            ["food", "flights"],
            8,
        ),
        ("booking", "Booked flight TP1234 Berlin to Lisbon on 14 May, seat 12C.", ["flights", "lisbon"], 6),
        ("itinerary", "User wants a day trip to Sintra by train, not on a tour bus.", ["lisbon", "train"], 5),
        ("support", "Refund of 45 EUR for the seat fee approved.", ["payment"], 6),
        (
            "small_talk",
            "User asked for a restaurant tip in Alfama; suggested a vegetarian tasca.",
            ["food"],
            None,
        ),
        ("profile", "User's frequent flyer number is TP-88213406.", ["loyalty"], 9),
    ]
    acme.remember_episodes(
        EpisodeInput(
            event_type=e,
            content=c,
            tags=t,
            importance=i,
            created_at=start + timedelta(days=4 * n),
            recorded_at=start + timedelta(days=4 * n, hours=2),  # learned shortly after it happened
        )
        for n, (e, c, t, i) in enumerate(items)
    )
    archived = acme.remember_episodes(
        [
            EpisodeInput(
                event_type="small_talk",
                content="User mentioned the weather in Porto was rainy.",
                created_at=start + timedelta(days=2),
                archived_at=NOW - timedelta(days=20),
            )
        ]
    )[0]
    first = acme.remember_episode(
        "preference",
        "User prefers aisle seats.",
        ["flights", "seat"],
        6,
        created_at=start + timedelta(days=1),
    )
    clock.advance(timedelta(days=10))
    second = acme.supersede(
        first.id,
        "preference",
        "User now prefers window seats.",
        ["flights", "seat"],
        6,
        reason="user changed their mind",
    )
    clock.advance(timedelta(days=10))
    third = acme.supersede(
        second.id,
        "preference",
        "User prefers window seats, but aisle on flights over 8 hours.",
        ["flights", "seat"],
        7,
        reason="refined on a long-haul booking",
    )
    xss = acme.with_context(session_id="weird<session>").remember_episode(
        "note", XSS, ["<b>tag</b>"], 3, metadata={"html": XSS}
    )
    acme.sessions.store_session(
        "trip-lisbon",
        [
            {"role": "system", "content": "You are a travel agent."},
            {"role": "user", "content": "Can you book me a train to Sintra on the 19th?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_train_1",
                        "type": "function",
                        "function": {
                            "name": "book_train",
                            "arguments": '{"to": "Sintra", "date": "2026-05-19"}',
                        },
                    }
                ],
            },
            {
                "role": "tool",
                "tool_call_id": "call_train_1",
                "content": '{"status": "confirmed", "ref": "BK-4522"}',
            },
            {"role": "assistant", "content": "Booked: train to Sintra on 19 May, reference BK-4522."},
        ],
        agent_id="travel-agent",
        user_id="ana",
        started_at=NOW - timedelta(days=15),
        ended_at=NOW - timedelta(days=15, minutes=-5),
    )
    globex = base.with_context(tenant_id="globex", session_id=GLOBEX_SESSION)
    g = globex.remember_episode(
        "preference",
        f"{GLOBEX_MARKER}: the user is vegetarian and prefers aisle seats on flights to Lisbon.",
        ["flights", "food"],
        9,
        created_at=NOW - timedelta(days=3),
    )
    globex.remember_episode("booking", f"{GLOBEX_MARKER}: booked a train to Sintra.", ["train"], 8)
    globex.sessions.store_session(
        GLOBEX_SESSION,
        [{"role": "user", "content": f"{GLOBEX_MARKER} book my train to Sintra"}],
        agent_id="travel-agent",
        user_id="ana",
        started_at=NOW - timedelta(days=2),
    )
    _seed_graph(acme, globex)
    acme_count = acme.count()
    base.close()
    return Seeded(path, (first.id, second.id, third.id), archived.id, xss.id, g.id, acme_count)


def _seed_graph(acme: EpisodicMemory, globex: EpisodicMemory) -> None:
    """Facts for the entity pages: Ana moved Berlin -> Lisbon, works at Acme Travel, introduced Bruno
    (who works there too); hostile names and values; a globex fact about its own Ana."""
    acme.remember_fact("Ana", "lives_in", "Berlin", valid_from=NOW - timedelta(days=400), importance=6)
    acme.remember_fact("Ana", "lives_in", "Lisbon", valid_from=NOW - timedelta(days=30), importance=6)
    acme.remember_fact("Ana", "works_at", "Acme Travel", valid_from=NOW - timedelta(days=200), importance=7)
    acme.remember_fact("Ana", "introduced_me_to", "Bruno", valid_from=NOW - timedelta(days=90))
    acme.remember_fact("Bruno", "works_at", "Acme Travel", valid_from=NOW - timedelta(days=120))
    acme.remember_fact("Acme Travel", "based_in", "Lisbon", valid_from=NOW - timedelta(days=900))
    acme.remember_fact("Ana", "nickname", value=XSS, valid_from=NOW - timedelta(days=10))
    acme.remember_fact(XSS_ENTITY, "knows", "Ana", valid_from=NOW - timedelta(days=10))
    acme.remember_fact("Ana", "friend_of", BIDI_ENTITY, valid_from=NOW - timedelta(days=10))
    globex.remember_fact("Ana", "lives_in", f"{GLOBEX_MARKER} Oslo", valid_from=NOW - timedelta(days=5))


@pytest.fixture(scope="session")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Seeded:
    """A SQLite store with two tenants, written with the bundled model."""
    return _seed(tmp_path_factory.mktemp("inspector") / "memlane.db")


@pytest.fixture(scope="session")
def server(seeded: Seeded) -> Iterator[str]:
    """The ``memlane serve`` app (API + inspector) on 127.0.0.1; yields its base URL."""
    keys: dict[str, Any] = {
        hash_api_key(ACME_KEY): "acme",
        hash_api_key(GLOBEX_KEY): "globex",
        hash_api_key(ADMIN_KEY): {"tenant": "ops", "role": "admin"},
    }
    settings = load_config({"server": {"api_keys": keys}}).server

    def factory() -> EpisodicMemory:
        return EpisodicMemory.open(seeded.path, config=MemoryConfig(scope="tenant"), clock=FrozenClock(NOW))

    with serve_in_thread(create_app(factory, settings)) as url:
        yield url


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Headless system Chromium driven by Playwright (one per test session)."""
    executable = chromium_path()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if _in_ci():
            pytest.fail("CI needs the playwright package for the inspector tests")
        pytest.skip("the playwright package is not installed (it is in the dev group)")
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh browser context (no cookies) and page; fails the test on any script dialog."""
    context = browser.new_context(viewport={"width": 1320, "height": 900})
    tab = context.new_page()
    dialogs: list[str] = []
    tab.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    try:
        yield tab
    finally:
        context.close()
    assert dialogs == [], f"a script ran in the inspector: {dialogs}"


def login(page: Any, server: str, key: str) -> None:
    """Log in through the form and land on the timeline."""
    page.goto(f"{server}/inspect")
    assert "/inspect/login" in page.url
    page.fill("#key", key)
    page.click("button[type=submit]")
    page.wait_for_selector("#timeline, .empty")
