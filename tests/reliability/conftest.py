"""Helpers for the reliability suite: run ``tests.reliability.workers`` in subprocesses."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def worker(*args: str, stdout: int | None = subprocess.PIPE) -> subprocess.Popen[bytes]:
    """Start ``python -m tests.reliability.workers ARGS`` with this checkout's sources first."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLANE_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT), env.get("PYTHONPATH", "")])
    return subprocess.Popen(
        [sys.executable, "-m", "tests.reliability.workers", *args],
        cwd=ROOT,
        env=env,
        stdout=stdout,
        stderr=subprocess.PIPE,
    )
