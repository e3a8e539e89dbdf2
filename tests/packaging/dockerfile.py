"""A small reader of the repository's Dockerfile and .dockerignore, for the tests that run their commands.

It understands what the Dockerfile uses: one instruction per logical line (``\\`` continues a
line), ``#`` comments, exec-form (JSON array) ``CMD``/``HEALTHCHECK CMD``, and ``KEY=value`` ``ENV``.
"""

from __future__ import annotations

import fnmatch
import json
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"


@dataclass(frozen=True)
class Instruction:
    """One Dockerfile instruction: ``keyword`` upper-cased, ``args`` the rest of the logical line."""

    keyword: str
    args: str


def instructions(path: Path = DOCKERFILE) -> list[Instruction]:
    """The instructions of ``path`` in order, continuation lines joined."""
    found: list[Instruction] = []
    pending = ""
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1].strip() + " "
            continue
        logical = (pending + line).strip()
        pending = ""
        keyword, _, args = logical.partition(" ")
        found.append(Instruction(keyword.upper(), args.strip()))
    assert not pending, "the Dockerfile ends inside a continued line"
    return found


def only(keyword: str, path: Path = DOCKERFILE) -> list[Instruction]:
    """The instructions with this keyword."""
    return [i for i in instructions(path) if i.keyword == keyword]


def exec_form(args: str) -> list[str]:
    """Decode an exec-form argument list (a JSON array of strings)."""
    argv = json.loads(args)
    assert isinstance(argv, list) and all(isinstance(a, str) for a in argv), args
    return argv


def healthcheck_command(path: Path = DOCKERFILE) -> list[str]:
    """The argv of the single ``HEALTHCHECK ... CMD [...]``."""
    (check,) = only("HEALTHCHECK", path)
    _, _, command = check.args.partition("CMD ")
    return exec_form(command.strip())


def env(path: Path = DOCKERFILE) -> dict[str, str]:
    """Every ``ENV KEY=value`` of the file."""
    values: dict[str, str] = {}
    for item in only("ENV", path):
        for word in shlex.split(item.args):
            key, sep, value = word.partition("=")
            assert sep, f"ENV {item.args!r}: use the KEY=value form"
            values[key] = value
    return values


def copy_sources(path: Path = DOCKERFILE) -> list[str]:
    """The source paths of every ``COPY`` (all words but the destination)."""
    sources: list[str] = []
    for item in only("COPY", path):
        words = [w for w in shlex.split(item.args) if not w.startswith("--")]
        sources += words[:-1]
    return sources


def ignored(relative: str, path: Path = DOCKERIGNORE) -> bool:
    """Whether .dockerignore keeps ``relative`` (a repository path) out of the build context.

    Docker's rule: patterns are matched in order and the last match wins; ``!`` re-includes.
    A path is also ignored when one of its parent folders is (and no later ``!`` rule names it).
    """
    patterns = [
        line.strip()
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]
    parts = relative.strip("/").split("/")
    candidates = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    result = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        body = pattern.lstrip("!").strip("/")
        for candidate in candidates:
            if fnmatch.fnmatchcase(candidate, body) or fnmatch.fnmatchcase(
                candidate, body.removeprefix("**/")
            ):
                result = not negate
                break
    return result
