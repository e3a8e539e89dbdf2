"""Four writer processes (300 writes each) and two reader processes on one database.

Nothing is lost or duplicated: every write is there exactly once at the end, and no reader
ever sees a duplicate id, a malformed episode or a listing that shrinks (see
``tests/reliability/workers.py``).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from memlane import EpisodicMemory, MemoryConfig
from memlane.embeddings.fake import HashingEmbedder
from tests.backends import BackendDB
from tests.reliability.conftest import worker
from tests.reliability.workers import CONTENT, TENANT

WRITERS = 4
WRITES = 300
READERS = 2
TIMEOUT_S = 300


def test_writers_and_readers_lose_and_duplicate_nothing(backend_db: BackendDB, tmp_path: Path) -> None:
    backend_db.open().close()
    stop = tmp_path / "writers-done"
    readers = [worker("read", backend_db.kind, backend_db.location, str(stop)) for _ in range(READERS)]
    writers = [
        worker("write", backend_db.kind, backend_db.location, str(w), str(WRITES), stdout=subprocess.DEVNULL)
        for w in range(WRITERS)
    ]
    try:
        for process in writers:
            _, err = process.communicate(timeout=TIMEOUT_S)
            assert process.returncode == 0, err.decode()[-2000:]
    finally:
        stop.touch()
    summaries = []
    for process in readers:
        out, err = process.communicate(timeout=TIMEOUT_S)
        assert process.returncode == 0, err.decode()[-2000:]
        summaries.append(json.loads(out))
    total = WRITERS * WRITES
    assert [s["last_count"] for s in summaries] == [total] * READERS  # the last read saw everything
    assert all(s["reads"] >= 1 for s in summaries), summaries

    memory = EpisodicMemory(
        backend_db.open(), HashingEmbedder(), tenant_id=TENANT, config=MemoryConfig(scope="tenant")
    )
    try:
        contents = [ep.content for ep in memory.iter_episodes()]
        assert len(contents) == total  # nothing duplicated
        written = {
            f"w{w}-{i} note about deploys and rollbacks" for w in range(WRITERS) for i in range(WRITES)
        }
        assert set(contents) == written  # nothing lost
        assert all(CONTENT.match(c) for c in contents)
        for w in range(WRITERS):
            assert len(memory.recall_episodes(None, tags=[f"w{w}"], limit=1000)) == WRITES
    finally:
        memory.close()
