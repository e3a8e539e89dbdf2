"""Every operation gives the same result through Python, async Python, HTTP and MCP.

One SQLite file is seeded (episodes with explicit times, a supersede chain, two stored
conversations), then copied four times: the Python API, :class:`memlane.aio.AsyncEpisodicMemory`,
the HTTP API (a real uvicorn, httpx) and the MCP server (a real ``memlane mcp`` stdio
subprocess) each get their own copy, so a ranked recall's retrieval bookkeeping
(``retrieve_count``) evolves the same way in each. Each case runs once per interface, in
the same order; the results are compared in the full wire form (:mod:`memlane.wire`):
the same episodes, in the same order, with the same breakdowns. Scores are rounded to 6
decimals: the MCP server and uvicorn read the real clock a few milliseconds apart, which
moves a recency signal by far less than that.

The bookkeeping itself is buffered (:mod:`memlane.stores.retrievals`): whether a count is
already visible in a later result depends on when each server's buffer was last written
(its recalls' real clock), so the per-case comparison leaves ``retrieve_count`` and
``last_retrieved_at`` out, and :func:`test_every_interface_counts_the_same_retrievals`
compares the counts where they are certain: in the four files, after every interface closed
(a clean close writes what is buffered).

The fake hashing embedder is used: this suite checks interface parity, not ranking quality.
"""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the 'server' extra is not installed")
pytest.importorskip("mcp", reason="the 'mcp' extra is not installed")
import httpx

from memlane import EpisodicMemory, wire
from memlane.aio import AsyncEpisodicMemory
from memlane.config.file import load_config
from memlane.embeddings.fake import HashingEmbedder
from memlane.server.http import create_app
from tests.mcp_stdio import RawMcpClient
from tests.server.conftest import serve_in_thread

KEY = "parity-key-0123456789abcdef"
T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
SEED = [
    ("preference", "The user prefers aisle seats on long flights", ["travel"], 8),
    ("fact", "The user lives in Berlin", ["home"], 7),
    ("decision", "We deploy the API with Docker on Fridays", ["ops"], 6),
    ("fact", "The user's dog is called Biscuit", ["pets"], 5),
    ("task_outcome", "Booking the Lisbon hotel failed: the card was declined", ["travel"], 6),
]
CONVERSATIONS = {
    "s-hotel": [
        {"role": "user", "content": "Find me a hotel in Lisbon near the river."},
        {"role": "assistant", "content": "The Memmo Alfama has river views."},
    ],
    "s-dog": [
        {"role": "user", "content": "Biscuit needs a vet appointment next week."},
        {"role": "assistant", "content": "Booked the vet for Tuesday at 10."},
    ],
}


def _seed(path: Path) -> dict[str, str]:
    ids: dict[str, str] = {}
    with EpisodicMemory.open(path, embedder=HashingEmbedder(), tenant_id="t") as memory:
        for n, (kind, content, tags, importance) in enumerate(SEED):
            episode = memory.remember_episode(
                kind, content, tags, importance, created_at=T0 + timedelta(days=n)
            )
            ids[content.split()[-1]] = episode.id
        moved = memory.supersede(
            ids["Berlin"], "fact", "The user lives in Lisbon", ["home"], 7, reason="the user moved"
        )
        ids["Lisbon"] = moved.id
        for n, (session_id, messages) in enumerate(CONVERSATIONS.items()):
            memory.sessions.store_session(
                session_id, messages, agent_id="default", user_id="default", started_at=T0 + timedelta(days=n)
            )
    return ids


DEFERRED = {"retrieve_count", "last_retrieved_at"}
"""Buffered retrieval bookkeeping: visible once the store's buffer is written (masked, module docstring)."""


def _round(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, dict):
        return {k: "<deferred>" if k in DEFERRED else _round(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_round(v) for v in value]
    return value


def _close(a: Any, b: Any, tol: float = 2e-6) -> bool:
    """Equal structures whose floats differ by at most ``tol``: two roundings (5e-7 each) plus the
    clock's few milliseconds of recency drift, so a value near a rounding boundary cannot fail the test."""
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= tol
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k], tol) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y, tol) for x, y in zip(a, b, strict=True))
    return bool(a == b)


@dataclass(frozen=True)
class Case:
    """One operation: how each interface runs it, and how to read its result.

    ``python`` names a method (``"sessions.search_sessions"``) with its args and kwargs: the
    sync memory calls it, the async memory awaits it; ``encode`` turns its return value into
    the wire form. ``http`` is (method, path, body) and ``mcp`` (tool, arguments); ``pick``
    takes the compared part out of an HTTP/MCP result.
    """

    id: str
    python: tuple[str, tuple[Any, ...], dict[str, Any]]
    encode: Callable[[Any], Any]
    http: tuple[str, str, dict[str, Any] | None]
    mcp: tuple[str, dict[str, Any]]
    pick: Callable[[dict[str, Any]], Any]


def _hits(result: Any) -> list[dict[str, Any]]:
    return wire.hits(result, "full")


def _cases(ids: dict[str, str]) -> list[Case]:
    full = {"detail": "full"}
    return [
        Case(
            "recall-ranked",
            ("recall_episodes", ("where does the user live and travel",), {"limit": 4}),
            _hits,
            ("POST", "/v1/recall", {"query": "where does the user live and travel", "limit": 4}),
            ("recall_episodes", {"query": "where does the user live and travel", "limit": 4, **full}),
            lambda r: r.get("hits", r.get("episodes")),
        ),
        Case(
            "recall-preset-keyword-min-relevance",
            (
                "recall_episodes",
                ("Lisbon hotel",),
                {"weights": "relevance_only", "retrieval": "keyword", "min_relevance": 0.1},
            ),
            _hits,
            (
                "POST",
                "/v1/recall",
                {
                    "query": "Lisbon hotel",
                    "preset": "relevance_only",
                    "retrieval": "keyword",
                    "min_relevance": 0.1,
                },
            ),
            (
                "recall_episodes",
                {
                    "query": "Lisbon hotel",
                    "preset": "relevance_only",
                    "retrieval": "keyword",
                    "min_relevance": 0.1,
                }
                | full,
            ),
            lambda r: r.get("hits", r.get("episodes")),
        ),
        Case(
            "recall-as-of",
            ("recall_episodes", (None,), {"tags": ["home"], "as_of": T0 + timedelta(days=2)}),
            _hits,
            ("POST", "/v1/recall", {"tags": ["home"], "as_of": (T0 + timedelta(days=2)).isoformat()}),
            ("recall_episodes", {"tags": ["home"], "as_of": (T0 + timedelta(days=2)).isoformat(), **full}),
            lambda r: r.get("hits", r.get("episodes")),
        ),
        Case(
            "listing-with-filters",
            ("recall_episodes", (None, None, ["travel"]), {}),
            _hits,
            ("POST", "/v1/recall", {"tags": ["travel"]}),
            ("recall_episodes", {"tags": ["travel"], **full}),
            lambda r: r.get("hits", r.get("episodes")),
        ),
        Case(
            "history",
            ("history", (ids["Lisbon"],), {}),
            lambda chain: [wire.episode(e) for e in chain],
            ("GET", f"/v1/episodes/{ids['Lisbon']}/history", None),
            ("episode_history", {"episode_id": ids["Lisbon"], **full}),
            lambda r: r["episodes"],
        ),
        Case(
            "contradictions",
            (
                "find_contradictions",
                ("The user prefers aisle seats on flights",),
                {"tags": ["travel"], "threshold": 0.3},
            ),
            lambda found: [c.to_dict() for c in found],
            (
                "POST",
                "/v1/contradictions",
                {"text": "The user prefers aisle seats on flights", "tags": ["travel"], "threshold": 0.3},
            ),
            (
                "find_contradictions",
                {
                    "text": "The user prefers aisle seats on flights",
                    "tags": ["travel"],
                    "threshold": 0.3,
                    **full,
                },
            ),
            lambda r: r["candidates"],
        ),
        Case(
            "search-sessions",
            ("sessions.search_sessions", ("default", "default", "hotel by the river"), {"top_k": 2}),
            lambda found: [s.to_dict() for s in found],
            ("POST", "/v1/sessions/search", {"query": "hotel by the river", "top_k": 2}),
            ("search_sessions", {"query": "hotel by the river", "top_k": 2, **full}),
            lambda r: r["snippets"],
        ),
        Case(
            "context-block",
            (
                "sessions.build_context_block",
                ("vet for Biscuit",),
                {"agent_id": "default", "user_id": "default", "token_budget": 400},
            ),
            lambda block: block.to_dict(),
            ("POST", "/v1/context", {"query": "vet for Biscuit", "token_budget": 400}),
            ("get_context", {"query": "vet for Biscuit", "token_budget": 400, **full}),
            lambda r: {k: v for k, v in r.items() if k != "ok"},
        ),
        Case(  # no budget anywhere: every interface applies the one default (DEFAULT_TOKEN_BUDGET)
            "context-block-default-budget",
            (
                "sessions.build_context_block",
                ("vet for Biscuit",),
                {"agent_id": "default", "user_id": "default"},
            ),
            lambda block: block.to_dict(),
            ("POST", "/v1/context", {"query": "vet for Biscuit"}),
            ("get_context", {"query": "vet for Biscuit", **full}),
            lambda r: {k: v for k, v in r.items() if k != "ok"},
        ),
    ]


@dataclass
class Interfaces:
    python: EpisodicMemory
    aio: AsyncEpisodicMemory
    loop: asyncio.AbstractEventLoop
    http: httpx.Client
    mcp: RawMcpClient
    ids: dict[str, str]
    root: Path
    closing: ExitStack

    def close(self) -> None:
        """Close all four (idempotent): each writes its buffered retrieval counts into its file."""
        self.closing.close()


def _call(target: Any, spec: tuple[str, tuple[Any, ...], dict[str, Any]]) -> Any:
    path, args, kwargs = spec
    for part in path.split("."):
        target = getattr(target, part)
    return target(*args, **kwargs)


def _open_interfaces(root: Path, ids: dict[str, str]) -> Interfaces:
    """The four interfaces over their own copies of ``root / "seed.db"`` (:meth:`Interfaces.close`)."""
    for name in ("python", "aio", "http", "mcp"):
        shutil.copy(root / "seed.db", root / f"{name}.db")
    with ExitStack() as stack:
        python = EpisodicMemory.open(root / "python.db", embedder=HashingEmbedder(), tenant_id="t")
        stack.callback(python.close)
        loop = asyncio.new_event_loop()
        stack.callback(loop.close)
        aio = loop.run_until_complete(
            AsyncEpisodicMemory.open(root / "aio.db", embedder=HashingEmbedder(), tenant_id="t")
        )
        stack.callback(lambda: loop.run_until_complete(aio.close()))
        settings = load_config({"server": {"api_keys": {KEY: "t"}}}).server
        app = create_app(lambda: EpisodicMemory.open(root / "http.db", embedder=HashingEmbedder()), settings)
        (root / "mcp.yaml").write_text(
            "memory:\n  path: mcp.db\nepisodic_memory:\n  embedding_provider: hashing\n  tenant_id: t\n",
            encoding="utf-8",
        )
        url = stack.enter_context(serve_in_thread(app))
        http = stack.enter_context(httpx.Client(base_url=url, headers={"X-API-Key": KEY}, timeout=60))
        mcp = stack.enter_context(RawMcpClient(root, "--config", str(root / "mcp.yaml")))
        return Interfaces(python, aio, loop, http, mcp, ids, root, stack.pop_all())
    raise AssertionError("unreachable")  # pragma: no cover - the with block returns or raises


@pytest.fixture(scope="module")
def interfaces(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Interfaces]:
    root = tmp_path_factory.mktemp("parity")
    opened = _open_interfaces(root, _seed(root / "seed.db"))
    try:
        yield opened
    finally:
        opened.close()


def _results(interfaces: Interfaces, case: Case) -> dict[str, Any]:
    sync = case.encode(_call(interfaces.python, case.python))

    async def run_async() -> Any:
        return await _call(interfaces.aio, case.python)

    async_result = case.encode(interfaces.loop.run_until_complete(run_async()))
    method, path, body = case.http
    response = interfaces.http.request(method, path, json=body)
    assert response.status_code == 200, response.text
    tool, arguments = case.mcp
    mcp = interfaces.mcp.call_tool(tool, arguments)
    assert mcp.get("ok") is True, mcp
    return {
        "python": _round(sync),
        "async": _round(async_result),
        "http": _round(case.pick(response.json())),
        "mcp": _round(case.pick(mcp)),
    }


CASE_IDS = [
    "recall-ranked",
    "recall-preset-keyword-min-relevance",
    "recall-as-of",
    "listing-with-filters",
    "history",
    "contradictions",
    "search-sessions",
    "context-block",
    "context-block-default-budget",
]


@pytest.mark.parametrize("case_id", CASE_IDS)
def test_every_interface_returns_the_same_result(interfaces: Interfaces, case_id: str) -> None:
    case = next(c for c in _cases(interfaces.ids) if c.id == case_id)
    results = _results(interfaces, case)
    assert results["python"], f"{case_id}: the seeded data should give a non-empty result"
    for name in ("async", "http", "mcp"):
        assert _close(results[name], results["python"]), (case_id, name, results[name], results["python"])


def test_the_cases_cover_what_they_claim(interfaces: Interfaces) -> None:
    assert [c.id for c in _cases(interfaces.ids)] == CASE_IDS
    # the as_of case sees the superseded fact (Berlin), the plain listing the current one (Lisbon)
    as_of = interfaces.python.recall_episodes(None, tags=["home"], as_of=T0 + timedelta(days=2))
    assert [h.episode.content for h in as_of] == ["The user lives in Berlin"]


def _retrieve_counts(db: Path) -> dict[str, tuple[int, bool]]:
    """Episode id -> (retrieve_count, whether last_retrieved_at is set), as written in ``db``."""
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT id, retrieve_count, last_retrieved_at_us FROM episodes").fetchall()
    finally:
        conn.close()
    return {str(id_): (int(count), last is not None) for id_, count, last in rows}


def test_a_context_block_without_a_budget_gets_the_one_default(interfaces: Interfaces) -> None:
    from memlane.sessions.context import DEFAULT_TOKEN_BUDGET

    case = next(c for c in _cases(interfaces.ids) if c.id == "context-block-default-budget")
    results = _results(interfaces, case)
    assert {name: r["token_budget"] for name, r in results.items()} == dict.fromkeys(
        results, DEFAULT_TOKEN_BUDGET
    )


def test_every_interface_counts_the_same_retrievals(interfaces: Interfaces) -> None:
    """Last in this module: it closes the interfaces the cases above ran on, in the same order."""
    _results(interfaces, _cases(interfaces.ids)[0])  # a ranked recall, also when run alone (-k)
    interfaces.close()  # each interface writes its buffered counts into its own file
    files = {name: interfaces.root / f"{name}.db" for name in ("python", "aio", "http", "mcp")}
    counts = {name: _retrieve_counts(path) for name, path in files.items()}
    for name in ("aio", "http", "mcp"):
        assert counts[name] == counts["python"], name
    assert sum(count for count, _ in counts["python"].values()) > 0, "the ranked cases should count"
