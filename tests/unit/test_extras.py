"""``pip install 'memlane[all]'`` installs every optional part (the other extras, by name)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def test_the_all_extra_names_every_other_extra() -> None:
    extras = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    (requirement,) = extras["all"]
    found = re.fullmatch(r"memlane\[([a-z,]+)\]", requirement)
    assert found is not None, requirement
    assert sorted(found.group(1).split(",")) == sorted(name for name in extras if name != "all")
