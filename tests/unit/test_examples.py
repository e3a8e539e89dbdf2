"""The framework examples run offline, end to end, and leave what they claim in the database."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from memlane import EpisodicMemory, MemoryConfig
from memlane.integrations.langgraph import MemlaneStore

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

pytestmark = pytest.mark.slow  # runs the examples as subprocesses


def _run(script: str, *args: str) -> str:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OPENAI_BASE_URL", "OPENAI_API_KEY") and not k.startswith("MEMLANE_")
    }
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_langgraph_agent(tmp_path: Path) -> None:
    db = tmp_path / "agent.db"
    out = _run("langgraph_agent.py", "--db", str(db), "--user", "alice")
    third = out.split("user: Any dinner ideas")[1].split("history of")[0]
    assert "recalled 'home': 'User lives in Berlin'" in third  # the update superseded Lisbon
    assert "Lisbon" not in third
    history = out.split("history of 'home':")[1]
    assert history.index("User lives in Lisbon") < history.index("User lives in Berlin")
    assert "namespaces: [('memories', 'alice')]" in out
    with MemlaneStore.open(db, tenant_label=1) as store:
        item = store.get(("memories", "alice"), "home")
        assert item is not None and item.value == {"content": "User lives in Berlin"}
        assert {i.key for i in store.search(("memories", "alice"))} == {"home", "diet"}


def test_openai_tools_loop(tmp_path: Path) -> None:
    db = tmp_path / "tools.db"
    out = _run("openai_tools_loop.py", "--db", str(db))
    assert "tool remember_episode(" in out and "tool recall_episodes(" in out
    # the scripted model's answer is built from what memlane's recall tool returned
    assert "assistant: You told me: User prefers window seats" in out
    with EpisodicMemory.open(db, tenant_id="demo-user", session_id="chat-1") as memory:
        assert [(e.event_type, e.content, e.tags) for e in memory.iter_episodes()] == [
            ("preference", "User prefers window seats", ("travel",))
        ]


def test_mcp_client_against_the_configured_server(tmp_path: Path) -> None:
    db = tmp_path / "mcp.db"
    out = _run("mcp_client.py", "--db", str(db))
    tools = out.split("tools: ")[1].splitlines()[0].split(", ")
    assert {"remember_episode", "recall_episodes"} <= set(tools)
    assert '"content": "User prefers window seats"' in out.split("recalled:")[1]
    # tenant and session come from mcp_client_config.json's command line
    with EpisodicMemory.open(db, tenant_id="me", config=MemoryConfig(scope="tenant")) as memory:
        assert [(e.session_id, e.content) for e in memory.iter_episodes()] == [
            ("desktop", "User prefers window seats")
        ]
