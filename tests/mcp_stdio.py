"""A raw JSON-RPC client for a real ``memlane mcp`` stdio subprocess.

The SDK's client cannot send what hostile or buggy clients send (its encoder refuses a lone
surrogate), so the input-policy and reliability tests talk to the server line by line:
``json.dumps`` writes a lone surrogate as the escape ``"\\udc00"``, as JavaScript's
``JSON.stringify`` does.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from mcp_types.version import LATEST_HANDSHAKE_VERSION


class RawMcpClient:
    """``python -m memlane <root options> mcp`` with a line-level JSON-RPC client.

    Args:
        cwd: Working directory of the server.
        root_options: Options before ``mcp`` (``--db``, ``--embedder``, ``--tenant``, ...).
        timeout_s: How long :meth:`request` waits for each answer.
    """

    def __init__(self, cwd: Path, *root_options: str, timeout_s: float = 60.0) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLANE_")}
        env["PYTHONPATH"] = os.pathsep.join(
            [str(Path(__file__).parents[1] / "src"), env.get("PYTHONPATH", "")]
        )
        self.process = subprocess.Popen(
            [sys.executable, "-m", "memlane", *root_options, "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=cwd,
            env=env,
        )
        self.timeout_s = timeout_s
        self._lines: queue.Queue[bytes] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._next_id = 0
        init = self.request(
            "initialize",
            {
                "protocolVersion": LATEST_HANDSHAKE_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "raw-test-client", "version": "0"},
            },
        )
        assert "result" in init, init
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line)

    def send(self, message: dict[str, Any]) -> None:
        """Write one message (ASCII JSON: lone surrogates become ``\\udcxx`` escapes)."""
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message, ensure_ascii=True).encode("ascii") + b"\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send a request and return its response (result or error), skipping other messages.

        Raises:
            TimeoutError: no answer within ``timeout_s`` (the server dropped the request).
        """
        self._next_id += 1
        request_id = self._next_id
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        while True:
            try:
                line = self._lines.get(timeout=self.timeout_s)
            except queue.Empty:
                raise TimeoutError(f"no answer to {method} #{request_id}") from None
            message: dict[str, Any] = json.loads(line)
            if message.get("id") == request_id:
                return message

    def call_tool(self, name: str, arguments: Any) -> dict[str, Any]:
        """``tools/call``: the tool's JSON result (``{"ok": ...}``), or ``{"rpc_error": ...}``."""
        response = self.request("tools/call", {"name": name, "arguments": arguments})
        if "error" in response:
            return {"rpc_error": response["error"]}
        result = response["result"]
        payload: dict[str, Any] = json.loads(result["content"][0]["text"])
        assert result.get("isError", False) is (not payload.get("ok", False))
        return payload

    def close(self) -> None:
        """Close stdin (the server exits) and wait for the process."""
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()

    def __enter__(self) -> RawMcpClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
