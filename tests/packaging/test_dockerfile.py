"""The Dockerfile's commands are the ones memlane accepts (no image is built here: no registry).

Fast checks of the recipe against the code; ``test_wheel.py`` also runs its ``pip install`` line,
its ``CMD`` and its ``HEALTHCHECK`` in a fresh virtual environment.
"""

from __future__ import annotations

import json
import shlex
import tomllib
from pathlib import Path

from click.testing import CliRunner
from fastapi.testclient import TestClient

from memlane import EpisodicMemory
from memlane.cli import cli
from memlane.config.api_keys import hash_api_key
from memlane.config.file import load_config
from memlane.embeddings.fake import HashingEmbedder
from memlane.server.http import create_app
from tests.packaging.dockerfile import (
    ROOT,
    copy_sources,
    env,
    exec_form,
    healthcheck_command,
    ignored,
    instructions,
    only,
)

CONFIG_PATH = "/etc/memlane/memlane.yaml"


def _pyproject() -> dict[str, object]:
    with (ROOT / "pyproject.toml").open("rb") as fh:
        return tomllib.load(fh)


def _pip_install_line() -> list[str]:
    (line,) = [shlex.split(i.args) for i in only("RUN") if "pip install" in i.args]
    return line


def _cmd() -> list[str]:
    (cmd,) = only("CMD")
    return exec_form(cmd.args)


def _config(tmp_path: Path) -> Path:
    path = tmp_path / "memlane.yaml"
    path.write_text(f'server:\n  api_keys:\n    "{hash_api_key("mlk_test")}": acme\n', encoding="utf-8")
    return path


def test_base_image_user_and_port() -> None:
    keywords = [i.keyword for i in instructions()]
    assert [i.args for i in only("FROM")] == ["python:3.11-slim"]
    (user,) = only("USER")
    assert user.args not in ("root", "0")
    assert any("useradd" in i.args and user.args in i.args for i in only("RUN"))
    assert keywords.index("USER") < keywords.index("CMD")  # the server never runs as root
    assert [i.args for i in only("EXPOSE")] == ["8080"]
    cmd = _cmd()
    assert cmd[cmd.index("--port") + 1] == "8080"
    assert any("127.0.0.1:8080/health" in word for word in healthcheck_command())


def test_copied_files_exist_and_are_in_the_build_context() -> None:
    sources = copy_sources()
    assert {"pyproject.toml", "README.md", "LICENSE", "constraints.txt", "src"} <= set(sources)
    for source in sources:
        assert (ROOT / source).exists(), source
        assert not ignored(source), source
    # hatchling reads these while installing '.': all must be copied
    project = _pyproject()["project"]
    assert isinstance(project, dict)
    assert project["readme"] in sources and "LICENSE" in project["license-files"]
    # what the image does not need stays out of the context
    for path in (
        "tests/cli/test_demo.py",
        "benchmarks/scale.py",
        "memlane.db",
        ".venv/bin/python",
        ".git/HEAD",
    ):
        assert ignored(path), path
    assert ignored("src/memlane/__pycache__/memory.cpython-311.pyc")


def test_pip_install_names_real_extras_and_the_copied_constraints() -> None:
    line = _pip_install_line()
    assert line[:2] == ["pip", "install"]
    (target,) = [w for w in line[2:] if w.startswith(".")]
    extras = set(target.removeprefix(".[").removesuffix("]").split(","))
    optional = _pyproject()["project"]["optional-dependencies"]  # type: ignore[index]
    assert extras == {"server", "postgres"} and extras <= set(optional)
    constraints = line[line.index("-c") + 1]
    assert constraints in copy_sources()


def test_cmd_is_memlane_serve_with_options_it_accepts(tmp_path: Path) -> None:
    cmd = _cmd()
    assert cmd[0] == "memlane" and "memlane" in _pyproject()["project"]["scripts"]  # type: ignore[index]
    assert cmd[1:3] == ["--config", CONFIG_PATH] and "serve" in cmd
    args = [str(_config(tmp_path)) if word == CONFIG_PATH else word for word in cmd[1:]]
    result = CliRunner().invoke(cli, [*args, "--help"])  # parses every option first, then shows help
    assert result.exit_code == 0, result.output
    assert "--host" in result.stdout and "--port" in result.stdout


def test_the_config_and_database_locations_are_usable(tmp_path: Path) -> None:
    """The config file path option exists; without a memory: section MEMLANE_DB names the database."""
    values = env()
    assert values["MEMLANE_DB"].startswith("/var/lib/memlane/")
    assert any(i.args == '["/var/lib/memlane"]' for i in only("VOLUME"))
    config = _config(tmp_path)
    result = CliRunner(env={"MEMLANE_DB": str(tmp_path / "data.db")}).invoke(
        cli, ["--config", str(config), "--json", "stats"]
    )
    assert result.exit_code == 2  # read-only command on a database not created yet
    assert str(tmp_path / "data.db") in json.loads(result.stderr)["error"]


def test_healthcheck_path_is_served_without_a_key(tmp_path: Path) -> None:
    settings = load_config(_config(tmp_path))
    app = create_app(
        lambda: EpisodicMemory.open(tmp_path / "m.db", embedder=HashingEmbedder()), settings.server
    )
    with TestClient(app) as client:
        response = client.get("/health")
    assert response.status_code == 200
    assert response.json()["status"] == "ok"
