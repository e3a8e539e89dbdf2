"""The ranking refactor of #19 moved no hit: every recall of a fixed store returns what it did before.

``ranking_golden.json`` was recorded by :func:`tests.unit.ranking_golden.golden_runs` on the code
before the ranking profile existed (commit 9cb98c9); the same function runs here on today's code.
Hits must come in the same order with the same scores (to 1e-12). Regenerated on purpose since:
session search joined the one recall pipeline and so the time-window boost (#19), which moved the
hits of the one session query that names a time ("what happened in May"); and issue #20 moved the
``preset_conversation`` and ``preset_cold_start`` cases (those presets now reach as far as
relevance) and added ``preset_agent_context`` and ``preset_seed``. Every other case is the
recording of 9cb98c9.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.unit.ranking_golden import golden_runs

GOLDEN = Path(__file__).with_name("ranking_golden.json")


def _approx(rows: list[list[Any]]) -> list[list[Any]]:
    return [[v if isinstance(v, str | int) else pytest.approx(v, abs=1e-12) for v in row] for row in rows]


def test_every_recall_of_the_fixed_store_returns_the_recorded_hits(tmp_path: Path) -> None:
    expected = json.loads(GOLDEN.read_text("utf-8"))
    actual = golden_runs(tmp_path)
    assert sorted(actual) == sorted(expected)
    for case, queries in expected.items():
        assert sorted(actual[case]) == sorted(queries), case
        for query, hits in queries.items():
            assert actual[case][query] == _approx(hits), (case, query)
