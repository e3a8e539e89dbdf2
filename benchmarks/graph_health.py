"""Graph health on a LoCoMo import through the offline extractor (issue #21's health target).

Each LoCoMo conversation of the tune split (0-4 by default; 5-9 are held out and not used) is
remembered turn by turn (the turn text, tagged with its
speaker, like ``memlane eval``) with ``link_entities`` on, in its own tenant of one SQLite file,
one memlane session per LoCoMo session. The offline extractor links episodes to entities; it
writes no triples, so the triple gates (< 100 per session, < 5 % invalid) hold trivially and the
figures that matter are the entities found and the links per episode. Reported per conversation
with ``graph_stats()``.

Usage::

    .venv/bin/python benchmarks/graph_health.py [--conversations 0-4] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from _results import write_results

from memlane import EpisodeInput, EpisodicMemory, MemoryConfig, SQLiteStore
from memlane.embeddings.fake import HashingEmbedder
from memlane.evaluation.locomo import default_locomo_path, load_locomo

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "results" / "graph_health.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--conversations", default="0-4", help="A range of conversation positions (tune: 0-4)."
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--locomo", type=Path, default=None, help="locomo10.json (default: ../shared/...)")
    args = parser.parse_args()
    first, last = (int(x) for x in args.conversations.split("-"))
    if last > 4:
        raise SystemExit("conversations 5-9 are held out")
    path = args.locomo or default_locomo_path()
    if path is None:
        raise SystemExit("locomo10.json not found")
    conversations, _ = load_locomo(path)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteStore(str(Path(tmp) / "health.db"))
        for conv in conversations[first : last + 1]:
            base = EpisodicMemory(
                store,
                HashingEmbedder(),
                config=MemoryConfig(scope="tenant"),
                tenant_id=conv.sample_id,
                owns_store=False,
            )
            started = time.perf_counter()
            for session in sorted({t.session_index for t in conv.turns}):
                memory = base.with_context(session_id=f"session-{session}")
                memory.remember_episodes(
                    EpisodeInput("turn", t.text, tags=[t.speaker], created_at=t.created_at)
                    for t in conv.turns
                    if t.session_index == session
                )
            seconds = time.perf_counter() - started
            stats = base.graph_stats()
            turns = len(conv.turns)
            rows.append(
                {
                    "conversation": conv.sample_id,
                    "sessions": len({t.session_index for t in conv.turns}),
                    "episodes": turns,
                    "entities": stats.entities,
                    "episode_links": stats.episode_links,
                    "links_per_episode": round(stats.episode_links / turns, 2),
                    "triples": stats.facts,
                    "invalid_share": stats.invalid_share,
                    "problems": list(stats.problems),
                    "ingest_seconds": round(seconds, 2),
                }
            )
        store.close()
    md = [
        "# Knowledge graph health on LoCoMo (offline extractor)",
        "",
        "`benchmarks/graph_health.py`: LoCoMo conversations "
        f"{args.conversations} (the tune split), one tenant each, one session per LoCoMo session, "
        "`link_entities` on, the hashing embedder. The offline extractor links episodes to entities and "
        "writes no triples.",
        "",
        "| conversation | sessions | episodes | entities | links | links / episode | triples | problems |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        md.append(
            f"| {r['conversation']} | {r['sessions']} | {r['episodes']} | {r['entities']} | "
            f"{r['episode_links']} | {r['links_per_episode']} | {r['triples']} | "
            f"{'; '.join(r['problems']) or '-'} |"
        )
    write_results(args.out, {"conversations": rows}, "\n".join(md) + "\n")
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
