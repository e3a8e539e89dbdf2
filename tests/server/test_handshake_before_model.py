"""Both servers answer their handshake before the bundled model loads (issue #24 item 7): after
``GET /health`` (``memlane serve``) and after the whole MCP handshake plus ``tools/list``
(``memlane mcp``, stdio) the process has not loaded onnxruntime; after the first write it has
(the converse, so the check is known to see the runtime). Whether a library is loaded is read
from ``/proc/<pid>/maps``: no timing is involved.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import IO, Any

import pytest

pytest.importorskip("mcp")
pytest.importorskip("uvicorn")
import httpx

from memlane.config.file import hash_api_key
from tests.server.served import served_url, stop_served

pytestmark = pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads /proc/<pid>/maps")

KEY = "mlk_handshake-0123456789abcdef"


def _model_loaded(pid: int) -> bool:
    return "onnxruntime" in Path(f"/proc/{pid}/maps").read_text(encoding="utf-8", errors="replace")


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("MEMLANE_")}


def test_serve_answers_health_before_the_model_loads(tmp_path: Path) -> None:
    config = tmp_path / "memlane.yaml"
    config.write_text(
        f"memory:\n  path: m.db\nserver:\n  port: 0\n  api_keys:\n    '{hash_api_key(KEY)}': acme\n",
        encoding="utf-8",
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "memlane", "--config", str(config), "serve", "--log-level", "info"],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env=_env(),
        cwd=tmp_path,
    )
    try:
        assert process.stderr is not None
        url = served_url(process, 120)
        with httpx.Client(base_url=url, headers={"X-API-Key": KEY}, timeout=120) as client:
            assert client.get("/health").status_code == 200
            assert not _model_loaded(process.pid)
            assert client.post("/v1/episodes", json={"event_type": "n", "content": "x"}).status_code == 201
            assert _model_loaded(process.pid)
    finally:
        stop_served(process)


def _send(stdin: IO[bytes], message: dict[str, Any]) -> None:
    stdin.write(json.dumps(message).encode() + b"\n")
    stdin.flush()


def test_mcp_answers_the_handshake_before_the_model_loads(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "memlane", "--db", str(tmp_path / "m.db"), "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=_env(),
        cwd=tmp_path,
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        params = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        }
        _send(process.stdin, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
        assert json.loads(process.stdout.readline())["id"] == 1
        _send(process.stdin, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _send(process.stdin, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert json.loads(process.stdout.readline())["id"] == 2  # the SDK is up, the handshake done
        assert not _model_loaded(process.pid)
        call = {"name": "remember_episode", "arguments": {"event_type": "note", "content": "x"}}
        _send(process.stdin, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call})
        reply = json.loads(process.stdout.readline())
        assert reply["id"] == 3 and reply["result"]["isError"] is False
        assert _model_loaded(process.pid)
    finally:
        process.stdin.close()
        stop_served(process)
