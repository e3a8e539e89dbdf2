"""Calibrate the context relevance floor: unrelated queries inject nothing, related ones keep evidence.

Issue #20 item 3. The floor (:data:`memlane.config.DEFAULT_CONTEXT_MIN_RELEVANCE`) drops every
candidate of the ``[Past Conversation Context]`` block, of ``search_sessions`` and of
``inject_context`` whose *own* match strength (:func:`memlane.sessions.context.match_strength`: the
hit's calibrated dense cosine, not a neighbour-lifted, recency- or importance-boosted score) is below
it. This script measures, per floor value, on the bundled model:

* **related queries keep their evidence**: every LoCoMo 0-4 and BEAM 1-10 question with evidence is
  asked with ``recall_episodes(question, limit=10)`` (library defaults, no floor); a question whose
  evidence is among the top ``k`` (k = 5, the block's default ``event_limit``, and 10) *keeps* it at a
  floor when at least one of those evidence hits has a match strength >= the floor. Reported: the share
  of such questions that keep it, and R@10 of ``recall_episodes`` with the floor applied to its hits
  (for the decision whether ``recall_episodes`` itself should get the floor by default);
* **unrelated queries inject nothing**: BEAM's ``abstention`` questions against their own conversation
  (topically close, the answer is not there), the questions of one benchmark against the memories of the
  other (every 5th question, each against every memory of the other benchmark) and :data:`OFF_TOPIC`
  (written for this script) against every memory; an unrelated query *injects nothing* at a floor when
  none of its top 5 hits reaches it.

For comparison the same tables are computed for two other signals a floor could use: ``own_relevance``
(the fused dense+keyword relevance without the neighbours' lift) and ``max(dense, keyword)``.

The recommended floor is the largest candidate value at which at least :data:`KEEP_TARGET` of the
related questions keep their top-5 evidence on *both* benchmarks (the evidence first); the table shows
what it costs and buys. Data is read in place (LoCoMo 5-9 never: held out); nothing is fitted or shipped.

    python benchmarks/relevance_floor.py            # ~10 min on 2 cores; writes benchmarks/results/
    python benchmarks/relevance_floor.py --records /tmp/floor.json   # reuse (or save) the recorded hits

Re-run it after any change to the default ranking or to the dense calibration: it reads the library's
own ``match_strength`` and defaults, and prints the floor it recommends on its last line.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from memlane import EpisodicMemory, MemoryConfig
from memlane.config import DEFAULT_CONTEXT_MIN_RELEVANCE
from memlane.embeddings.local import LocalEmbedder
from memlane.evaluation.beam import _remember, load_beam
from memlane.evaluation.locomo import load_locomo
from memlane.evaluation.locomo_run import _turn_inputs, fresh_database
from memlane.models import RecallHit
from memlane.sessions.context import match_strength
from memlane.stores.sqlite import SQLiteStore

ROOT = Path(__file__).resolve().parent.parent
DATASETS = next(
    (
        p
        for p in (ROOT.parent / "shared" / "datasets", ROOT.parent.parent / "shared" / "datasets")
        if p.is_dir()
    ),
    ROOT.parent / "shared" / "datasets",
)
"""``../shared/datasets`` beside the repository (or beside the worktrees' folder)."""
BEAM = DATASETS / "beam" / "100K"
LOCOMO = DATASETS / "locomo" / "locomo10.json"
TUNE = range(5)  # LoCoMo conversations 0-4 only: 5-9 stay held out
FLOORS = (0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5)
KEEP_TARGET = 0.95
"""Share of related questions (per benchmark) that must keep their top-5 evidence at the chosen floor."""
BLOCK_K = 5
CROSS_EVERY = 5

OFF_TOPIC = (
    "quantum chromodynamics lecture",
    "What is the boiling point of liquid nitrogen?",
    "Explain the offside rule in ice hockey.",
    "recipe for sourdough starter with rye flour",
    "Who won the 1986 FIFA World Cup final?",
    "How do tectonic plates cause earthquakes?",
    "translate 'good morning' into Finnish",
    "best time of year to see the northern lights in Tromso",
    "What does the mitochondria do in a cell?",
    "rules of cricket for beginners",
    "How many moons does Neptune have?",
    "knitting pattern for a cable-knit scarf",
    "history of the Byzantine empire under Justinian",
    "What is the airspeed velocity of an unladen swallow?",
    "symptoms of a vitamin D deficiency in houseplants",
    "medieval siege engines trebuchet counterweight",
    "Which chess opening starts with e4 c5?",
    "how to descale an espresso machine",
    "the migration route of arctic terns",
    "tax rules for importing a vintage motorcycle into Norway",
)
"""Off-topic queries written for this script (about nothing either benchmark talks about)."""

Signal = Callable[[dict[str, Any]], float]


def _dense_or_own(hit: dict[str, Any]) -> float:
    return float(hit["match"])


SIGNALS: dict[str, Signal] = {
    "match_strength (the floor's signal)": _dense_or_own,
    "own_relevance": lambda h: float(h["own"]),
    "max(dense, keyword)": lambda h: max(h["dense"] or 0.0, h["keyword"] or 0.0),
}


def _hit(hit: RecallHit, id_field: str) -> dict[str, Any]:
    b = hit.breakdown
    assert b is not None
    return {
        "id": str(hit.episode.metadata[id_field]),
        "match": match_strength(b),
        "dense": b.dense,
        "keyword": b.keyword,
        "own": b.own_relevance,
    }


def _ask(memory: EpisodicMemory, question: str, now: datetime, id_field: str) -> list[dict[str, Any]]:
    return [_hit(h, id_field) for h in memory.recall_episodes(question, limit=10, now=now)]


def record(workdir: Path) -> dict[str, Any]:
    """Remember both benchmarks (defaults, no floor) and record the top-10 hits of every query."""
    embedder = LocalEmbedder()
    store = SQLiteStore(fresh_database(workdir / "relevance-floor.db"))
    config = MemoryConfig()
    memories: dict[str, tuple[EpisodicMemory, datetime, str]] = {}
    related: list[dict[str, Any]] = []
    own_questions: dict[str, list[str]] = {"beam": [], "locomo": []}
    unrelated: list[dict[str, Any]] = []
    try:
        for conv in load_beam(BEAM):
            memory = EpisodicMemory(
                store, embedder, tenant_id=f"b{conv.name}", session_id="s", config=config, owns_store=False
            )
            _remember(memory, conv)
            memories[f"beam/{conv.name}"] = (memory, conv.last_at, "message_id")
            for q in conv.questions:
                hits = _ask(memory, q.question, conv.last_at, "message_id")
                if q.evidence:
                    evidence = [str(i) for i in q.evidence]
                    related.append(
                        {"benchmark": "beam", "memory": conv.name, "evidence": evidence, "hits": hits}
                    )
                    own_questions["beam"].append(q.question)
                else:
                    unrelated.append({"kind": "beam abstention", "memory": f"beam/{conv.name}", "hits": hits})
        locomo, _ = load_locomo(LOCOMO)
        for pos in TUNE:
            lc = locomo[pos]
            memory = EpisodicMemory(
                store, embedder, tenant_id=f"l{pos}", session_id="s", config=config, owns_store=False
            )
            items = _turn_inputs(lc)
            for start in range(0, len(items), 64):
                memory.remember_episodes(items[start : start + 64])
            memories[f"locomo/{pos}"] = (memory, lc.last_session_at, "dia_id")
            for q in lc.questions:
                if q.has_evidence:
                    hits = _ask(memory, q.question, lc.last_session_at, "dia_id")
                    related.append(
                        {
                            "benchmark": "locomo",
                            "memory": str(pos),
                            "evidence": list(q.evidence),
                            "hits": hits,
                        }
                    )
                    own_questions["locomo"].append(q.question)
        unrelated += _unrelated(memories, own_questions)
    finally:
        store.close()
    return {"related": related, "unrelated": unrelated, "model": embedder.model_id}


def _unrelated(
    memories: dict[str, tuple[EpisodicMemory, datetime, str]], own_questions: dict[str, list[str]]
) -> list[dict[str, Any]]:
    out = []
    for name, (memory, now, id_field) in memories.items():
        other = "locomo" if name.startswith("beam/") else "beam"
        asks = [(f"{other} question on {name.split('/')[0]}", q) for q in own_questions[other][::CROSS_EVERY]]
        asks += [("off-topic", q) for q in OFF_TOPIC]
        out += [{"kind": kind, "memory": name, "hits": _ask(memory, q, now, id_field)} for kind, q in asks]
    return out


def _share(flags: Iterable[bool]) -> float:
    values = list(flags)
    return sum(values) / len(values) if values else math.nan


def _keeps(question: dict[str, Any], k: int, floor: float, signal: Signal) -> bool | None:
    """Whether an evidence hit in the top ``k`` passes ``floor`` (``None``: no evidence in the top ``k``)."""
    evidence = set(question["evidence"])
    found = [h for h in question["hits"][:k] if h["id"] in evidence]
    return None if not found else any(signal(h) >= floor for h in found)


def _recall10(question: dict[str, Any], floor: float, signal: Signal) -> float:
    evidence = set(question["evidence"])
    kept = {h["id"] for h in question["hits"][:10] if signal(h) >= floor}
    return len(kept & evidence) / len(evidence)


def _quiet(query: dict[str, Any], floor: float, signal: Signal) -> bool:
    return not any(signal(h) >= floor for h in query["hits"][:BLOCK_K])


def sweep(records: dict[str, Any], signal: Signal) -> list[dict[str, Any]]:
    """Per floor: evidence kept (top 5/10) and R@10 per benchmark; unrelated queries kept quiet, per kind."""
    kinds = sorted({u["kind"] for u in records["unrelated"]})
    rows = []
    for floor in FLOORS:
        row: dict[str, Any] = {"floor": floor}
        for bench in ("locomo", "beam"):
            qs = [q for q in records["related"] if q["benchmark"] == bench]
            for k in (BLOCK_K, 10):
                kept = [v for v in (_keeps(q, k, floor, signal) for q in qs) if v is not None]
                row[f"{bench} keeps top-{k}"] = _share(kept)
            row[f"{bench} R@10"] = _share_mean(_recall10(q, floor, signal) for q in qs)
        for kind in kinds:
            row[f"quiet: {kind}"] = _share(
                _quiet(u, floor, signal) for u in records["unrelated"] if u["kind"] == kind
            )
        row["quiet: all unrelated"] = _share(_quiet(u, floor, signal) for u in records["unrelated"])
        rows.append(row)
    return rows


def _share_mean(values: Iterable[float]) -> float:
    items = list(values)
    return sum(items) / len(items) if items else math.nan


def recommend(rows: Sequence[dict[str, Any]]) -> float:
    """The largest floor at which both benchmarks keep >= :data:`KEEP_TARGET` of their top-5 evidence."""
    ok = [
        r["floor"]
        for r in rows
        if r[f"locomo keeps top-{BLOCK_K}"] >= KEEP_TARGET and r[f"beam keeps top-{BLOCK_K}"] >= KEEP_TARGET
    ]
    return max(ok) if ok else 0.0


def markdown(doc: dict[str, Any]) -> str:
    """The report: per signal, one row per floor."""
    counts = doc["counts"]
    lines = [
        "Relevance floor calibration (benchmarks/relevance_floor.py, issue #20 item 3): "
        f"`recall_episodes(query, limit=10)` with the library defaults, model {doc['model']}. Related: "
        f"{counts['locomo']} LoCoMo 0-4 and {counts['beam']} BEAM 1-10 questions with evidence; "
        "*keeps top-k* = share of the questions with evidence in the top k whose evidence passes the floor; "
        "R@10 = recall_episodes' R@10 if its hits were floored. Unrelated: "
        + ", ".join(f"{n} {k}" for k, n in counts["unrelated"].items())
        + "; *quiet* = share whose top 5 hits are all below the floor (the block injects nothing).",
        "",
        f"Recommended floor (largest with >= {KEEP_TARGET:.0%} top-5 evidence kept on both benchmarks, "
        f"on match_strength): **{doc['recommended']}** (library default now: {doc['library_default']}).",
    ]
    for name, rows in doc["signals"].items():
        columns = list(rows[0])
        lines += ["", f"**{name}**", "", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        lines += ["| " + " | ".join(_cell(r[c]) for c in columns) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def _cell(value: object) -> str:
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--workdir", type=Path, default=Path("/tmp"), help="where the SQLite file goes")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    parser.add_argument(
        "--records", type=Path, help="read the recorded hits from here if it exists, else save them"
    )
    args = parser.parse_args()
    if args.records is not None and args.records.exists():
        records = json.loads(args.records.read_text("utf-8"))
    else:
        records = record(args.workdir)
        if args.records is not None:
            args.records.write_text(json.dumps(records), encoding="utf-8")
    signals = {name: sweep(records, fn) for name, fn in SIGNALS.items()}
    chosen = recommend(signals["match_strength (the floor's signal)"])
    kinds: dict[str, int] = {}
    for u in records["unrelated"]:
        kinds[u["kind"]] = kinds.get(u["kind"], 0) + 1
    doc = {
        "model": records["model"],
        "counts": {
            "locomo": sum(1 for q in records["related"] if q["benchmark"] == "locomo"),
            "beam": sum(1 for q in records["related"] if q["benchmark"] == "beam"),
            "unrelated": kinds,
        },
        "floors": list(FLOORS),
        "keep_target": KEEP_TARGET,
        "recommended": chosen,
        "library_default": DEFAULT_CONTEXT_MIN_RELEVANCE,
        "signals": signals,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "relevance_floor.json").write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    (args.out / "relevance_floor.md").write_text(markdown(doc), encoding="utf-8")
    print(markdown(doc))
    print(
        f"RECOMMENDED relevance floor (match_strength): {chosen} "
        f"(library default: {DEFAULT_CONTEXT_MIN_RELEVANCE})"
    )


if __name__ == "__main__":
    main()
