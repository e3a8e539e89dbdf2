"""``scripts/quickstart.sh`` says what it is doing, runs the demo and exits with its status.

The "activate the venv" hint is the demo's own (``tests/cli/test_demo.py``), said once.

Run in a copy of the repository's scripts and install files whose ``.venv`` is already current
(a stamp as ``scripts/_venv.sh`` writes it, and a stand-in ``memlane`` that records its call), so
the script's own logic runs without installing anything.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _current_venv(root: Path, status: int = 0) -> None:
    bindir = root / ".venv" / "bin"
    bindir.mkdir(parents=True)
    (bindir / "python").symlink_to(sys.executable)
    memlane = bindir / "memlane"
    memlane.write_text(f'#!/usr/bin/env bash\necho "demo ran with: $*"\nexit {status}\n', encoding="utf-8")
    memlane.chmod(0o755)
    files = hashlib.sha256((root / "pyproject.toml").read_bytes() + (root / "constraints.txt").read_bytes())
    arguments = hashlib.sha256(b"\n").hexdigest()[:16]  # no extra pip arguments
    (root / ".venv" / f".memlane-installed.{arguments}").write_text(files.hexdigest(), encoding="utf-8")


def _quickstart(tmp_path: Path, status: int) -> subprocess.CompletedProcess[str]:
    root = tmp_path / "clone"
    shutil.copytree(ROOT / "scripts", root / "scripts")
    for name in ("pyproject.toml", "constraints.txt"):
        shutil.copy(ROOT / name, root / name)
    _current_venv(root, status)
    bash = shutil.which("bash")
    assert bash is not None
    return subprocess.run(
        [bash, str(root / "scripts" / "quickstart.sh"), "--db", "x.db"],
        cwd=root,
        env={"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_quickstart_reports_progress_and_runs_the_demo_once(tmp_path: Path) -> None:
    done = _quickstart(tmp_path, 0)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "demo ran with: demo --db x.db"
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("memlane quick start: running 'memlane demo'")


def test_quickstart_exits_with_the_demo_status(tmp_path: Path) -> None:
    assert _quickstart(tmp_path, 3).returncode == 3
