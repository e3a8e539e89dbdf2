"""The PostgreSQL store's three neighbour paths give one answer: postings, the statement, probes only.

The in-memory postings (``keyword_index=True``, the default), the neighbour statement (adjacent rows,
probes where a run breaks; ``keyword_index=False``) and the probes-only statement all equal the
neighbours computed from the stored rows: the ``radius`` rows before and after each key in its
(tenant, session), by ``seq``; ``-1`` where there is none (see ``Store.neighbours``). The postings
and the statement also give the same sessions and tags.
"""

from __future__ import annotations

import random

import psycopg
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


def _labels(store: PostgresStore, keys: list[int]) -> list[tuple[int, str, tuple[str, ...]]]:
    """Each found key's session and tags."""
    found = store.neighbours(EpisodeFilter(), keys)
    return list(zip(found.keys.tolist(), found.session_ids, found.tags, strict=True))


def _probes_only(pg_url: str, schema: str, keys: list[int], radius: int) -> list[tuple[int, list[int]]]:
    statement = plans.neighbours_statement(
        sql.SQL("{}.memlane_episodes").format(sql.Identifier(schema)), radius, adjacent=False
    )
    with psycopg.connect(pg_url, autocommit=True) as conn:
        rows = conn.execute(statement, {"keys": keys}).fetchall()
    return [(int(r[0]), [-1 if k is None else int(k) for k in r[3:]]) for r in rows]


def _stored(pg_url: str, schema: str) -> list[tuple[int, str, str]]:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        table = sql.SQL("SELECT seq, tenant_id, session_id FROM {}.memlane_episodes").format(
            sql.Identifier(schema)
        )
        return [(int(seq), str(t), str(s)) for seq, t, s in conn.execute(table).fetchall()]


def test_postings_adjacent_rows_and_probes_agree(pg_url: str, pg_schema: str) -> None:
    store = PostgresStore(pg_url, schema=pg_schema)
    statement = PostgresStore(pg_url, schema=pg_schema, keyword_index=False)
    rng = random.Random(5)
    memories = {
        (t, s): EpisodicMemory(statement, HashingEmbedder(), tenant_id=t, session_id=s, owns_store=False)
        for t in ("t1", "t2")
        for s in ("a", "b")
    }
    scopes = list(memories)
    assert _answer(store, [1, 2], 2) == []  # the postings are built (empty) before the writes
    for i in range(300):  # sessions interleaved, so a session's keys are mostly not contiguous
        tags = [["x"], [], ["x", "y"], ["naïve tag"]][i % 4]
        memories[rng.choice(scopes)].remember_episodes([EpisodeInput("turn", f"turn {i}", tags=tags)])
    runs = {  # and runs: whole batches of one session (the adjacent rows answer)
        scope: memories[scope].remember_episodes([EpisodeInput("turn", f"run {j}") for j in range(40)])
        for scope in scopes
    }
    for episode in runs[scopes[0]][3::7]:  # holes in a run: the probes answer around them
        assert memories[scopes[0]].delete_episode(episode.id)
    rows = _stored(pg_url, pg_schema)
    keys = sorted(r[0] for r in rows)
    for sample in (keys[:3], rng.sample(keys, 30), rng.sample(keys, 250), keys, [*keys[:5], 10**12]):
        for radius in (1, 2, 3):
            expected = _expected(rows, sample, radius)
            assert _answer(store, sample, radius) == expected
            assert _answer(statement, sample, radius) == expected
            assert _probes_only(pg_url, pg_schema, sample, radius) == expected
        assert _labels(store, sample) == _labels(statement, sample)
    assert len(_labels(store, keys)) == len(keys)
    store.close()
    statement.close()
