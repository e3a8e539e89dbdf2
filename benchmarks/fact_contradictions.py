"""Structural contradictions of the knowledge graph: precision and recall on labelled fact pairs.

The pairs (``benchmarks/data/fact_contradictions.jsonl``, written for this benchmark,
Apache-2.0) are two facts entered explicitly through ``remember_fact``, the way an agent's tool
call or an LLM extraction would write them (predicates as a person or a model might spell them:
``"moved to"``, ``"works for"``, ``"favorite color"``), labelled ``contradiction`` (the second
makes the first no longer true: moves, job changes, diet, relationships, preferences,
subscription tiers, tools) or ``compatible`` (both stay true: multi-valued predicates, another
predicate or subject, a duplicate, an older value back-filled, a low-confidence guess).

Each pair is written in its own tenant of one SQLite file under a frozen clock: ``a`` first,
then ``b``; a pair is *flagged* when ``a`` is retired afterwards (``invalidated_at`` set). The
rules are :mod:`memlane.graph.predicates` (cardinality, opposites, synonyms) and
:mod:`memlane.graph.contradiction`; no text similarity is involved. The set was written together
with the registry, so its figures are in-sample: they say the declared predicates behave as
declared, not how an undeclared predicate fares (it is multi-valued: never retired).

Usage::

    .venv/bin/python benchmarks/fact_contradictions.py [--out benchmarks/results/fact_contradictions.json]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _results import write_results

from memlane import EpisodicMemory, FrozenClock, MemoryConfig, SQLiteStore
from memlane.embeddings.fake import HashingEmbedder

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "fact_contradictions.jsonl"
DEFAULT_OUT = HERE / "results" / "fact_contradictions.json"
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _fact_args(spec: dict[str, Any]) -> dict[str, Any]:
    args = dict(spec)
    for name in ("valid_from", "valid_until"):
        if name in args:
            args[name] = datetime.fromisoformat(args[name]).replace(tzinfo=UTC)
    return args


def run_pair(store: SQLiteStore, index: int, pair: dict[str, Any]) -> dict[str, Any]:
    """Write ``a`` then ``b`` in tenant ``pair-<index>``; report whether ``a`` was retired."""
    memory = EpisodicMemory(
        store,
        HashingEmbedder(),
        config=MemoryConfig(scope="tenant"),
        clock=FrozenClock(NOW),
        tenant_id=f"pair-{index}",
        owns_store=False,
    )
    a = memory.remember_fact(**_fact_args(pair["a"])).fact
    b = memory.remember_fact(**_fact_args(pair["b"]))
    retired = next(f for f in memory.entity_timeline(pair["a"]["subject"]) if f.id == a.id)
    return {
        "category": pair["category"],
        "label": pair["label"],
        "flagged": retired.invalidated_at is not None,
        "reason": retired.supersede_reason,
        "duplicate": b.duplicate,
        "a": pair["a"],
        "b": pair["b"],
        "note": pair.get("note", ""),
    }


def _rates(results: list[dict[str, Any]]) -> dict[str, Any]:
    tp = sum(r["flagged"] and r["label"] == "contradiction" for r in results)
    fp = sum(r["flagged"] and r["label"] != "contradiction" for r in results)
    fn = sum(not r["flagged"] and r["label"] == "contradiction" for r in results)
    return {
        "pairs": len(results),
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "precision": round(tp / (tp + fp), 4) if tp + fp else 1.0,
        "recall": round(tp / (tp + fn), 4) if tp + fn else 1.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    pairs = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteStore(str(Path(tmp) / "facts.db"))
        try:
            results = [run_pair(store, i, p) for i, p in enumerate(pairs)]
        finally:
            store.close()
    by_category: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in results:
        by_category[r["category"]].append(r)
    report = {
        "data": str(DATA.relative_to(HERE.parent)),
        "overall": _rates(results),
        "by_category": {c: _rates(rs) for c, rs in sorted(by_category.items())},
        "compatible_retired": sum(r["flagged"] and r["label"] == "compatible" for r in results),
        "seed_mysql_postgresql": next(r["flagged"] for r in results if "MySQL" in json.dumps(r["a"])),
        "errors": [r for r in results if r["flagged"] != (r["label"] == "contradiction")],
        "pairs": results,
    }
    write_results(args.out, report, _markdown(report))
    print(json.dumps(report["overall"]))


def _markdown(report: dict[str, Any]) -> str:
    o = report["overall"]
    lines = [
        "# Knowledge graph: structural contradictions",
        "",
        f"`benchmarks/fact_contradictions.py` on `{report['data']}`: facts entered explicitly with "
        "`remember_fact`, a pair flagged when its first fact is retired by the second. In-sample (the "
        "set and the predicate registry were written together).",
        "",
        "| set | pairs | precision | recall | TP / FP / FN |",
        "|---|---:|---:|---:|---|",
        f"| all | {o['pairs']} | {o['precision']:.3f} | {o['recall']:.3f} | "
        f"{o['tp']} / {o['fp']} / {o['fn']} |",
    ]
    for name, r in report["by_category"].items():
        lines.append(
            f"| {name} | {r['pairs']} | {r['precision']:.3f} | {r['recall']:.3f} | "
            f"{r['tp']} / {r['fp']} / {r['fn']} |"
        )
    lines += [
        "",
        f"Compatible facts retired: **{report['compatible_retired']}**. "
        f"Seed 002's MySQL -> PostgreSQL detected: **{report['seed_mysql_postgresql']}**.",
        "",
        "Errors (what the rules miss or wrongly retire):",
        "",
    ]
    for r in report["errors"] or []:
        lines.append(f"- {r['label']} missed: `{r['a']}` / `{r['b']}` ({r['note']})")
    if not report["errors"]:
        lines.append("- none")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
