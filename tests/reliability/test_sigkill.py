"""SIGKILL during ingest loses no acknowledged write and leaves no corrupt database.

A subprocess remembers episodes as fast as it can and prints ``ack <id>`` after each call
returns; it is killed with SIGKILL at a random point (after 1-150 acknowledgements), several
times over the same database. Afterwards every acknowledged id must be readable, nothing
is duplicated, the store still recalls, and on SQLite ``PRAGMA integrity_check`` is ``ok``.
The seed is in the test id, so a failure can be replayed.
"""

from __future__ import annotations

import random
import signal
import sqlite3
import threading
from pathlib import Path

import pytest

from memlane import EpisodicMemory, MemoryConfig
from memlane.embeddings.fake import HashingEmbedder
from memlane.stores.base import EpisodeFilter
from tests.backends import BackendDB, open_store, postgres_db, sqlite_db
from tests.reliability.conftest import worker
from tests.reliability.workers import TENANT

SEED = 1313
KILLS = {"sqlite": 8, "postgres": 5}
ACK_TIMEOUT_S = 120.0


def _ingest_until_killed(db: BackendDB, prefix: str, kill_after: int) -> list[str]:
    """Run the ingest worker, SIGKILL it after ``kill_after`` acks; return every acknowledged id."""
    process = worker("ingest", db.kind, db.location, prefix)
    acked: list[str] = []
    enough = threading.Event()

    def read() -> None:
        assert process.stdout is not None
        for raw in process.stdout:  # a line cut by the kill has no newline: not acknowledged
            if raw.endswith(b"\n") and raw.startswith(b"ack "):
                acked.append(raw[4:].strip().decode())
                if len(acked) >= kill_after:
                    enough.set()
        enough.set()  # EOF: the worker died on its own

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert enough.wait(ACK_TIMEOUT_S), "the ingest worker acknowledged nothing in time"
    process.send_signal(signal.SIGKILL)
    process.wait(30)
    reader.join(30)
    stderr = process.stderr.read().decode() if process.stderr else ""
    assert process.returncode == -signal.SIGKILL, f"worker exited {process.returncode}: {stderr[-2000:]}"
    return list(acked)


def _run(db: BackendDB, kills: int, rng: random.Random) -> None:
    db.open().close()  # the schema exists before the first kill, as in a deployment
    acknowledged: list[str] = []
    for k in range(kills):
        acknowledged += _ingest_until_killed(db, f"run{k}", rng.randint(1, 150))
    store = open_store(db.kind, db.location)
    memory = EpisodicMemory(store, HashingEmbedder(), tenant_id=TENANT, config=MemoryConfig(scope="tenant"))
    try:
        missing = [i for i in acknowledged if store.get(i) is None]
        assert not missing, f"{len(missing)} of {len(acknowledged)} acknowledged ids lost, e.g. {missing[:3]}"
        ids = [ep.id for ep in memory.iter_episodes()]
        assert len(ids) == len(set(ids))  # nothing duplicated
        assert len(ids) >= len(acknowledged)  # at most a few unacknowledged commits on top
        assert store.stats(EpisodeFilter()).episodes == len(ids)
        assert memory.recall_episodes("single batch item", limit=5)  # index and search still work
        memory.remember_episode("note", "after the kills")
    finally:
        memory.close()


@pytest.mark.parametrize("seed", [SEED])
def test_sigkill_during_ingest_sqlite(tmp_path: Path, seed: int) -> None:
    db = sqlite_db(tmp_path)
    _run(db, KILLS["sqlite"], random.Random(seed))
    with sqlite3.connect(db.location) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []


@pytest.mark.parametrize("seed", [SEED])
def test_sigkill_during_ingest_postgres(pg_url: str, pg_schema: str, seed: int) -> None:
    _run(postgres_db(pg_url, pg_schema), KILLS["postgres"], random.Random(seed))
