"""What ``EpisodicMemory.compact()`` saves on a redundant synthetic corpus, and what it keeps.

The corpus (seeded, deterministic): ``--facts`` distinct facts (default 500) over four event
types, each stated 1-7 times (mean ~4, so ~2,000 episodes) as paraphrase-like variants
(case and punctuation changes and word reorders, which the deterministic
:class:`memlane.embeddings.fake.HashingEmbedder` maps to cosine 1, and an added filler word, cosine ~0.94-0.97
depending on length), ``created_at`` spread over the year before a frozen "now", importance
1-10 or unrated; 10 % of the facts are never-forget (importance 9-10 on every statement).
Before compacting, 300 ranked recalls (one per random fact) give some episodes a
``retrieve_count``.

Then, on one SQLite file: ``compact(similarity=0.95, never_retrieved_older_than_days=90)``
and the figures: active episodes before/after, archived (merged originals, stale), merged
clusters, the float32 vector bytes of the active set (what every ranked recall scans), the
file size before/after compaction and after ``VACUUM`` (archiving keeps rows, so the file does
not shrink: the saving is in what recall has to search and rank), ranked-recall p50 before
and after, and the never-forget check: every importance >= 9 episode is either still active
or archived into an active merged episode with the same text and an importance at least as
high. The check is printed as PASS/FAIL (and the exit code is 1 on FAIL); it is not a test.

Usage::

    .venv/bin/python benchmarks/compaction.py [--facts 500] [--seed 7]
        [--out benchmarks/results/compaction.json]
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from _results import write_results

from memlane import EpisodeInput, EpisodicMemory, FrozenClock, MemoryConfig, SQLiteStore
from memlane.embeddings.fake import HashingEmbedder

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "compaction.json"
NOW = datetime(2025, 1, 1, tzinfo=UTC)
EVENT_TYPES = ("preference", "fact", "observation", "error")
SUBJECTS = ("user", "the team", "the client", "our agent", "the project", "the customer", "ops", "the lead")
VERBS = ("prefers", "uses", "needs", "avoids", "mentioned", "asked for", "reported", "scheduled")
OBJECTS = (
    "window seats",
    "dark mode",
    "python tooling",
    "weekly reports",
    "the staging cluster",
    "vegetarian meals",
    "early meetings",
    "postgres backups",
    "slack alerts",
    "invoice exports",
    "a quiet room",
    "the blue theme",
)
DETAILS = (
    "on mondays",
    "for the berlin office",
    "since the march release",
    "during onboarding",
    "when travelling",
    "for q3 planning",
    "after the outage",
    "in every sprint",
    "for the mobile app",
    "at the offsite",
)
FILLERS = ("really", "usually", "again", "still", "definitely", "now")
DIMS = 256
RECALLS = 300
STALE_DAYS = 90.0
SIMILARITY = 0.95


def make_corpus(n_facts: int, seed: int) -> tuple[list[EpisodeInput], list[str]]:
    """Redundant episodes (input order shuffled) and the base text of each fact."""
    rng = random.Random(seed)
    facts: set[str] = set()
    while len(facts) < n_facts:
        facts.add(
            f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} {rng.choice(DETAILS)} "
            f"ref {rng.randrange(10_000)}"
        )
    bases = sorted(facts)
    items: list[EpisodeInput] = []
    for k, base in enumerate(bases):
        event_type = EVENT_TYPES[k % len(EVENT_TYPES)]
        critical = rng.random() < 0.10
        for v in range(rng.randint(1, 7)):
            text = _variant(base, v, rng)
            importance: float | None
            if critical:
                importance = float(rng.choice((9, 10)))
            else:
                importance = None if rng.random() < 0.2 else float(rng.randint(1, 8))
            items.append(
                EpisodeInput(
                    event_type=event_type,
                    content=text,
                    tags=[f"topic-{k % 40}", *(["dup"] if v else [])],
                    importance=importance,
                    created_at=NOW - timedelta(days=rng.uniform(0, 365)),
                )
            )
    rng.shuffle(items)
    return items, bases


def _variant(base: str, v: int, rng: random.Random) -> str:
    """The ``v``-th statement of a fact: verbatim, re-cased, punctuated, reordered or with a filler."""
    if v == 0:
        return base
    kind = rng.choice(("case", "punct", "reorder", "filler"))
    if kind == "case":
        return base.upper() if rng.random() < 0.5 else base.capitalize()
    if kind == "punct":
        return base.capitalize() + rng.choice(("!", ".", " ..."))
    words = base.split()
    if kind == "reorder":
        i = rng.randrange(len(words) - 1)
        words[i], words[i + 1] = words[i + 1], words[i]
        return " ".join(words)
    words.insert(rng.randrange(1, len(words)), rng.choice(FILLERS))
    return " ".join(words)


def _file_bytes(path: Path) -> int:
    """Database file plus its WAL (after a checkpoint, the WAL is empty)."""
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    wal = path.with_name(path.name + "-wal")
    return path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


def _vacuumed_bytes(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        conn.execute("VACUUM")
    return _file_bytes(path)


def _recall_p50_ms(memory: EpisodicMemory, queries: Sequence[str]) -> float:
    samples = []
    for q in queries:
        t0 = time.perf_counter_ns()
        memory.recall_episodes(q, limit=10)
        samples.append(time.perf_counter_ns() - t0)
    return float(np.median(samples) / 1e6)


def never_forget_check(memory: EpisodicMemory) -> dict[str, Any]:
    """Every importance >= 9 episode is active, or archived into an active one with its text."""
    episodes = {ep.id: ep for ep in memory.iter_episodes()}
    critical = [ep for ep in episodes.values() if ep.importance is not None and ep.importance >= 9]
    lost: list[str] = []
    active_self = merged_ok = 0
    for ep in critical:
        if ep.archived_at is None:
            active_self += 1
            continue
        target = episodes.get(ep.superseded_by or "")
        while target is not None and target.archived_at is not None and target.superseded_by:
            target = episodes.get(target.superseded_by)
        if (
            target is not None
            and target.archived_at is None
            and target.content == ep.content
            and (target.importance or 0) >= (ep.importance or 0)
        ):
            merged_ok += 1
        else:
            lost.append(ep.id)
    return {
        "critical_episodes": len(critical),
        "still_active": active_self,
        "merged_into_active_with_same_text": merged_ok,
        "lost": lost,
        "result": "PASS" if not lost else "FAIL",
    }


def run(n_facts: int, seed: int, workdir: Path) -> dict[str, Any]:
    """Build the corpus, recall, compact; return every figure."""
    items, bases = make_corpus(n_facts, seed)
    db = workdir / "compaction.db"
    clock = FrozenClock(NOW)
    memory = EpisodicMemory(
        SQLiteStore(db), HashingEmbedder(DIMS), config=MemoryConfig(), clock=clock, tenant_id="bench"
    )
    try:
        for start in range(0, len(items), 500):
            memory.remember_episodes(items[start : start + 500])
        rng = random.Random(seed + 1)
        queries = [rng.choice(bases) for _ in range(RECALLS)]
        for q in queries:
            memory.recall_episodes(q, limit=3)
        timing_queries = [rng.choice(bases) for _ in range(100)]
        untracked = memory.with_context(config=MemoryConfig(track_retrievals=False))
        p50_before = _recall_p50_ms(untracked, timing_queries)
        bytes_before = _file_bytes(db)
        critical_texts_before = {
            ep.content for ep in memory.iter_episodes() if ep.importance is not None and ep.importance >= 9
        }
        dry = memory.compact(similarity=SIMILARITY, dry_run=True)
        t0 = time.perf_counter()
        report = memory.compact(similarity=SIMILARITY)
        compact_s = time.perf_counter() - t0
        p50_merged = _recall_p50_ms(untracked, timing_queries)
        stale_report = memory.compact(similarity=SIMILARITY, never_retrieved_older_than_days=STALE_DAYS)
        p50_after = _recall_p50_ms(untracked, timing_queries)
        bytes_after = _file_bytes(db)
        active = [h.episode for h in memory.recall_episodes(None, limit=100_000)]
        active_critical_texts = {
            ep.content for ep in active if ep.importance is not None and ep.importance >= 9
        }
        check = never_forget_check(memory)
        check["critical_texts_before"] = len(critical_texts_before)
        check["critical_texts_still_active"] = len(critical_texts_before & active_critical_texts)
        if check["critical_texts_still_active"] != len(critical_texts_before):
            check["result"] = "FAIL"
        total_rows = memory.count()
        untracked.close()
    finally:
        memory.close()
    vacuumed = _vacuumed_bytes(db)
    sizes = [len(g.originals) for g in report.merges]
    return {
        "facts": n_facts,
        "episodes_before": len(items),
        "rows_after": total_rows,
        "active_before": report.active_before,
        "active_after_merge": report.active_after,
        "active_saved_fraction_by_merge": 1 - report.active_after / report.active_before,
        "active_after_stale": stale_report.active_after,
        "active_saved_fraction_total": 1 - stale_report.active_after / report.active_before,
        "merged_clusters": len(report.merges),
        "merged_originals": report.merged_originals,
        "mean_cluster_size": float(np.mean(sizes)) if sizes else 0.0,
        "max_cluster_size": max(sizes, default=0),
        "stale_archived": len(stale_report.stale),
        "merged_in_second_pass": len(stale_report.merges),
        "dry_run_matches": (dry.active_after, dry.archived, len(dry.merges))
        == (report.active_after, report.archived, len(report.merges)),
        "active_vector_bytes_before": report.active_before * DIMS * 4,
        "active_vector_bytes_after_merge": report.active_after * DIMS * 4,
        "active_vector_bytes_after_stale": stale_report.active_after * DIMS * 4,
        "file_bytes_before": bytes_before,
        "file_bytes_after": bytes_after,
        "file_bytes_after_vacuum": vacuumed,
        "compact_seconds": compact_s,
        "recall_p50_ms_before": p50_before,
        "recall_p50_ms_after_merge": p50_merged,
        "recall_p50_ms_after_stale": p50_after,
        "never_forget": check,
    }


def render_markdown(report: dict[str, Any]) -> str:
    """The figures as a Markdown table plus the never-forget check."""
    r = report["result"]
    nf = r["never_forget"]
    kib = 1024
    rows = [
        ("episodes stored (before)", f"{r['episodes_before']:,}"),
        (
            "1. merge only: active episodes",
            f"{r['active_before']:,} -> {r['active_after_merge']:,} "
            f"(-{r['active_saved_fraction_by_merge'] * 100:.1f} %)",
        ),
        (
            "   merged clusters (originals archived)",
            f"{r['merged_clusters']:,} ({r['merged_originals']:,}; mean {r['mean_cluster_size']:.1f}, "
            f"max {r['max_cluster_size']})",
        ),
        (
            f"2. + stale (never retrieved, > {STALE_DAYS:g} days): active episodes",
            f"{r['active_after_merge']:,} -> {r['active_after_stale']:,} ({r['stale_archived']:,} archived; "
            f"-{r['active_saved_fraction_total'] * 100:.1f} % in all)",
        ),
        ("rows in the file after (nothing deleted)", f"{r['rows_after']:,}"),
        (
            f"active float32 vectors ({DIMS} dims): before -> merge -> stale",
            f"{r['active_vector_bytes_before'] / kib:,.0f} -> "
            f"{r['active_vector_bytes_after_merge'] / kib:,.0f} -> "
            f"{r['active_vector_bytes_after_stale'] / kib:,.0f} KiB",
        ),
        (
            "SQLite file before -> after -> after VACUUM",
            f"{r['file_bytes_before'] / kib:,.0f} -> {r['file_bytes_after'] / kib:,.0f} -> "
            f"{r['file_bytes_after_vacuum'] / kib:,.0f} KiB",
        ),
        (
            "ranked recall p50: before -> merge -> stale (ms)",
            f"{r['recall_p50_ms_before']:.2f} -> {r['recall_p50_ms_after_merge']:.2f} -> "
            f"{r['recall_p50_ms_after_stale']:.2f}",
        ),
        ("compact() wall time, merge pass (s)", f"{r['compact_seconds']:.2f}"),
        ("dry run predicted the same merge result", str(r["dry_run_matches"])),
    ]
    lines = [
        "# Compaction on a redundant synthetic corpus",
        "",
        f"{r['facts']} facts stated 1-7 times each; HashingEmbedder({DIMS}); "
        f"{RECALLS} ranked recalls, then `compact(similarity={SIMILARITY})` (1) and "
        f"`compact(similarity={SIMILARITY}, never_retrieved_older_than_days={STALE_DAYS:g})` (2). "
        f"Seed {report['config']['seed']}.",
        "",
        "| figure | value |",
        "|---|---:|",
        *[f"| {k} | {v} |" for k, v in rows],
        "",
        f"**Never-forget check: {nf['result']}** — {nf['critical_episodes']} importance >= 9 episodes: "
        f"{nf['still_active']} still active, {nf['merged_into_active_with_same_text']} archived into an "
        f"active merged episode with the same text and importance; lost: {len(nf['lost'])}. "
        f"Distinct importance >= 9 texts active: {nf['critical_texts_still_active']} of "
        f"{nf['critical_texts_before']}.",
        "",
        "Archiving keeps every row (history, `include_archived`), so the file does not shrink, even "
        "after VACUUM (the merged episodes add rows); the saving is in the active set that every "
        "recall filters, scores and ranks.",
        "",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run, write JSON and Markdown, print the Markdown. Returns 1 if the never-forget check fails."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("--facts", type=int, default=500)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="memlane-compaction-") as tmp:
        result = run(args.facts, args.seed, Path(tmp))
    report = {"benchmark": "compaction", "config": {"facts": args.facts, "seed": args.seed}, "result": result}
    markdown = render_markdown(report)
    write_results(args.out, report, markdown)
    print(markdown)
    return 0 if result["never_forget"]["result"] == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
