"""The package installs: ``python -m build`` makes a wheel and an sdist, the wheel installs into a
fresh virtual environment whose ``memlane demo`` runs with no source tree in sight, the extras
install what they name, and the Dockerfile's ``pip install``, ``CMD`` and ``HEALTHCHECK`` work.

One module-scoped build and one venv serve every test (dependencies come from the package index
through pip's cache, pinned by ``constraints.txt``). The tests run in file order: the demo runs
on the base install, before the extras are added.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tarfile
import time
import tomllib
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

import memlane
from memlane.config.api_keys import hash_api_key
from tests.packaging.dockerfile import ROOT, copy_sources, env, exec_form, healthcheck_command, ignored, only

pytestmark = pytest.mark.packaging

PYTHON = sys.executable
CONSTRAINTS = ROOT / "constraints.txt"
VERSION = memlane.__version__
EXTRA_MODULES = {
    "server": ["fastapi", "uvicorn"],
    "postgres": ["psycopg", "psycopg_pool"],
    "mcp": ["mcp"],
    "openai": ["openai"],
    "langgraph": ["langgraph"],
}
"""What memlane imports when an extra's feature is used (``memlane.cli.serve._require`` and the stores)."""
UMBRELLA_EXTRAS = {"all"}
"""Extras that name the others (``memlane[all]``: tests/unit/test_extras.py checks it names every one)."""


@dataclass(frozen=True)
class Dists:
    wheel: Path
    sdist: Path


def _environ(**extra: str) -> dict[str, str]:
    """This process's environment without anything that points Python at the source tree."""
    drop = {"PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "PYTHONSAFEPATH"}
    environ = {k: v for k, v in os.environ.items() if k not in drop}
    environ.update(extra)
    return environ


def _run(argv: list[str], *, cwd: Path, timeout: float = 900, **extra_env: str) -> str:
    done = subprocess.run(
        argv, cwd=cwd, env=_environ(**extra_env), capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, (
        f"{argv} exited {done.returncode}\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    )
    return done.stdout


def _pip(venv: Path, *args: str, cwd: Path) -> None:
    """pip of the test environment installing into ``venv`` (a venv made without pip of its own)."""
    _run([PYTHON, "-m", "pip", "--python", str(venv / "bin" / "python"), "-q", *args], cwd=cwd)


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> Dists:
    """``python -m build``: the sdist, then the wheel built from that sdist."""
    out = tmp_path_factory.mktemp("dist")
    _run([PYTHON, "-m", "build", "--outdir", str(out), str(ROOT)], cwd=out)
    (wheel,) = out.glob("*.whl")
    (sdist,) = out.glob("*.tar.gz")
    return Dists(wheel, sdist)


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory, dists: Dists) -> Path:
    """A fresh venv holding the wheel and its dependencies only (no extras, no dev tools)."""
    root = tmp_path_factory.mktemp("venv") / "venv"
    _run([PYTHON, "-m", "venv", "--without-pip", str(root)], cwd=root.parent)
    _pip(root, "install", "-c", str(CONSTRAINTS), str(dists.wheel), cwd=root.parent)
    return root


@pytest.fixture
def elsewhere(tmp_path: Path) -> Path:
    """An empty working directory, far from the source tree."""
    work = tmp_path / "work"
    work.mkdir()
    return work


def _package_files() -> list[str]:
    """Every file of src/memlane that is not Python source or bytecode, relative to src/."""
    base = ROOT / "src"
    return sorted(
        str(p.relative_to(base))
        for p in (base / "memlane").rglob("*")
        if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts
    )


def test_version_is_written_in_one_place(dists: Dists) -> None:
    with (ROOT / "pyproject.toml").open("rb") as fh:
        project = tomllib.load(fh)["project"]
    assert "version" not in project and "version" in project["dynamic"]
    with zipfile.ZipFile(dists.wheel) as wheel:
        metadata = wheel.read(f"memlane-{VERSION}.dist-info/METADATA").decode()
    assert f"\nVersion: {VERSION}\n" in metadata
    assert (
        dists.wheel.name.startswith(f"memlane-{VERSION}-") and dists.sdist.name == f"memlane-{VERSION}.tar.gz"
    )


def test_wheel_holds_the_package_data_and_the_license(dists: Dists) -> None:
    with zipfile.ZipFile(dists.wheel) as wheel:
        names = set(wheel.namelist())
        license_text = wheel.read(f"memlane-{VERSION}.dist-info/licenses/LICENSE").decode()
        metadata = wheel.read(f"memlane-{VERSION}.dist-info/METADATA").decode()
    data = _package_files()
    assert {"memlane/py.typed", "memlane/data/demo_episodes.jsonl"} <= set(data)
    assert any(name.startswith("memlane/embeddings/data/") and name.endswith(".json") for name in data)
    missing = [name for name in data if name not in names]
    assert not missing, missing
    assert license_text == (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in license_text and "Version 2.0, January 2004" in license_text
    assert "License-Expression: Apache-2.0" in metadata
    assert not [name for name in names if name.startswith("tests/")]


def test_sdist_holds_the_license_changelog_and_sources(dists: Dists) -> None:
    prefix = f"memlane-{VERSION}/"
    with tarfile.open(dists.sdist) as sdist:
        names = {name.removeprefix(prefix) for name in sdist.getnames()}
    expected = {"LICENSE", "CHANGELOG.md", "README.md", "pyproject.toml", "constraints.txt", "PKG-INFO"}
    expected |= {"Dockerfile", ".dockerignore", "src/memlane/__init__.py"}
    expected |= {f"src/{name}" for name in _package_files()}
    assert expected <= names, sorted(expected - names)


def test_fresh_venv_runs_the_demo_without_the_source_tree(venv: Path, elsewhere: Path) -> None:
    where = _run(
        [str(venv / "bin" / "python"), "-c", "import memlane; print(memlane.__file__)"], cwd=elsewhere
    )
    assert Path(where.strip()).is_relative_to(venv), where  # the installed copy, not src/
    assert VERSION in _run([str(venv / "bin" / "memlane"), "--version"], cwd=elsewhere)
    out = _run([str(venv / "bin" / "memlane"), "demo"], cwd=elsewhere, COLUMNS="100")
    assert "memlane demo" in out and "all-MiniLM-L6-v2" in out
    assert "BK-4471 failed: card declined" in out
    assert "How hits are ranked" in out and "convex" in out
    assert (elsewhere / "memlane-demo.db").is_file()
    doc = json.loads(_run([str(venv / "bin" / "memlane"), "--json", "demo"], cwd=elsewhere))
    assert doc["recalls"][1]["hits"][0]["id"] == "demo-07"  # "did any payment fail?" -> the declined card


def _build_context(tmp_path: Path) -> Path:
    """The Docker build context as the Dockerfile sees it: its COPY sources minus .dockerignore."""
    context = tmp_path / "context"
    context.mkdir()
    for source in copy_sources():
        origin = ROOT / source
        if origin.is_dir():

            def skip(folder: str, names: list[str]) -> list[str]:
                relative = Path(folder).relative_to(ROOT)
                return [n for n in names if ignored(str(relative / n))]

            shutil.copytree(origin, context / source, ignore=skip)
        else:
            shutil.copy2(origin, context / source)
    return context


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_dockerfile_commands_run_in_a_fresh_venv(venv: Path, tmp_path: Path) -> None:
    # RUN pip install '.[server,postgres]' -c constraints.txt, in a copy of the build context
    (run_line,) = [i.args for i in only("RUN") if "pip install" in i.args]
    words = shlex.split(run_line)
    assert words[:2] == ["pip", "install"]
    context = _build_context(tmp_path)
    _pip(venv, *words[1:], cwd=context)
    for extra in ("server", "postgres"):
        _run([str(venv / "bin" / "python"), "-c", "import " + ", ".join(EXTRA_MODULES[extra])], cwd=tmp_path)

    # CMD, with the config at a path of this machine and a free port instead of 8080
    key = "mlk_dockerfile_test"
    config = tmp_path / "memlane.yaml"
    config.write_text(f'server:\n  api_keys:\n    "{hash_api_key(key)}": acme\n', encoding="utf-8")
    port = _free_port()
    (cmd,) = only("CMD")
    argv = [str(venv / "bin" / word) if word == "memlane" else word for word in exec_form(cmd.args)]
    argv = [str(config) if word == "/etc/memlane/memlane.yaml" else word for word in argv]
    argv[argv.index("--port") + 1] = str(port)
    image_env = env()
    data_dir = tmp_path / "var-lib-memlane"
    data_dir.mkdir()
    image_env["MEMLANE_DB"] = str(data_dir / Path(image_env["MEMLANE_DB"]).name)
    check = [
        str(venv / "bin" / "python") if w == "python" else w.replace(":8080/", f":{port}/")
        for w in healthcheck_command()
    ]
    log = tmp_path / "server.log"
    with log.open("w") as out:
        server = subprocess.Popen(
            argv, cwd=data_dir, env=_environ(**image_env), stdout=out, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + 120
        healthy = False
        while time.monotonic() < deadline and server.poll() is None:
            probe = subprocess.run(check, env=_environ(), capture_output=True, timeout=30, check=False)
            if probe.returncode == 0:
                healthy = True
                break
            time.sleep(0.5)
        assert healthy, log.read_text()
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/v1/episodes",
            data=json.dumps({"event_type": "preference", "content": "Prefers window seats"}).encode(),
            headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            assert response.status == 201
            assert json.load(response)["tenant_id"] == "acme"
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert (data_dir / "memlane.db").is_file()  # MEMLANE_DB from the image's ENV was used


def test_extras_install_what_they_name(venv: Path, dists: Dists, tmp_path: Path) -> None:
    with (ROOT / "pyproject.toml").open("rb") as fh:
        extras = tomllib.load(fh)["project"]["optional-dependencies"]
    assert set(extras) == set(EXTRA_MODULES) | UMBRELLA_EXTRAS
    _pip(
        venv,
        "install",
        "-c",
        str(CONSTRAINTS),
        f"{dists.wheel}[{','.join(sorted(EXTRA_MODULES))}]",
        cwd=tmp_path,
    )
    modules = sorted({m for names in EXTRA_MODULES.values() for m in names})
    _run([str(venv / "bin" / "python"), "-c", "import " + ", ".join(modules)], cwd=tmp_path)
    for command in ("serve", "mcp"):
        assert "Usage:" in _run([str(venv / "bin" / "memlane"), command, "--help"], cwd=tmp_path)
