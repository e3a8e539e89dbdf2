"""The PostgreSQL store's two neighbour plans (a window over a session's range, per-key probes) agree.

Both equal the neighbours computed from the stored rows: the ``radius`` rows before and after each
key in its (tenant, session), by ``seq``; ``-1`` where there is none (see ``Store.neighbours``).
"""

from __future__ import annotations

import random

import psycopg
import pytest
from psycopg import sql

from memlane import EpisodeInput, EpisodicMemory
from memlane.embeddings.fake import HashingEmbedder
from memlane.stores.base import EpisodeFilter
from memlane.stores.postgres import PostgresStore
from memlane.stores.postgres import neighbours as plans


def _expected(rows: list[tuple[int, str, str]], keys: list[int], radius: int) -> list[tuple[int, list[int]]]:
    by_session: dict[tuple[str, str], list[int]] = {}
    for seq, tenant, session in sorted(rows):
        by_session.setdefault((tenant, session), []).append(seq)
    where = {seq: (tenant, session) for seq, tenant, session in rows}
    found = []
    for key in sorted(k for k in set(keys) if k in where):
        seqs = by_session[where[key]]
        at = seqs.index(key)
        before = [seqs[at - k] if at - k >= 0 else -1 for k in range(radius, 0, -1)]
        after = [seqs[at + k] if at + k < len(seqs) else -1 for k in range(1, radius + 1)]
        found.append((key, before + after))
    return found


def _answer(store: PostgresStore, keys: list[int], radius: int) -> list[tuple[int, list[int]]]:
    found = store.neighbours(EpisodeFilter(), keys, radius)
    return [(int(k), [int(a) for a in adj]) for k, adj in zip(found.keys, found.adjacent, strict=True)]


def test_window_plan_and_probe_plan_agree(
    pg_url: str, pg_schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = PostgresStore(pg_url, schema=pg_schema)
    rng = random.Random(5)
    memories = {
        (t, s): EpisodicMemory(store, HashingEmbedder(), tenant_id=t, session_id=s, owns_store=False)
        for t in ("t1", "t2")
        for s in ("a", "b")
    }
    scopes = list(memories)
    for i in range(400):  # sessions interleaved, so a session's keys are not contiguous
        memories[rng.choice(scopes)].remember_episodes([EpisodeInput("turn", f"turn {i}")])
    with psycopg.connect(pg_url, autocommit=True) as conn:
        table = sql.SQL("SELECT seq, tenant_id, session_id FROM {}.memlane_episodes").format(
            sql.Identifier(pg_schema)
        )
        rows = [(int(seq), str(t), str(s)) for seq, t, s in conn.execute(table).fetchall()]
    keys = sorted(r[0] for r in rows)
    for sample in (keys[:3], rng.sample(keys, 30), rng.sample(keys, 250), keys, [*keys[:5], 10**12]):
        for radius in (1, 2, 3):
            expected = _expected(rows, sample, radius)
            assert _answer(store, sample, radius) == expected  # the window, mostly
            monkeypatch.setattr(plans, "RANGE_PER_KEY", 0)  # probes only
            assert _answer(store, sample, radius) == expected
            monkeypatch.undo()
    store.close()
