"""Every WRITE operation gives the same result, and the same stored state, through every interface.

The companion of tests/server/test_parity.py (reads). The same seeded SQLite file is copied
four times — Python, :class:`memlane.aio.AsyncEpisodicMemory`, HTTP (a real uvicorn, with an
``admin`` key so the ``/v1/admin`` jobs are reachable) and MCP (a real ``memlane mcp`` stdio
subprocess) — and the same writes run through each, step by step and in the same order:
remember, supersede and the history after it, then the writes MCP deliberately does not offer
(a backdated remember with metadata, delete by id, storing and appending a conversation, the
forget and compact dry runs). Each step's result is compared in the full wire form, then the
stored state itself: every episode of each file (:meth:`memlane.EpisodicMemory.iter_episodes`,
archived and superseded ones included) and the stored conversation, read back from the files.

What legitimately differs per interface is masked: generated ids (replaced by the name of the
step that created them), and instants read from each interface's own clock during the run
(``recorded_at``, ``invalidated_at``, ``created_at``/``valid_from`` when not given, a
session's ``ended_at``...): any timestamp within an hour after the start of the run reads
``<now>``. Given times (in 2025, and 2030 for the dry runs) are compared exactly. An operation
MCP leaves out is skipped for that pair with the reason of the README's operations table.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
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
from tests.server.test_parity import T0, _call, _seed

KEY = "parity-admin-key-0123456789abcdef"
INTERFACES = ("python", "async", "http", "mcp")
NOT_FOR_A_MODEL = "README Operations x interfaces ²: an operator operation, not offered to a model"
APP_STORES_SESSIONS = "README Operations x interfaces ⁴: the application that runs the conversation stores it"
ADMIN_ONLY = (
    "README Operations x interfaces ⁶: destructive and tenant-wide, admin keys on HTTP, never a model"
)
NO_BACKDATING = (
    "README Operations x interfaces ⁸: the remember_episode tool records what happens now; "
    "created_at and metadata are the application's (Python, HTTP)"
)

NEW_SESSION = [
    {"role": "user", "content": "Remind me to renew my passport before the Lisbon trip."},
    {"role": "assistant", "content": "Noted: passport renewal before the trip in May."},
]
MORE_TURNS = [
    {"role": "user", "content": "Also book the airport taxi."},
    {"role": "assistant", "content": "Taxi booked for 6:30."},
]


@dataclass(frozen=True)
class Step:
    """One write (or the read that checks it), run through every interface in turn.

    ``python`` is (method path, args, kwargs) for the sync and async memories, ``encode`` turns
    its return value into the wire form; ``http`` is (method, path, body) and ``http_pick``
    takes the compared part of the response (``None`` for a 204); ``mcp`` is (tool, arguments)
    and ``mcp_pick`` the compared part of the tool result, or ``mcp_absent`` says why MCP does
    not offer the operation. ``creates`` marks a step whose result holds a new episode id.
    """

    id: str
    python: tuple[str, tuple[Any, ...], dict[str, Any]]
    encode: Callable[[Any], Any]
    http: tuple[str, str, dict[str, Any] | None]
    http_pick: Callable[[Any], Any]
    mcp: tuple[str, dict[str, Any]] | None = None
    mcp_pick: Callable[[dict[str, Any]], Any] = lambda r: r
    mcp_absent: str | None = None
    creates: bool = False


def _steps(ids: dict[str, str]) -> list[Step]:
    """The writes, in order: first those every interface offers, then those MCP leaves out."""
    full = {"detail": "full"}
    window = ("preference", "The user prefers window seats on short flights", ["travel", "flights"], 9)
    window_args = dict(zip(("event_type", "content", "tags", "importance"), window, strict=True))
    porto = {
        "event_type": "fact",
        "content": "The user lives in Porto",
        "tags": ["home"],
        "importance": 8,
        "reason": "the user moved again",
    }
    backdated = {
        "event_type": "decision",
        "content": "We rotate the API keys every 90 days",
        "tags": ["ops", "security"],
        "importance": 7,
        "created_at": (T0 + timedelta(days=10)).isoformat(),
        "metadata": {"source": "retro", "ticket": 42},
    }
    store = {
        "session_id": "s-passport",
        "messages": NEW_SESSION,
        "agent_id": "default",
        "user_id": "default",
        "started_at": (T0 + timedelta(days=30)).isoformat(),
        "metadata": {"channel": "chat"},
    }
    owner = {"agent_id": "default", "user_id": "default"}
    later = T0 + timedelta(days=2000)
    return [
        Step(
            "remember",
            ("remember_episode", window, {}),
            wire.episode,
            ("POST", "/v1/episodes", window_args),
            lambda r: r,
            ("remember_episode", window_args | full),
            lambda r: r["episode"],
            creates=True,
        ),
        Step(
            "supersede",
            (
                "supersede",
                (ids["Lisbon"], "fact", "The user lives in Porto", ["home"], 8),
                {"reason": "the user moved again"},
            ),
            wire.episode,
            ("POST", f"/v1/episodes/{ids['Lisbon']}/supersede", {k: v for k, v in porto.items()}),
            lambda r: r["episode"],
            ("supersede_episode", {"episode_id": ids["Lisbon"], **porto, **full}),
            lambda r: r["episode"],
            creates=True,
        ),
        Step(
            "history-after-supersede",
            ("history", (ids["Berlin"],), {}),
            lambda chain: [wire.episode(e) for e in chain],
            ("GET", f"/v1/episodes/{ids['Berlin']}/history", None),
            lambda r: r["episodes"],
            ("episode_history", {"episode_id": ids["Berlin"], **full}),
            lambda r: r["episodes"],
        ),
        Step(
            "remember-backdated-with-metadata",
            (
                "remember_episode",
                ("decision", "We rotate the API keys every 90 days", ["ops", "security"], 7),
                {"created_at": T0 + timedelta(days=10), "metadata": {"source": "retro", "ticket": 42}},
            ),
            wire.episode,
            ("POST", "/v1/episodes", backdated),
            lambda r: r,
            mcp_absent=NO_BACKDATING,
            creates=True,
        ),
        Step(
            "delete-by-id",
            ("delete_episode", (ids["Biscuit"],), {}),
            lambda deleted: deleted,
            ("DELETE", f"/v1/episodes/{ids['Biscuit']}", None),
            lambda r: r is None,  # 204: deleted
            mcp_absent=NOT_FOR_A_MODEL,
        ),
        Step(
            "store-session",
            (
                "sessions.store_session",
                ("s-passport", NEW_SESSION),
                {**owner, "started_at": T0 + timedelta(days=30), "metadata": {"channel": "chat"}},
            ),
            lambda session: session.to_dict(),
            ("POST", "/v1/sessions", store),
            lambda r: r,
            mcp_absent=APP_STORES_SESSIONS,
        ),
        Step(
            "append-to-session",
            ("sessions.store_session", ("s-passport", MORE_TURNS), {**owner, "append": True}),
            lambda session: session.to_dict(),
            ("POST", "/v1/sessions", {"session_id": "s-passport", "messages": MORE_TURNS, "append": True}),
            lambda r: r,
            mcp_absent=APP_STORES_SESSIONS,
        ),
        Step(
            "forget-dry-run",
            ("forget", (later,), {"dry_run": True, "threshold": 0.5}),
            lambda report: report.to_dict(),
            ("POST", "/v1/admin/forget", {"dry_run": True, "threshold": 0.5, "now": later.isoformat()}),
            lambda r: {k: v for k, v in r.items() if k != "ok"},
            mcp_absent=ADMIN_ONLY,
        ),
        Step(
            "compact-dry-run",
            (
                "compact",
                (),
                {"similarity": 0.9, "never_retrieved_older_than_days": 30.0, "dry_run": True, "now": later},
            ),
            lambda report: report.to_dict(),
            (
                "POST",
                "/v1/admin/compact",
                {
                    "similarity": 0.9,
                    "never_retrieved_older_than_days": 30.0,
                    "dry_run": True,
                    "now": later.isoformat(),
                },
            ),
            lambda r: {k: v for k, v in r.items() if k != "ok"},
            mcp_absent=ADMIN_ONLY,
        ),
    ]


STEP_IDS = [
    "remember",
    "supersede",
    "history-after-supersede",
    "remember-backdated-with-metadata",
    "delete-by-id",
    "store-session",
    "append-to-session",
    "forget-dry-run",
    "compact-dry-run",
]
LAST_STEP_FOR_MCP = "history-after-supersede"
"""After it, every step is one MCP leaves out: the stored state is compared there for all four."""


@dataclass
class Run:
    """What the module's writes gave: per step and interface the masked result, and store snapshots."""

    run_start: datetime
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    snapshots: dict[str, dict[str, Any]] = field(default_factory=dict)
    new_ids: dict[str, dict[str, str]] = field(default_factory=lambda: {name: {} for name in INTERFACES})


def _mask(value: Any, run: Run, interface: str) -> Any:
    """Generated ids -> ``<step>``, instants of the run's own clocks -> ``<now>``, floats to 6 places."""
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, dict):
        return {
            k: "<now>" if k == "last_retrieved_at" and v else _mask(v, run, interface)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_mask(v, run, interface) for v in value]
    if isinstance(value, str):
        if value in run.new_ids[interface]:
            return run.new_ids[interface][value]
        if len(value) >= 19 and value[4:5] == "-" and value[10:11] == "T":
            try:
                instant = datetime.fromisoformat(value)
            except ValueError:
                return value
            if instant.tzinfo is not None and run.run_start <= instant <= run.run_start + timedelta(hours=1):
                return "<now>"
    return value


def _snapshot(path: Path) -> dict[str, Any]:
    """The stored state of one file: every episode (full wire form, oldest first) and the conversation."""
    with EpisodicMemory.open(path, embedder=HashingEmbedder(), tenant_id="t") as memory:
        episodes = [wire.episode(e) for e in memory.iter_episodes()]
        session = memory.sessions.get_session("s-passport")
        return {
            "episodes": sorted(episodes, key=lambda e: (e["created_at"], e["content"])),
            "session": None if session is None else session.to_dict(),
        }


def _run_step(step: Step, handles: dict[str, Any], run: Run) -> None:
    raw: dict[str, Any] = {}
    raw["python"] = step.encode(_call(handles["python"], step.python))

    async def run_async() -> Any:
        return await _call(handles["aio"], step.python)

    raw["async"] = step.encode(handles["loop"].run_until_complete(run_async()))
    method, path, body = step.http
    response = handles["http"].request(method, path, json=body)
    assert response.status_code in (200, 201, 204), (step.id, response.text)
    raw["http"] = step.http_pick(response.json() if response.status_code != 204 else None)
    if step.mcp is not None:
        tool, arguments = step.mcp
        result = handles["mcp"].call_tool(tool, arguments)
        assert result.get("ok") is True, (step.id, result)
        raw["mcp"] = step.mcp_pick(result)
    for interface, value in raw.items():
        if step.creates:
            run.new_ids[interface][value["id"]] = f"<{step.id}>"
        run.results.setdefault(step.id, {})[interface] = _mask(value, run, interface)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    root = tmp_path_factory.mktemp("parity-writes")
    ids = _seed(root / "seed.db")
    files = {name: root / f"{name}.db" for name in INTERFACES}
    for path in files.values():
        shutil.copy(root / "seed.db", path)
    outcome = Run(run_start=datetime.now(UTC) - timedelta(seconds=1))
    python = EpisodicMemory.open(files["python"], embedder=HashingEmbedder(), tenant_id="t")
    loop = asyncio.new_event_loop()
    aio = loop.run_until_complete(
        AsyncEpisodicMemory.open(files["async"], embedder=HashingEmbedder(), tenant_id="t")
    )
    settings = load_config({"server": {"api_keys": {KEY: {"tenant": "t", "role": "admin"}}}}).server
    app = create_app(lambda: EpisodicMemory.open(files["http"], embedder=HashingEmbedder()), settings)
    (root / "mcp.yaml").write_text(
        "memory:\n  path: mcp.db\nepisodic_memory:\n  embedding_provider: hashing\n  tenant_id: t\n",
        encoding="utf-8",
    )
    try:
        with (
            serve_in_thread(app) as url,
            httpx.Client(base_url=url, headers={"X-API-Key": KEY}, timeout=60) as http,
            RawMcpClient(root, "--config", str(root / "mcp.yaml")) as mcp,
        ):
            handles = {"python": python, "aio": aio, "loop": loop, "http": http, "mcp": mcp}
            for step in _steps(ids):
                _run_step(step, handles, outcome)
                if step.id == LAST_STEP_FOR_MCP:
                    for name, path in files.items():
                        outcome.snapshots.setdefault("shared", {})[name] = _mask(
                            _snapshot(path), outcome, name
                        )
            for name in ("python", "async", "http"):
                outcome.snapshots.setdefault("final", {})[name] = _mask(_snapshot(files[name]), outcome, name)
        yield outcome
    finally:
        loop.run_until_complete(aio.close())
        loop.close()
        python.close()


PAIRS = [(step, name) for step in STEP_IDS for name in ("async", "http", "mcp")]


@pytest.mark.parametrize(("step_id", "interface"), PAIRS, ids=[f"{s}-{i}" for s, i in PAIRS])
def test_every_write_returns_the_same_result(run: Run, step_id: str, interface: str) -> None:
    step = next(s for s in _steps({k: "x" for k in ("Lisbon", "Berlin", "Biscuit")}) if s.id == step_id)
    if interface == "mcp" and step.mcp_absent is not None:
        pytest.skip(f"MCP has no {step_id}: {step.mcp_absent}")
    results = run.results[step_id]
    assert results["python"] not in (None, [], {}), f"{step_id}: the write should give a result"
    assert results[interface] == results["python"], (step_id, interface)


def test_the_steps_did_what_they_claim(run: Run) -> None:
    results = run.results
    assert [s.id for s in _steps({k: "x" for k in ("Lisbon", "Berlin", "Biscuit")})] == STEP_IDS
    assert results["remember"]["python"]["tags"] == ["travel", "flights"]
    assert results["remember"]["python"]["created_at"] == "<now>"
    assert results["supersede"]["python"]["valid_from"] == "<now>"  # the seeded Lisbon fact holds until now
    chain = results["history-after-supersede"]["python"]
    assert [e["content"].rsplit(" ", 1)[-1] for e in chain] == ["Berlin", "Lisbon", "Porto"]
    assert chain[1]["superseded_by"] == "<supersede>"
    backdated = results["remember-backdated-with-metadata"]["python"]
    assert backdated["created_at"] == (T0 + timedelta(days=10)).isoformat()
    assert backdated["metadata"] == {"source": "retro", "ticket": 42}
    assert results["delete-by-id"]["python"] is True
    assert results["forget-dry-run"]["python"]["dry_run"] is True
    assert results["forget-dry-run"]["python"]["now"] == (T0 + timedelta(days=2000)).isoformat()
    assert results["forget-dry-run"]["python"]["count"] >= 1, "the 2030 forget should find faded episodes"
    assert results["compact-dry-run"]["python"]["stale"], "never-retrieved seeded episodes are stale by 2030"


def test_the_same_writes_leave_the_same_stored_episodes(run: Run) -> None:
    shared = run.snapshots["shared"]
    assert len(shared["python"]["episodes"]) == 8  # 5 seeded + Lisbon + remember + Porto
    for name in ("async", "http", "mcp"):
        assert shared[name] == shared["python"], name
    final = run.snapshots["final"]
    contents = [e["content"] for e in final["python"]["episodes"]]
    assert "The user's dog is called Biscuit" not in contents  # deleted by id
    assert "We rotate the API keys every 90 days" in contents
    assert final["python"]["session"] is not None
    for name in ("async", "http"):
        assert final[name] == final["python"], name
