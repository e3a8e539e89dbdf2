"""What a command imports (issue #24 item 7, starts): ``memlane --help`` and structured lookups
never load the embedding runtime, the date parser or the servers they do not use.

Each check runs the real ``memlane`` in a fresh interpreter and reads its ``sys.modules`` at exit,
so the assertions are about imports, never about timings (those are in ``benchmarks/starts.py``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

MODEL_RUNTIME = {"onnxruntime", "tokenizers"}
"""Imported only when the bundled model embeds a text."""

NOT_FOR_LOOKUPS = MODEL_RUNTIME | {"dateparser", "faiss", "fastapi", "uvicorn", "mcp", "starlette", "openai"}
"""Nothing a structured lookup (no query) or a help page needs."""

_PROBE = """
import atexit, json, os, runpy, sys

def report():
    with open(os.environ["MEMLANE_PROBE_OUT"], "w") as fh:
        json.dump(sorted(sys.modules), fh)

atexit.register(report)
sys.argv = ["memlane", *sys.argv[1:]]
runpy.run_module("memlane", run_name="__main__")
"""


def loaded_packages(tmp_path: Path, *args: str) -> set[str]:
    """Run ``memlane ARGS`` in a new interpreter; the top-level packages it had imported at exit."""
    return {name.split(".")[0] for name in loaded_modules(tmp_path, *args)}


def loaded_modules(tmp_path: Path, *args: str) -> set[str]:
    """Run ``memlane ARGS`` in a new interpreter; every module it had imported at exit."""
    out = tmp_path / "modules.json"
    env = {"MEMLANE_PROBE_OUT": str(out), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    return set(json.loads(out.read_text(encoding="utf-8")))


@pytest.fixture(scope="module")
def bundled_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database with two episodes embedded by the bundled model (the default embedder)."""
    path = tmp_path_factory.mktemp("starts") / "memory.db"
    for content in ("User prefers window seats", "Invoice 4471 was paid on Monday"):
        subprocess.run(
            [sys.executable, "-m", "memlane", "--db", str(path), "remember", "note", content],
            capture_output=True,
            check=True,
        )
    return path


def test_help_imports_no_numpy_model_or_server(tmp_path: Path) -> None:
    loaded = loaded_packages(tmp_path, "--help")
    assert "click" in loaded  # the probe saw the command run
    assert not loaded & (NOT_FOR_LOOKUPS | {"numpy"}), sorted(loaded & (NOT_FOR_LOOKUPS | {"numpy"}))


@pytest.mark.parametrize("command", ["recall", "serve", "mcp", "eval"])
def test_a_command_help_imports_no_numpy_or_model(tmp_path: Path, command: str) -> None:
    loaded = loaded_packages(tmp_path, command, "--help")
    assert not loaded & (NOT_FOR_LOOKUPS | {"numpy"}), sorted(loaded & (NOT_FOR_LOOKUPS | {"numpy"}))


REQUEST_ROOMS = {f"memlane.operations.{room}_requests" for room in ("episodes", "sessions", "graph", "admin")}
"""The modules that declare the operations' requests, one room each (pydantic models)."""

NOT_FOR_HELP = {"numpy", "onnxruntime", "pydantic", "pydantic_core", "rich"}
"""A help page is click's text: no request model, no console, no array."""


@pytest.mark.parametrize(
    "command",
    [
        ("--help",),
        ("recall", "--help"),
        ("remember", "--help"),
        ("sessions", "search", "--help"),
        ("context", "--help"),
        ("facts", "paths", "--help"),
        ("compact", "--help"),
        ("serve", "--help"),
    ],
    ids=" ".join,
)
def test_a_help_page_builds_no_request_and_draws_nothing(tmp_path: Path, command: tuple[str, ...]) -> None:
    """The options generated from requests take their help from the recorded field schemas."""
    loaded = loaded_modules(tmp_path, *command)
    assert "memlane.cli.app" in loaded  # the probe saw the command run
    assert not loaded & REQUEST_ROOMS, sorted(loaded & REQUEST_ROOMS)
    packages = {name.split(".")[0] for name in loaded}
    assert not packages & NOT_FOR_HELP, sorted(packages & NOT_FOR_HELP)


def test_a_command_builds_only_its_own_room_of_requests(tmp_path: Path, bundled_db: Path) -> None:
    """``recall --limit 1`` checks its value with the episode requests, and builds no other room's."""
    loaded = loaded_modules(
        tmp_path, "--db", str(bundled_db), "recall", "--event-type", "note", "--limit", "1"
    )
    assert loaded & REQUEST_ROOMS == {"memlane.operations.episodes_requests"}


def test_import_memlane_imports_no_numpy(tmp_path: Path) -> None:
    code = "import json, sys, memlane, memlane.errors, memlane.models; print(json.dumps(sorted(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = {name.split(".")[0] for name in json.loads(result.stdout)}
    assert "memlane" in loaded
    assert not loaded & (NOT_FOR_LOOKUPS | {"numpy", "pydantic"}), loaded & (NOT_FOR_LOOKUPS | {"numpy"})


@pytest.mark.parametrize(
    "args",
    [("recall",), ("recall", "--event-type", "note", "--limit", "1"), ("stats",), ("export",)],
    ids=["recall", "recall-filtered", "stats", "export"],
)
def test_structured_lookup_loads_no_model(tmp_path: Path, bundled_db: Path, args: tuple[str, ...]) -> None:
    loaded = loaded_packages(tmp_path, "--db", str(bundled_db), *args)
    assert "sqlite3" in loaded  # it did read the database
    assert not loaded & NOT_FOR_LOOKUPS, sorted(loaded & NOT_FOR_LOOKUPS)


def test_a_query_loads_the_model(tmp_path: Path, bundled_db: Path) -> None:
    """The converse, so the probe is known to see the runtime when it is used."""
    loaded = loaded_packages(tmp_path, "--db", str(bundled_db), "recall", "window seats")
    assert loaded >= MODEL_RUNTIME
