"""examples/agent_loop.py in print mode (no endpoint set): stores conversations, injects context."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "agent_loop.py"

pytestmark = pytest.mark.slow  # runs the examples as subprocesses


def _requests(stdout: str) -> list[dict[str, object]]:
    """The JSON requests printed by the loop (each a pretty-printed object starting at column 0)."""
    decoder = json.JSONDecoder()
    found, index = [], 0
    while (start := stdout.find("{\n", index)) >= 0:
        document, index = decoder.raw_decode(stdout, start)
        found.append(document)
    return found


def test_agent_loop_prints_requests_with_injected_context_and_stores_conversations(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "OPENAI_API_KEY")}
    script_input = (
        "Please onboard Acme Corp as a new vendor\n/end\n\nDid the Acme Corp vendor onboarding go through?\n"
    )
    result = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--db",
            str(tmp_path / "agent.db"),
            "--embedder",
            "hashing",
            "--budget",
            "400",
        ],
        input=script_input,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    requests = _requests(result.stdout)
    assert len(requests) == 2
    first, second = (r["messages"] for r in requests)
    assert isinstance(first, list) and isinstance(second, list)
    assert [m["role"] for m in first] == ["system", "user"]  # nothing to recall yet
    roles = [m["role"] for m in second]
    assert roles == ["system", "system", "user"]
    block = second[1]["content"]
    assert (
        block.startswith("[Past Conversation Context]")
        and "Please onboard Acme Corp as a new vendor" in block
    )
    assert result.stdout.count("# stored conversation") == 2
