"""Issue #22's findings, each a regression test: nothing a client sends takes the service down,
reaches another tenant or breaks a page.

Storage-touching cases run on each backend (``backend_db``: a SQLite file, the PostgreSQL the
tests start) against a real uvicorn (``serve_in_thread``), so keep-alive behaviour is real.
Item 1 (long temporal queries) is tests/unit/test_temporal_bounds.py; item 2 (admin jobs) is
tests/server/test_admin_bounds.py; item 3 (messages) tests/contract/test_sessions_contract.py;
items 4's every-field enumeration is tests/server/test_error_parity.py.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the 'server' extra is not installed")
import httpx

from memlane import EpisodicMemory, FrozenClock, MemoryConfig
from memlane.config.file import load_config
from memlane.embeddings.fake import HashingEmbedder
from memlane.episode_input import new_episode_id
from memlane.errors import StoreError
from memlane.server.http import EXPORT_INTERRUPTED, create_app
from memlane.server.inspector.auth import MAX_LOGINS_PER_KEY
from memlane.server.inspector.throttle import KeyFailures
from memlane.validation import MAX_TAGS
from tests.backends import BackendDB
from tests.conftest import T0
from tests.server.conftest import serve_in_thread

ADMIN = "admin-key-0123456789abcdefgh"
AGENT = "agent-key-0123456789abcdefgh"
SECRET = "/very/secret/path/server.db"


@dataclasses.dataclass
class Served:
    http: httpx.Client
    memory: EpisodicMemory  # the served memory (its store is the one the server uses)
    url: str


def _serve(backend_db: BackendDB, **app_options: Any) -> Iterator[Served]:
    clock = FrozenClock(T0)
    config = MemoryConfig(scope="tenant", prune_probability=0.0)
    keys = {ADMIN: {"tenant": "acme", "role": "admin"}, AGENT: "beta"}
    settings = load_config({"server": {"api_keys": keys}}).server
    served: list[EpisodicMemory] = []

    def factory() -> EpisodicMemory:
        served.append(EpisodicMemory(backend_db.open(), HashingEmbedder(), config=config, clock=clock))
        return served[-1]

    app = create_app(factory, settings, **app_options)
    with serve_in_thread(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        yield Served(http, served[0], url)


@pytest.fixture
def served(backend_db: BackendDB) -> Iterator[Served]:
    yield from _serve(backend_db)


def _agent(**headers: str) -> dict[str, str]:
    return {"X-API-Key": AGENT, **headers}


# -- 4, 5: extreme numbers and dates; stored poison ------------------------------------------


def test_a_huge_number_is_a_422_and_the_connection_stays_usable(served: Served) -> None:
    body = {"dry_run": True, "never_retrieved_older_than_days": 1e300}
    response = served.http.post("/v1/admin/compact", json=body, headers={"X-API-Key": ADMIN})
    assert response.status_code == 422, response.text
    assert response.json()["error"]["type"] == "ValidationError"
    assert served.http.get("/health").status_code == 200  # the same keep-alive connection


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("/v1/episodes", "created_at"),
        ("/v1/recall", "as_of"),
        ("/v1/recall", "known_at"),
        ("/v1/recall", "now"),
        ("/v1/sessions", "started_at"),
    ],
)
@pytest.mark.parametrize("instant", ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00"])
def test_an_extreme_instant_is_a_422_on_each_route(
    served: Served, path: str, field: str, instant: str
) -> None:
    base: dict[str, Any] = {
        "/v1/episodes": {"event_type": "note", "content": "hello"},
        "/v1/recall": {"query": "hello"},
        "/v1/sessions": {"session_id": "s", "messages": [{"role": "user", "content": "hi"}]},
    }[path]
    response = served.http.post(path, json={**base, field: instant}, headers=_agent())
    assert response.status_code == 422, response.text
    assert served.http.get("/health").status_code == 200


def test_a_stored_year_9999_time_does_not_break_the_stats_page(served: Served) -> None:
    memory = served.memory.with_context(tenant_id="beta")
    good = memory.remember_episode("note", "an ordinary note")
    poison_at = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)  # stored before the bounds existed
    poison = dataclasses.replace(good, id=new_episode_id(), created_at=poison_at, recorded_at=poison_at)
    memory.store.insert([poison], None)
    for page in ("/inspect/stats", "/inspect", f"/inspect/episodes/{poison.id}"):
        assert served.http.get(page, headers=_agent()).status_code == 200, page
        assert served.http.get(page, headers={"X-API-Key": ADMIN}).status_code == 200, page  # all tenants


# -- 7, 8: tags, export ---------------------------------------------------------------------


def test_tags_are_capped_per_episode_and_per_filter_with_the_same_error(served: Served) -> None:
    many = [f"t{i}" for i in range(MAX_TAGS + 1)]
    stored = served.http.post(
        "/v1/episodes", json={"event_type": "n", "content": "c", "tags": many}, headers=_agent()
    )
    assert stored.status_code == 422 and f"at most {MAX_TAGS} tags" in stored.text
    filtered = served.http.get(
        "/v1/episodes", params={"tag": [f"t{i}" for i in range(600)]}, headers=_agent()
    )
    assert filtered.status_code == 422, filtered.text  # SQLite: not a 503 (compound SELECT limit)
    assert filtered.json()["error"]["message"] == stored.json()["error"]["message"]
    recalled = served.http.post("/v1/recall", json={"query": "c", "tags": many}, headers=_agent())
    assert recalled.status_code == 422
    exactly = served.http.post(
        "/v1/episodes", json={"event_type": "n", "content": "c", "tags": many[:MAX_TAGS]}, headers=_agent()
    )
    assert exactly.status_code == 201


def test_an_export_interrupted_mid_stream_ends_with_an_error_record(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = served.memory.with_context(tenant_id="beta")
    ids = [memory.remember_episode("note", f"note {i}").id for i in range(3)]
    store_type = type(served.memory.store)
    real = store_type.iter_episodes

    def failing(self: Any, flt: Any, batch_size: int = 1000) -> Iterator[Any]:
        iterator = real(self, flt, batch_size)
        yield next(iterator)
        raise StoreError(f"database gone: {SECRET}")

    monkeypatch.setattr(store_type, "iter_episodes", failing)
    response = served.http.get("/v1/export", headers=_agent())
    assert response.status_code == 200
    lines = [json.loads(line) for line in response.text.splitlines()]
    assert lines[0]["id"] == ids[0]
    assert lines[-1] == {"error": {"type": "StoreError", "message": EXPORT_INTERRUPTED}}
    assert SECRET not in response.text


def test_an_export_whose_first_page_fails_is_not_a_200(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(self: Any, flt: Any, batch_size: int = 1000) -> Iterator[Any]:
        raise StoreError(f"database gone: {SECRET}")
        yield  # pragma: no cover - a generator

    monkeypatch.setattr(type(served.memory.store), "iter_episodes", failing)
    response = served.http.get("/v1/export", headers=_agent())
    assert response.status_code == 503 and SECRET not in response.text


# -- 9, 10, 11: the inspector's errors, logins, form ----------------------------------------


def test_inspector_error_pages_show_no_internals(served: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(self: Any, flt: Any, batch_size: int = 1000) -> Iterator[Any]:
        raise StoreError(f"SQLite error during iter_episodes on {SECRET}: disk I/O error")
        yield  # pragma: no cover - a generator

    monkeypatch.setattr(type(served.memory.store), "iter_episodes", failing)
    page = served.http.get("/inspect", headers=_agent())
    assert page.status_code == 503
    assert SECRET not in page.text and "details were logged" in page.text


def _login(http: httpx.Client, url: str, key: str, **extra: str) -> httpx.Response:
    return http.post(
        "/inspect/login",
        data={"key": key, **extra},
        headers={"Origin": url},
        follow_redirects=False,
    )


def test_one_key_cannot_log_the_others_out(served: Served) -> None:
    admin = _login(served.http, served.url, ADMIN)
    assert admin.status_code == 303
    cookie = admin.cookies["memlane_inspector"]
    for _ in range(MAX_LOGINS_PER_KEY * 3):
        assert _login(served.http, served.url, AGENT).status_code == 303
    served.http.cookies.clear()
    served.http.cookies.set("memlane_inspector", cookie)
    page = served.http.get("/inspect", follow_redirects=False)
    assert page.status_code == 200  # not a redirect to the login form


def test_a_login_form_with_many_fields_is_a_400(served: Served) -> None:
    fields = {f"f{i}": "x" for i in range(20)}
    response = _login(served.http, served.url, AGENT, **fields)
    assert response.status_code == 400


@pytest.fixture
def throttled(backend_db: BackendDB) -> Iterator[tuple[Served, list[float]]]:
    now = [1000.0]
    failures = KeyFailures(limit=3, window_s=60.0, clock=lambda: now[0])
    for served in _serve(backend_db, key_failures=failures):
        yield served, now


def test_unknown_keys_back_off_on_the_api_and_the_inspector(throttled: tuple[Served, list[float]]) -> None:
    served, now = throttled
    for _ in range(3):
        assert (
            served.http.get("/v1/episodes", headers={"X-API-Key": "wrong-key-0123456789"}).status_code == 401
        )
    for attempt in (
        served.http.get("/v1/episodes", headers=_agent()),  # a right key too: guessing cannot go on behind it
        served.http.get("/inspect", headers=_agent()),
        _login(served.http, served.url, AGENT),
    ):
        assert attempt.status_code == 429, attempt.text
    assert served.http.get("/v1/episodes", headers=_agent()).headers.get("retry-after") == "60"
    assert served.http.get("/health").status_code == 200  # no key presented: not refused
    now[0] += 61  # the window ends
    assert served.http.get("/v1/episodes", headers=_agent()).status_code == 200


# -- 12, 13: bidi controls, ids with '/' ------------------------------------------------------


def test_bidi_controls_are_shown_not_obeyed_in_the_inspector(served: Served) -> None:
    sid = "user-\u202enimda\u202c"
    messages = [{"role": "user", "content": "account \u202e4321-0987\u202c"}]
    assert (
        served.http.post(
            "/v1/sessions", json={"session_id": sid, "messages": messages}, headers=_agent()
        ).status_code
        == 201
    )
    served.http.post(
        "/v1/episodes",
        json={"event_type": "n", "content": "account \u202e4321-0987\u202c", "session_id": sid},
        headers=_agent(),
    )
    for page in ("/inspect", "/inspect/sessions"):
        text = served.http.get(page, headers=_agent()).text
        assert "\u202e" not in text and "\u202c" not in text, page
        assert "&lt;U+202E&gt;" in text, page


def test_a_session_id_with_a_slash_can_be_read_and_deleted(served: Served) -> None:
    body = {"session_id": "team/alpha", "messages": [{"role": "user", "content": "hi"}]}
    assert served.http.post("/v1/sessions", json=body, headers=_agent()).status_code == 201
    got = served.http.get("/v1/sessions/team/alpha", headers=_agent())
    assert got.status_code == 200 and got.json()["session_id"] == "team/alpha"
    assert served.http.get("/v1/sessions/team%2Falpha", headers=_agent()).status_code == 200
    assert served.http.delete("/v1/sessions/team/alpha", headers=_agent()).status_code == 204
    assert served.http.get("/v1/sessions/team/alpha", headers=_agent()).status_code == 404


# -- 14, 15: config, CLI, MCP stdio, read timeouts --------------------------------------------

_BOMB = (
    "a: &a [lol,lol,lol,lol,lol,lol,lol,lol,lol]\n"
    + "".join(f"{b}: &{b} [{','.join(['*' + a] * 9)}]\n" for a, b in zip("abcdefg", "bcdefgh", strict=True))
    + "episodic_memory: [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n"
)


def test_a_yaml_alias_bomb_is_refused_without_expanding_it(tmp_path: Path) -> None:
    from memlane.errors import ConfigError

    path = tmp_path / "bomb.yaml"
    path.write_text(_BOMB, encoding="utf-8")
    assert len(_BOMB) < 500
    with pytest.raises(ConfigError, match="aliases") as refused:
        load_config(path)
    assert len(str(refused.value)) < 1000  # the message does not expand the value


def test_export_out_refuses_to_follow_a_symlink(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from memlane.cli import cli

    db = tmp_path / "m.db"
    EpisodicMemory.open(db, embedder=HashingEmbedder()).close()
    target = tmp_path / "precious.txt"
    target.write_text("keep me", encoding="utf-8")
    link = tmp_path / "out.jsonl"
    os.symlink(target, link)
    result = CliRunner().invoke(cli, ["--db", str(db), "--embedder", "hashing", "export", "--out", str(link)])
    assert result.exit_code == 2, result.output
    assert "symbolic link" in result.output
    assert target.read_text(encoding="utf-8") == "keep me"


def test_mcp_stdio_answers_lines_it_cannot_take(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    from tests.mcp_stdio import RawMcpClient

    with RawMcpClient(tmp_path, "--db", str(tmp_path / "m.db"), "--embedder", "hashing") as client:
        assert client.process.stdin is not None
        for raw, code in (
            (b"{not json", -32700),
            (b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]', -32600),
            (b'{"jsonrpc": "2.0", "id": ' + b"9" * 20_000 + b', "method": "ping"}', -32700),
            (b'{"jsonrpc": "2.0", "id": ' + b"9" * 30 + b', "method": "ping"}', -32600),
        ):
            client.process.stdin.write(raw + b"\n")
            client.process.stdin.flush()
            answer = json.loads(client._lines.get(timeout=client.timeout_s))
            assert answer["id"] is None and answer["error"]["code"] == code, (raw[:40], answer)
        assert "result" in client.request("ping", {})  # still serving


def test_mcp_streamable_http_keeps_no_session_table(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    from mcp_types.version import LATEST_HANDSHAKE_VERSION

    from memlane.server.mcp import create_mcp_server, streamable_http_app

    memory = EpisodicMemory.open(tmp_path / "m.db", embedder=HashingEmbedder())
    app = streamable_http_app(create_mcp_server(memory))
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": LATEST_HANDSHAKE_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        },
    }
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    try:
        with serve_in_thread(app) as url, httpx.Client(base_url=url, timeout=30) as http:
            for _ in range(300):  # each would have been a session held for 30 minutes
                response = http.post("/mcp", json=init, headers=headers)
                assert response.status_code == 200, response.text
                assert "mcp-session-id" not in response.headers
            listed = http.post(
                "/mcp",
                json={"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
                headers=headers,
            )
            assert listed.status_code == 200 and "remember_episode" in listed.text
    finally:
        memory.close()


def test_read_deadlines_close_slow_requests() -> None:
    import asyncio

    import uvicorn
    from uvicorn.server import ServerState

    from memlane.server.timeouts import TimedH11Protocol

    class Transport(asyncio.Transport):
        def __init__(self) -> None:
            super().__init__()
            self.closed = False

        def get_extra_info(self, name: str, default: Any = None) -> Any:
            return {"peername": ("127.0.0.1", 1), "sockname": ("127.0.0.1", 2)}.get(name, default)

        def is_closing(self) -> bool:
            return self.closed

        def close(self) -> None:
            self.closed = True

        def write(self, data: Any) -> None:
            pass

    async def noop_app(scope: Any, receive: Any, send: Any) -> None:
        await receive()

    config = uvicorn.Config(noop_app, http=TimedH11Protocol, lifespan="off")
    config.load()
    loop = asyncio.new_event_loop()
    try:
        cases = {
            b"GET / HTTP/1.1\r\nHost: x\r\n": 1,  # headers never end: closed at the header deadline
            b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789": 2,  # body never ends
        }
        for data, deadlines in cases.items():
            protocol = TimedH11Protocol(config=config, server_state=ServerState(), app_state={}, _loop=loop)
            transport = Transport()
            protocol.connection_made(transport)
            protocol.data_received(data)
            for _ in range(deadlines):
                assert not transport.closed
                protocol.read_deadline()  # what the loop's timer calls (no waiting here)
            assert transport.closed, data
            protocol.connection_lost(None)  # a started endpoint sees the disconnect and ends
            pending = asyncio.all_tasks(loop)
            if pending:
                loop.run_until_complete(asyncio.wait(pending, timeout=10))
    finally:
        loop.close()


def test_bidi_controls_are_shown_not_obeyed_in_the_cli(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from memlane.cli import cli

    db = tmp_path / "m.db"
    with EpisodicMemory.open(db, embedder=HashingEmbedder()) as memory:
        memory.remember_episode("note", "account \u202e4321-0987\u202c")
    result = CliRunner().invoke(cli, ["--db", str(db), "--embedder", "hashing", "recall", "account"])
    assert result.exit_code == 0, result.output
    assert "\u202e" not in result.output and "<U+202E>4321-0987<U+202C>" in " ".join(result.output.split())


def test_a_query_is_bounded_well_below_content(served: Served) -> None:
    """A query is not a document: its analysis costs grow with its length (the load benchmark)."""
    from memlane.validation import MAX_QUERY_CHARS

    long = "deploy window " * (MAX_QUERY_CHARS // 14 + 1)
    for path, body in (
        ("/v1/recall", {"query": long}),
        ("/v1/sessions/search", {"query": long}),
        ("/v1/context", {"query": long}),
    ):
        response = served.http.post(path, json=body, headers=_agent())
        assert response.status_code == 422 and "query is longer than 10,000" in response.text, path
    pasted = [{"role": "user", "content": long}]  # a long user message still gets its context
    injected = served.http.post("/v1/context/inject", json={"messages": pasted}, headers=_agent())
    assert injected.status_code == 200, injected.text
