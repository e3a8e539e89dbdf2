"""``memlane inspect DB``: a real process on 127.0.0.1, no key, every tenant, in headless Chromium."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.ui.conftest import GLOBEX_MARKER, ROOT, Seeded


@pytest.fixture
def local_inspector(seeded: Seeded) -> Iterator[str]:
    """Run ``memlane inspect DB --port 0`` and yield the URL it prints."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    proc = subprocess.Popen(
        [sys.executable, "-m", "memlane", "inspect", str(seeded.path), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "http://127.0.0.1:" in line, (line, proc.stderr.read() if proc.poll() is not None else "")
        url = line.split("inspector for", 1)[1].split(": ", 1)[1].split()[0]
        yield url
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_memlane_inspect_serves_a_local_admin_view(
    local_inspector: str, page: Any, seeded: Seeded, artifacts: Path
) -> None:
    assert local_inspector.startswith("http://127.0.0.1:") and local_inspector.endswith("/inspect")
    page.goto(local_inspector)
    assert "local admin" in page.inner_text(".who")
    assert page.locator("select#f-tenant option").all_inner_texts() == ["all tenants", "acme", "globex"]
    text = page.inner_text("#timeline")
    assert GLOBEX_MARKER in text and "trip-lisbon" in text
    assert page.locator("text=Log out").count() == 0
    page.goto(local_inspector + "/search?q=train+to+Sintra")
    assert page.locator("#hits article.hit").count() >= 2
    page.screenshot(path=str(artifacts / "local-inspect-search.png"), full_page=True)
    # a web page reaching the port through another host name (DNS rebinding) is refused
    rebound = httpx.get(local_inspector, headers={"Host": "evil.example"})
    assert rebound.status_code == 400
    assert GLOBEX_MARKER not in rebound.text


def test_memlane_inspect_refuses_a_missing_database(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, "-m", "memlane", "inspect", str(tmp_path / "nope.db"), "--port", "0"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 2
    assert "no database at" in done.stderr
