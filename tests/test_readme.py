"""Every code block of README.md runs as written.

Each fenced block is handled by its language:

* ``python``: run in a fresh interpreter (a subprocess) in an empty temporary directory.
* ``bash``: run with ``bash -e -o pipefail`` in an empty temporary directory, with this
  environment's ``memlane`` first on ``PATH`` (so ``./memlane.db`` is a new, temporary database).
* ``yaml``: a configuration example, loaded with memlane's own config loader (``load_config``).
* ``json``: an MCP client configuration: parsed, and its ``args`` given to the real CLI.
* no language: text that is not code (a formula, an output sample): not run.

An HTML comment on the line right before a block changes how it runs:

* ``<!-- no-test: REASON -->``: the block is not run (it needs something this machine cannot
  give: Docker, an OpenAI key, ...). Such exceptions must say why and stay few.
* ``<!-- test: postgres -->``: run against the test PostgreSQL server (``tests/pg_server.py``);
  the block's example URL ``postgresql://app@db.internal/agents`` and ``schema="memlane"`` are
  replaced by the test server's URL and a fresh schema.
* ``<!-- test: llm -->``: run with ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY`` pointing at the
  real local LLM server (``tests/llm_server.py``), which the openai SDK reads.
* ``<!-- test: server -->``: run while ``memlane serve`` listens (started by the test with an API
  key in ``$KEY``); the block's ``127.0.0.1:8080`` is replaced by the server's port.

Any other language, or an unknown comment, fails the test: a new block is either run or excused.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from memlane.cli import cli
from memlane.config.api_keys import hash_api_key
from memlane.config.file import load_config
from tests.llm_server import LLMServer

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
RUN_LANGUAGES = ("python", "bash")
MODES = ("postgres", "llm", "server")
MAX_EXCUSED = 5
PG_EXAMPLE_URL = "postgresql://app@db.internal/agents"
SERVER_KEY = "mlk_readme_test_key"

FENCE = re.compile(r"^```([\w-]*)[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)
ANNOTATION = re.compile(r"<!--\s*(no-test|test):\s*(.*?)\s*-->")


@dataclass(frozen=True)
class Block:
    """One fenced code block of the README."""

    line: int
    language: str
    code: str
    excused: str | None  # the reason of a no-test comment
    mode: str | None  # the mode of a test: comment

    @property
    def id(self) -> str:
        return f"{self.language or 'text'}-line{self.line}"


def readme_blocks(text: str | None = None) -> list[Block]:
    """The fenced blocks of the README, with the annotation on the line before each."""
    text = README.read_text(encoding="utf-8") if text is None else text
    blocks: list[Block] = []
    for match in FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        annotation = ANNOTATION.fullmatch(before.strip())
        excused = mode = None
        if annotation is not None:
            kind, value = annotation.groups()
            if kind == "no-test":
                excused = value
            else:
                mode = value
        elif "<!--" in before:
            raise AssertionError(f"README line {line - 1}: unknown comment before a code block: {before!r}")
        blocks.append(Block(line, match.group(1), match.group(2), excused, mode))
    return blocks


BLOCKS = readme_blocks()
RUN = [b for b in BLOCKS if b.language in RUN_LANGUAGES and b.excused is None]
YAML = [b for b in BLOCKS if b.language == "yaml"]
JSON = [b for b in BLOCKS if b.language == "json"]


def test_every_code_block_is_run_or_excused() -> None:
    assert len(BLOCKS) >= 15 and RUN, "the README's code blocks were not found"
    for block in BLOCKS:
        assert block.language in (*RUN_LANGUAGES, "yaml", "json", ""), (
            f"{block.id}: no runner for this language"
        )
        if block.excused is not None:
            assert block.language in RUN_LANGUAGES, f"{block.id}: only python/bash blocks can be excused"
            assert len(block.excused) >= 10, f"{block.id}: say why the block cannot run here"
        if block.mode is not None:
            assert block.mode in MODES, f"{block.id}: unknown test mode {block.mode!r}"
            assert block.language in RUN_LANGUAGES, block.id
    excused = [b.id for b in BLOCKS if b.excused is not None]
    assert len(excused) <= MAX_EXCUSED, f"too many blocks excused from running: {excused}"


def test_the_block_reader_sees_annotations() -> None:
    text = (
        "# t\n\n<!-- no-test: needs a GPU somewhere -->\n```bash\nnvidia-smi\n```\n\n"
        "<!-- test: llm -->\n```python\nprint(1)\n```\n\n```\nplain\n```\n"
    )
    gpu, llm, plain = readme_blocks(text)
    assert (gpu.language, gpu.excused, gpu.mode, gpu.line) == ("bash", "needs a GPU somewhere", None, 4)
    assert (llm.language, llm.excused, llm.mode, llm.code) == ("python", None, "llm", "print(1)\n")
    assert (plain.language, plain.excused, plain.mode) == ("", None, None)


def _environ(tmp_path: Path, **extra: str) -> dict[str, str]:
    """A clean environment: this checkout's sources first, no memlane settings from outside."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("MEMLANE_DB", "MEMLANE_CONFIG", "OPENAI_"))
    }
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), str(ROOT), env.get("PYTHONPATH")]))
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["HOME"] = str(tmp_path / "home")
    env["COLUMNS"] = "100"
    env.update(extra)
    return env


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[int]:
    """``memlane serve`` on a free port, with the API key :data:`SERVER_KEY` for tenant ``acme``."""
    config = tmp_path / "server.yaml"
    key_entry = f'"{hash_api_key(SERVER_KEY)}": acme'
    config.write_text(
        f"memory:\n  path: {tmp_path / 'server.db'}\nserver:\n  api_keys:\n    {key_entry}\n",
        encoding="utf-8",
    )
    port = _free_port()
    log = (tmp_path / "server.log").open("w")
    argv = [sys.executable, "-m", "memlane", "--config", str(config), "serve", "--port", str(port)]
    process = subprocess.Popen(argv, env=_environ(tmp_path), stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, (tmp_path / "server.log").read_text()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                assert time.monotonic() < deadline, (tmp_path / "server.log").read_text()
                time.sleep(0.3)
        yield port
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def _prepare(block: Block, request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, dict[str, str]]:
    """The code to run and the extra environment, for the block's mode."""
    code, extra = block.code, {}
    if block.mode == "postgres":
        assert PG_EXAMPLE_URL in code, block.id
        url: str = request.getfixturevalue("pg_url")
        schema: str = request.getfixturevalue("pg_schema")
        code = code.replace(PG_EXAMPLE_URL, url).replace('schema="memlane"', f'schema="{schema}"')
    elif block.mode == "llm":
        server: LLMServer = request.getfixturevalue("llm_server")
        extra = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "local"}
    elif block.mode == "server":
        assert "127.0.0.1:8080" in code, block.id
        port: int = request.getfixturevalue("serve")
        code = code.replace("127.0.0.1:8080", f"127.0.0.1:{port}")
        extra = {"KEY": SERVER_KEY}
    return code, extra


@pytest.mark.parametrize("block", RUN, ids=[b.id for b in RUN])
def test_code_block_runs(block: Block, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "home").mkdir()
    code, extra = _prepare(block, request, tmp_path)
    if block.language == "python":
        argv = [sys.executable, "-c", code]
    else:
        bash = shutil.which("bash")
        assert bash is not None
        argv = [bash, "-e", "-o", "pipefail", "-c", code]
    done = subprocess.run(
        argv,
        cwd=work,
        env=_environ(tmp_path, **extra),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, (
        f"README {block.id} failed:\n{code}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
    )
    if block.mode == "server":
        assert '"tenant_id":"acme"' in done.stdout.replace(" ", "") and '"hits"' in done.stdout


@pytest.mark.parametrize("block", YAML, ids=[b.id for b in YAML])
def test_yaml_block_is_a_valid_config(block: Block, tmp_path: Path) -> None:
    path = tmp_path / "memlane.yaml"
    path.write_text(block.code, encoding="utf-8")
    data = yaml.safe_load(block.code)
    assert isinstance(data, dict) and {"memory", "episodic_memory", "server"} & set(data)
    config = load_config(path)
    if "episodic_memory" in data:  # present => agents get the tools
        assert config.episodic is not None
    if data.get("server", {}).get("api_keys"):
        assert config.server.api_keys


@pytest.mark.parametrize("block", JSON, ids=[b.id for b in JSON])
def test_json_block_is_an_mcp_client_config_the_cli_accepts(block: Block, tmp_path: Path) -> None:
    servers = json.loads(block.code)["mcpServers"]
    assert servers
    config = tmp_path / "memlane.yaml"
    config.write_text("episodic_memory:\n", encoding="utf-8")
    for entry in servers.values():
        assert Path(entry["command"]).name == "memlane"
        args = [str(config) if a.endswith(".yaml") else a for a in entry["args"]]
        result = CliRunner().invoke(cli, [*args, "--help"])  # every option parsed, then help
        assert result.exit_code == 0, result.output


def test_the_python_api_snippets_run_in_order_share_their_memories(tmp_path: Path) -> None:
    """Run in one directory, the Python API example's memories are what the later snippets read."""
    first = next(b for b in RUN if b.language == "python" and 'session_id="chat-42"' in b.code)
    hybrid = next(b for b in RUN if b.language == "python" and 'retrieval="keyword"' in b.code)
    (tmp_path / "home").mkdir()
    outputs = []
    for block in (first, hybrid):
        done = subprocess.run(
            [sys.executable, "-c", block.code],
            cwd=tmp_path,
            env=_environ(tmp_path),
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert done.returncode == 0, f"README {block.id}:\n{done.stderr}"
        outputs.append(done.stdout)
    assert "window seats" in outputs[0].splitlines()[-1]  # recalled from chat-43: cross-session
    assert outputs[1].strip() == "['User prefers window seats']"
