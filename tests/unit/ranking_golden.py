"""A fixed store and a fixed list of recalls whose hits pin the ranking (``test_ranking_golden.py``).

The store is a real SQLite file with the deterministic :class:`~memlane.embeddings.fake.HashingEmbedder`
and a frozen clock; the episodes are the bundled demo set plus two conversations of closely spaced
turns (so the session-context signals, the entity boost and the time-window boost all take part).
:func:`golden_runs` uses only the public API, so the same function recorded the expected hits on the
code before a ranking refactor (``ranking_golden.json``) and checks them after it.

Regenerate (only when a change is *meant* to move hits)::

    python -m tests.unit.ranking_golden > tests/unit/ranking_golden.json
"""

from __future__ import annotations

import json
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import Any

from memlane import EpisodicMemory, FrozenClock, MemoryConfig
from memlane.embeddings.fake import HashingEmbedder

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)

CONVERSATIONS: dict[str, list[tuple[str, int | None, tuple[str, ...]]]] = {
    "trip": [
        ("Alice: we should book the hotel in Lisbon for the conference", 6, ("alice",)),
        ("Bob: the conference is the second week of May", None, ("bob",)),
        ("Alice: I found a hotel near the river, 120 euros a night", None, ("alice",)),
        ("Bob: good, and the payment went through on my card", 7, ("bob",)),
        ("Alice: the airline refund for the cancelled flight failed again", 8, ("alice",)),
        ("Bob: call the airline tomorrow about the refund", None, ("bob",)),
    ],
    "garden": [
        ("Carol: the tomatoes need watering twice a day in May", 4, ("carol",)),
        ("Dan: I planted basil next to the tomatoes", None, ("dan",)),
        ("Carol: the payment for the seeds failed, the shop refunded it", 5, ("carol",)),
        ("Dan: let us buy a hose for the garden", None, ("dan",)),
    ],
}

QUERIES = (
    "did any payment fail?",
    "window seat on flights",
    "what did Alice say about the hotel",
    "refund for the cancelled flight",
    "what happened in May",
    "tomatoes basil garden",
    "vegetarian meal",
    "beagle puppy",
    "the",
)

CASES: tuple[tuple[str, dict[str, Any], dict[str, Any]], ...] = (
    ("default", {}, {}),
    ("noisy_or", {"fusion": "noisy_or"}, {}),
    ("rrf", {"fusion": "rrf"}, {}),
    ("dense", {"retrieval": "dense"}, {}),
    ("keyword", {"retrieval": "keyword"}, {}),
    ("forgetting", {"forgetting": True}, {}),
    ("no_temporal", {"temporal": False}, {}),
    ("decay", {"decay_per_day": 0.9}, {}),
    ("min_relevance", {}, {"min_relevance": 0.3}),
    ("limit_2", {}, {"limit": 2}),
    *((f"preset_{p}", {}, {"weights": p}) for p in ("specific_question", "conversation", "cold_start")),
    *((f"preset_{p}", {}, {"weights": p}) for p in ("agent_context", "seed")),  # added in #20
    ("weights_map", {}, {"weights": {"relevance": 0.2, "recency": 1.0, "importance": 2.0}}),
)


def _seed(memory: EpisodicMemory) -> None:
    lines = resources.files("memlane").joinpath("data/demo_episodes.jsonl").read_text("utf-8").splitlines()
    for line in lines:
        row = json.loads(line)
        memory.remember_episode(
            row["event_type"],
            row["content"],
            row["tags"],
            row["importance"],
            created_at=datetime.fromisoformat(row["created_at"]),
            metadata=row["metadata"],
        )
    for offset, (session, turns) in enumerate(CONVERSATIONS.items()):
        chat = memory.with_context(session_id=session)
        start = NOW - timedelta(days=20 + 15 * offset)
        for i, (content, importance, tags) in enumerate(turns):
            chat.remember_episode(
                "turn", content, tags, importance, created_at=start + timedelta(minutes=5 * i)
            )


def _hit(hit: Any) -> list[Any]:
    b = hit.breakdown
    return [hit.episode.content[:40], b.score, b.relevance, b.recency, b.importance]


def golden_runs(workdir: Path) -> dict[str, Any]:
    """``{case: {query: [[content[:40], score, relevance, recency, importance], ...]}, "sessions": ...}``."""
    clock = FrozenClock(NOW)
    base = EpisodicMemory.open(
        str(workdir / "golden.db"), embedder=HashingEmbedder(), clock=clock, tenant_id="t", session_id="main"
    )
    _seed(base)
    out: dict[str, Any] = {}
    for name, config, kwargs in CASES:
        memory = base.with_context(config=MemoryConfig(scope="tenant", track_retrievals=False, **config))
        kw = {"limit": 6, **kwargs}
        out[name] = {q: [_hit(h) for h in memory.recall_episodes(q, **kw)] for q in QUERIES}
    out["sessions"] = _sessions(base)
    base.close()
    return out


def _sessions(memory: EpisodicMemory) -> dict[str, Any]:
    sessions = memory.sessions
    for offset, (session, turns) in enumerate(CONVERSATIONS.items()):
        messages = [
            {"role": "user" if i % 2 == 0 else "assistant", "content": content}
            for i, (content, _, _) in enumerate(turns)
        ]
        start = NOW - timedelta(days=20 + 15 * offset)
        sessions.store_session(session, messages, agent_id="a", user_id="u", started_at=start)
    out: dict[str, Any] = {}
    for q in QUERIES:
        snippets = sessions.search_sessions("a", "u", q, top_k=3, min_relevance=0.0)  # the ranking, no floor
        out[q] = [
            [s.session_id, s.match_start, s.breakdown.score, s.breakdown.relevance, s.breakdown.recency]
            for s in snippets
        ]
    return out


def dump(runs: dict[str, Any]) -> str:
    """``runs`` as JSON with one hit per line."""
    lines = ["{"]
    for ci, (case, queries) in enumerate(runs.items()):
        lines.append(f" {json.dumps(case)}: {{")
        for qi, (query, rows) in enumerate(queries.items()):
            lines.append(f"  {json.dumps(query)}: [")
            lines += [
                f"   {json.dumps(row, ensure_ascii=False)}" + ("," if ri < len(rows) - 1 else "")
                for ri, row in enumerate(rows)
            ]
            lines.append("  ]" + ("," if qi < len(queries) - 1 else ""))
        lines.append(" }" + ("," if ci < len(runs) - 1 else ""))
    return "\n".join([*lines, "}"]) + "\n"


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        sys.stdout.write(dump(golden_runs(Path(tmp))))
