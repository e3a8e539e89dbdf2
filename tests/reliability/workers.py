"""Subprocess workers for the reliability tests (run as ``python -m tests.reliability.workers ...``).

* ``ingest KIND LOCATION PREFIX``: remember episodes forever (single calls, and every fifth
  round a batch of three), printing ``ack <id>`` after each call returns — an acknowledged
  write. The SIGKILL test kills it at random points.
* ``write KIND LOCATION WORKER COUNT``: remember ``COUNT`` episodes ``w<WORKER>-<i>``, then exit.
* ``read KIND LOCATION STOPFILE``: recall in a loop until ``STOPFILE`` exists, checking each
  answer (no duplicate ids, only well-formed contents, counts never shrinking); prints a
  JSON summary, or exits 1 with the problem.

The store is opened with :func:`tests.backends.open_store`, the embedder is the hashing one.
"""

from __future__ import annotations

import json
import os
import re
import sys

from memlane import EpisodeInput, EpisodicMemory, MemoryConfig
from memlane.embeddings.fake import HashingEmbedder
from tests.backends import open_store

TENANT = "reliability"
CONTENT = re.compile(r"^w(\d+)-(\d+) note about deploys and rollbacks$")


def _memory(kind: str, location: str, session: str) -> EpisodicMemory:
    return EpisodicMemory(
        open_store(kind, location),
        HashingEmbedder(),
        tenant_id=TENANT,
        session_id=session,
        config=MemoryConfig(scope="tenant"),
    )


def ingest(kind: str, location: str, prefix: str) -> None:
    memory = _memory(kind, location, prefix)
    out = sys.stdout
    n = 0
    while True:
        if n % 5 == 4:
            items = [
                EpisodeInput("note", f"{prefix} batch item {n}-{k}", tags=[prefix], importance=k + 1)
                for k in range(3)
            ]
            ids = [ep.id for ep in memory.remember_episodes(items)]
        else:
            ids = [
                memory.remember_episode("note", f"{prefix} single {n}", tags=[prefix], metadata={"n": n}).id
            ]
        out.write("".join(f"ack {i}\n" for i in ids))
        out.flush()
        n += 1


def write(kind: str, location: str, worker: int, count: int) -> None:
    memory = _memory(kind, location, f"w{worker}")
    for i in range(count):
        memory.remember_episode(
            "note", f"w{worker}-{i} note about deploys and rollbacks", tags=[f"w{worker}"]
        )
    memory.close()


def read(kind: str, location: str, stopfile: str) -> None:
    memory = _memory(kind, location, "reader")
    reads, best = 0, 0
    while True:
        stop = os.path.exists(stopfile)  # one last full read after the writers finished
        listed = memory.recall_episodes(None, limit=10_000)
        ids = [h.episode.id for h in listed]
        if len(ids) != len(set(ids)):
            sys.exit(f"duplicate ids in one listing of {len(ids)}")
        if len(ids) < best:
            sys.exit(f"a listing shrank from {best} to {len(ids)}")
        best = len(ids)
        bad = [h.episode.content for h in listed if not CONTENT.match(h.episode.content)]
        if bad:
            sys.exit(f"malformed content read back: {bad[:3]!r}")
        ranked = memory.recall_episodes("deploys rollbacks", limit=50)
        if len({h.episode.id for h in ranked}) != len(ranked):
            sys.exit("duplicate ids in one ranked recall")
        reads += 1
        if stop:
            break
    print(json.dumps({"reads": reads, "last_count": best}))
    memory.close()


def main(argv: list[str]) -> None:
    command, kind, location, *rest = argv
    if command == "ingest":
        ingest(kind, location, rest[0])
    elif command == "write":
        write(kind, location, int(rest[0]), int(rest[1]))
    elif command == "read":
        read(kind, location, rest[0])
    else:
        sys.exit(f"unknown command {command!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
