"""Every published schema is the one the requests generated before they were split one room a
module (issue #24 item 7): ``schemas_golden.json`` was recorded by
:func:`tests.unit.schemas_golden.digests` on the main branch before that change.

A failure names the schemas that changed; if the change is meant, regenerate the file (see
:mod:`tests.unit.schemas_golden`) and say so in the CHANGELOG.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the 'server' extra is not installed")
pytest.importorskip("mcp", reason="the 'mcp' extra is not installed")

from tests.unit.schemas_golden import digests

GOLDEN = Path(__file__).with_name("schemas_golden.json")


def test_every_generated_schema_is_byte_identical_to_the_recorded_one() -> None:
    expected = json.loads(GOLDEN.read_text(encoding="utf-8"))
    actual = digests()
    assert list(actual) == list(expected), "the set (or order) of published schemas changed"
    changed = sorted(name for name in expected if actual[name] != expected[name])
    assert not changed, f"schemas changed: {changed}"
