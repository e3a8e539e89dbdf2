"""Stored insertion-order neighbours of candidate rows, for the SQLite store (:meth:`Store.neighbours`).

Per (tenant, session) of the candidates, one of two plans, with the same answer:

* **dense** (the first and last candidate are at most :data:`RANGE_ROWS_PER_KEY` rows a candidate
  apart, plus :data:`RANGE_ROWS_EXTRA`, e.g. a conversation of a few hundred turns): read the
  session's row keys between them in one index range scan of ``ix_episodes_session_seq``, plus
  ``radius`` keys on each side, and find each candidate's neighbours by position;
* **sparse** (e.g. 400 candidates spread over 100k turns): ``2 * radius`` correlated index probes
  per candidate.

Either way the cost grows with the number of candidates, never with the size of their sessions.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

import numpy as np

from memlane.stores.base import Neighbours

__all__ = ["RANGE_ROWS_EXTRA", "RANGE_ROWS_PER_KEY", "stored_neighbours"]

RANGE_ROWS_PER_KEY = 8
"""The dense plan reads at most this many rows of the key range per candidate (plus the extra)."""

RANGE_ROWS_EXTRA = 256

_SAME = "e.tenant_id = c.tenant_id AND e.session_id = c.session_id"


def _probes(radius: int) -> str:
    head = f"(SELECT e.seq FROM episodes e WHERE {_SAME} AND e.seq "
    before = [f"{head}< c.seq ORDER BY e.seq DESC LIMIT 1 OFFSET {k - 1})" for k in range(radius, 0, -1)]
    after = [f"{head}> c.seq ORDER BY e.seq LIMIT 1 OFFSET {k - 1})" for k in range(1, radius + 1)]
    return ", ".join(before + after)


def _by_range(
    conn: sqlite3.Connection, tenant: str, session: str, keys: list[int], radius: int
) -> dict[int, list[int]] | None:
    """The dense plan for one session's sorted candidate ``keys``; ``None`` when the range is too wide."""
    lo, hi = keys[0], keys[-1]
    cap = RANGE_ROWS_PER_KEY * len(keys) + RANGE_ROWS_EXTRA
    if hi - lo + 1 > cap:  # row keys are unique integers: the range holds at most hi - lo + 1 rows
        return None
    scope = "FROM episodes WHERE tenant_id = ? AND session_id = ? AND seq "
    inside = [
        r[0]
        for r in conn.execute(
            "SELECT seq " + scope + "BETWEEN ? AND ? ORDER BY seq", (tenant, session, lo, hi)
        )
    ]
    before = [
        r[0]
        for r in conn.execute(
            "SELECT seq " + scope + "< ? ORDER BY seq DESC LIMIT ?", (tenant, session, lo, radius)
        )
    ]
    after = [
        r[0]
        for r in conn.execute(
            "SELECT seq " + scope + "> ? ORDER BY seq LIMIT ?", (tenant, session, hi, radius)
        )
    ]
    ordered = np.asarray(before[::-1] + inside + after, dtype=np.int64)
    at = np.searchsorted(ordered, np.asarray(keys, dtype=np.int64))
    out: dict[int, list[int]] = {}
    for key, pos in zip(keys, at.tolist(), strict=True):
        near = [pos + k for k in range(-radius, 0)] + [pos + k for k in range(1, radius + 1)]
        out[key] = [int(ordered[p]) if 0 <= p < len(ordered) else -1 for p in near]
    return out


def stored_neighbours(conn: sqlite3.Connection, keys: Sequence[int], radius: int) -> Neighbours:
    """Session, tags and the ``radius`` stored neighbours on each side of each key (module docstring).

    Args:
        conn: An open connection to a migrated memlane database.
        keys: Row keys (unknown ones are left out of the result).
        radius: Neighbours on each side, >= 1.

    Returns:
        One row per found key, in key order.

    Raises:
        sqlite3.Error: the database failed (the store translates it).
    """
    if len(keys) == 0:
        return Neighbours.from_rows([], radius)
    wanted = json.dumps(sorted({int(k) for k in keys}))
    rows = conn.execute(
        "SELECT seq, tenant_id, session_id, tags FROM episodes "
        "WHERE seq IN (SELECT value FROM json_each(?)) ORDER BY seq",
        [wanted],
    ).fetchall()
    groups: dict[tuple[str, str], list[int]] = {}
    for seq, tenant, session, _ in rows:
        groups.setdefault((tenant, session), []).append(int(seq))
    adjacent: dict[int, list[int]] = {}
    sparse: list[int] = []
    for (tenant, session), members in groups.items():
        found = _by_range(conn, tenant, session, members, radius)
        if found is None:
            sparse.extend(members)
        else:
            adjacent.update(found)
    if sparse:
        sql = (
            f"SELECT c.seq, {_probes(radius)} FROM episodes c WHERE c.seq IN (SELECT value FROM json_each(?))"
        )
        for r in conn.execute(sql, [json.dumps(sparse)]):
            adjacent[int(r[0])] = [-1 if v is None else int(v) for v in r[1:]]
    parsed: dict[str, tuple[str, ...]] = {}  # few distinct tag lists: parse each once
    out: list[tuple[Any, ...]] = []
    for seq, _, session, tags in rows:
        if tags not in parsed:
            parsed[tags] = tuple(json.loads(tags))
        out.append((seq, session, parsed[tags], *adjacent[int(seq)]))
    return Neighbours.from_rows(out, radius)
