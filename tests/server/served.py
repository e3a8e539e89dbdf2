"""What the tests that start ``memlane serve`` as a process share."""

from __future__ import annotations

import re
import signal
import subprocess
import time
from typing import Any


def served_url(process: subprocess.Popen[str], timeout_s: float) -> str:
    """The ``http://127.0.0.1:<port>`` that ``memlane serve`` prints on stderr when it is up.

    Raises:
        AssertionError: the process exits or ``timeout_s`` passes before it says where it runs.
    """
    assert process.stderr is not None
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        if not line:
            break
        match = re.search(r"running on (http://127\.0\.0\.1:\d+)", line)
        if match:
            return match.group(1)
    raise AssertionError("the server did not report its address")


def stop_served(process: subprocess.Popen[Any], timeout_s: float = 30) -> None:
    """Stop a served process as Ctrl-C does (SIGINT), killing it if it has not exited in ``timeout_s``."""
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:  # pragma: no cover - only if shutdown hangs
        process.kill()
        process.wait()
