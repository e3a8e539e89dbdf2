"""Does the knowledge-graph entity signal help recall? (issue #21 item 4).

A study in the manner of ``benchmarks/fusion_study.py``: it remembers BEAM 1-10 and LoCoMo 0-4 in
place (LoCoMo 5-9 only with ``--held-out``, once, for the figure), with the library's offline entity
linking on write (``link_entities``, the default), asks every question through
``recall_episodes(question, limit=10)`` with the library defaults, records the candidate signals the
ranking gets (fusion_study's hooks) and, for the same candidates, what the graph stage of
:mod:`memlane.recall.entities` finds: the query's entities resolved in the recall's scope
(:func:`~memlane.recall.entities.resolve_query_entities`) and each candidate's links
(:meth:`~memlane.stores.base.Store.linked_episodes`). It then re-ranks every question offline under
variants of the graph boost (:attr:`memlane.config.profile.Boosts.graph`, the one knob) and of the
entity weighting, and decides by leave-one-conversation-out cross-validation over the 15 tuning
conversations (choose the variant, "off" included, with the best mean of the two benchmarks' R@10 on
14, score it on the 15th), per question type, with per-conversation paired bootstrap CIs against the
library defaults. Writes ``benchmarks/results/entity_study.{json,md}`` (``entity_study_heldout.*``
with ``--held-out``).

    python benchmarks/entity_study.py                  # ~10-15 min on 2 cores (embeds both benchmarks)
    python benchmarks/entity_study.py --held-out "specific/m b=0.1"   # LoCoMo 5-9, that variant, once
    python benchmarks/entity_study.py --workdir /tmp --live 0.1        # reuses a capture's database
"""

from __future__ import annotations

import argparse
import json
import pickle
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from fusion_study import BEAM, DATASETS, LOCOMO, TUNE, Question, ask_each, cross_validate, paired_ci

from memlane import EpisodicMemory, MemoryConfig
from memlane.config.profile import Boosts, RankingProfile
from memlane.embeddings.local import LocalEmbedder
from memlane.evaluation.beam import _remember, load_beam
from memlane.evaluation.locomo import load_locomo
from memlane.evaluation.locomo_run import _turn_inputs, fresh_database
from memlane.evaluation.metrics import percentile, recall_at_k
from memlane.recall.entities import (
    QueryEntity,
    entity_weights,
    graph_signal,
    links_by_candidate,
    query_entity_keys,
    resolve_query_entities,
)
from memlane.recall.ranking import rank
from memlane.stores.base import EpisodeFilter
from memlane.stores.sqlite import SQLiteStore

BASE = RankingProfile()
HELD_OUT = range(5, 10)


@dataclass
class Graphed:
    """A recorded question with what the graph stage finds for its candidates."""

    question: Question
    entities: list[QueryEntity]
    links: list[frozenset[str]]


def _graph(
    store: SQLiteStore, tenant: str, session: str, text: str, keys: Any
) -> tuple[list[QueryEntity], Any]:
    flt = EpisodeFilter(tenant_id=tenant, session_id=session)
    entities = resolve_query_entities(store.graph_store, flt, tenant, query_entity_keys(text))
    ids = sorted({i for e in entities for i in e.ids})
    linked = store.linked_episodes(flt, tenant, ids, [int(k) for k in keys], 0)
    return entities, links_by_candidate(np.asarray(keys, dtype=np.int64), linked)


def _asked(
    store: SQLiteStore, memory: EpisodicMemory, asks: list[Any], id_field: str, tenant: str, session: str
) -> list[Graphed]:
    """Ask each question once (fusion_study's recording hooks) and look up its candidates' links."""
    out = []
    for (_, _, _, (question, _)), (q, keys) in zip(
        asks, ask_each(store, memory, asks, id_field), strict=True
    ):
        entities, links = _graph(store, tenant, session, question, keys)
        out.append(Graphed(q, entities, links))
    return out


def capture(workdir: Path, datasets: Path, conversations: range, beam: bool) -> dict[str, list[Graphed]]:
    """Remember the benchmarks (entity links on write) and record every question's candidates and links."""
    embedder = LocalEmbedder()
    store = SQLiteStore(fresh_database(workdir / "entity-study.db"))
    data: dict[str, list[Graphed]] = {"beam": [], "locomo": []}
    if beam:
        for conv in load_beam(datasets / BEAM):
            tenant = f"b{conv.name}"
            memory = EpisodicMemory(store, embedder, tenant_id=tenant, session_id="s", owns_store=False)
            _remember(memory, conv)
            asks = [
                (conv.name, q.type, {str(i) for i in q.evidence}, (q.question, conv.last_at))
                for q in conv.questions
                if q.evidence
            ]
            data["beam"] += _asked(store, memory, asks, "message_id", tenant, "s")
    locomo, _ = load_locomo(datasets / LOCOMO)
    for pos in conversations:
        lc = locomo[pos]
        tenant = f"l{pos}"
        memory = EpisodicMemory(store, embedder, tenant_id=tenant, session_id=lc.sample_id, owns_store=False)
        items = _turn_inputs(lc)
        for start in range(0, len(items), 64):
            memory.remember_episodes(items[start : start + 64])
        asks = [
            (str(pos), str(q.category), set(q.evidence), (q.question, lc.last_session_at))
            for q in lc.questions
            if q.category in (1, 2, 3, 4) and q.has_evidence
        ]
        data["locomo"] += _asked(store, memory, asks, "dia_id", tenant, lc.sample_id)
    store.close()
    return data


# -- the variants -------------------------------------------------------------------------------

Signal = Callable[[Graphed, float], np.ndarray]


def _shares(g: Graphed, nu: float) -> np.ndarray:
    """``[m, n]`` s_q(i) of every query entity."""
    rows = [
        [1.0 if e.members & ids else nu if e.neighbours & ids else 0.0 for ids in g.links] for e in g.entities
    ]
    return np.asarray(rows, dtype=np.float64).reshape(len(g.entities), len(g.links))


def specific_mean(g: Graphed, nu: float) -> np.ndarray:
    """The library's :func:`~memlane.recall.entities.graph_signal`: ``sum_q (1 - df_q / (n + 1)) s_q / m``."""
    return graph_signal(g.links, g.entities, nu)


def plain_share(g: Graphed, nu: float) -> np.ndarray:
    """``sum_q s_q / m``: every query entity counts the same."""
    if not g.entities:
        return np.zeros(len(g.links))
    return np.asarray(_shares(g, nu).mean(axis=0))


def relative_specific(g: Graphed, nu: float) -> np.ndarray:
    """``sum_q w_q s_q / sum_q w_q``: specificity only between the query's entities."""
    if not g.entities:
        return np.zeros(len(g.links))
    w = entity_weights(g.links, g.entities)
    if w.sum() <= 0:
        return np.zeros(len(g.links))
    return np.asarray((w / w.sum()) @ _shares(g, nu))


def rare_only(g: Graphed, nu: float) -> np.ndarray:
    """``max_q s_q`` over the query entities linked to at most 20% of the candidates."""
    if not g.entities:
        return np.zeros(len(g.links))
    w = entity_weights(g.links, g.entities)
    s = _shares(g, nu)[w >= 0.8]
    return s.max(axis=0) if len(s) else np.zeros(len(g.links))


SIGNALS: dict[str, Signal] = {
    "specific/m": specific_mean,
    "plain share": plain_share,
    "relative specific": relative_specific,
    "rare only": rare_only,
}


def variants() -> dict[str, tuple[str | None, RankingProfile]]:
    """Label -> (signal name or None for off, profile)."""
    out: dict[str, tuple[str | None, RankingProfile]] = {"library defaults (off)": (None, BASE)}
    for name in SIGNALS:
        for b in (0.1, 0.2, 0.3, 0.5):
            out[f"{name} b={b:g}"] = (name, replace(BASE, boosts=replace(BASE.boosts, graph=b)))
    out["plain share b=0.2, no tag boost"] = (
        "plain share",
        replace(BASE, boosts=Boosts(entity=0.0, time_window=BASE.boosts.time_window, graph=0.2)),
    )
    return out


def recall10(items: list[Graphed], signal: str | None, profile: RankingProfile) -> np.ndarray:
    """R@10 of each question re-ranked with the graph signal ``signal`` under ``profile``."""
    out = []
    for g in items:
        q = g.question
        signals = q.signals if signal is None else replace(q.signals, graph=SIGNALS[signal](g, 0.5))
        ranked = rank(signals, profile, q.options)
        out.append(recall_at_k([q.ids[r.index] for r in ranked], q.evidence, 10))
    return np.asarray(out)


def _rows(items: list[Graphed], table: dict[str, np.ndarray]) -> dict[str, Any]:
    """Per variant: R@10 and CI vs the defaults, overall and per question type."""
    base = table["library defaults (off)"]
    types = sorted({g.question.type for g in items})
    rows: dict[str, Any] = {}
    for label, s in table.items():
        row: dict[str, Any] = {"all": {"recall_at_10": float(s.mean()), **_ci_of(items, s, base)}}
        for t in types:
            mask = np.array([g.question.type == t for g in items])
            sub = [g for g, m in zip(items, mask, strict=True) if m]
            row[t] = {
                "recall_at_10": float(s[mask].mean()),
                "n": int(mask.sum()),
                **_ci_of(sub, s[mask], base[mask]),
            }
        rows[label] = row
    return rows


def _ci_of(items: list[Graphed], a: np.ndarray, b: np.ndarray) -> dict[str, Any]:
    return {"minus_defaults": paired_ci(a, b, [g.question.conversation for g in items])}


def coverage(items: list[Graphed]) -> dict[str, float]:
    """How often the stage has something to say."""
    named = [g for g in items if g.entities]
    linked = [np.mean([bool(ids) for ids in g.links]) for g in named if g.links]
    return {
        "questions": len(items),
        "with_resolved_entity": len(named),
        "with_neighbours": sum(1 for g in named if any(e.neighbours for e in g.entities)),
        "mean_share_of_candidates_linked": float(np.mean(linked)) if linked else 0.0,
    }


def study(data: dict[str, list[Graphed]], held_out: dict[str, str] | None) -> dict[str, Any]:
    """Scores, CV choice and the tables; with ``held_out`` only the given variants."""
    table = variants()
    if held_out is not None:
        table = {k: v for k, v in table.items() if k in held_out.values() or k == "library defaults (off)"}
    active = {n: gs for n, gs in data.items() if gs}
    scores = {
        n: {label: recall10(gs, sig, prof) for label, (sig, prof) in table.items()}
        for n, gs in active.items()
    }
    doc: dict[str, Any] = {"benchmarks": {}, "coverage": {n: coverage(gs) for n, gs in active.items()}}
    if held_out is None:
        picked, choices = cross_validate(
            {n: [g.question.conversation for g in gs] for n, gs in active.items() if gs}, scores, list(table)
        )
        doc["cv_choices"] = choices
        for n in active:
            scores[n]["cross-validated choice"] = picked[n]
    for n, gs in active.items():
        doc["benchmarks"][n] = _rows(gs, scores[n])
    return doc


def _cell(c: dict[str, float]) -> str:
    return f"{c['mean']:+.3f} [{c['low']:+.3f}, {c['high']:+.3f}]"


def markdown(doc: dict[str, Any], title: str) -> str:
    """Per benchmark: every variant's R@10 (all, per type) with the paired CI against the defaults."""
    lines = [title, ""]
    for name, rows in doc["benchmarks"].items():
        first = next(iter(rows.values()))
        types = [t for t in first if t != "all"]
        cov = doc["coverage"][name]
        lines += [
            f"**{name}** ({cov['questions']} questions; {cov['with_resolved_entity']} name a stored entity, "
            f"{cov['with_neighbours']} with 1-hop neighbours; mean share of a recall's candidates linked to "
            f"the query's entities {cov['mean_share_of_candidates_linked']:.2f})",
            "",
            "| variant | R@10 | minus defaults | " + " | ".join(f"type {t}" for t in types) + " |",
            "| --- | ---: | --- | " + " | ".join("---" for _ in types) + " |",
        ]
        for label, row in rows.items():
            cells = [f"{row[t]['recall_at_10']:.3f} {_cell(row[t]['minus_defaults'])}" for t in types]
            lines.append(
                f"| {label} | {row['all']['recall_at_10']:.3f} | {_cell(row['all']['minus_defaults'])} | "
                + " | ".join(cells)
                + " |"
            )
        lines.append("")
    if "cv_choices" in doc:
        lines.append(
            "Cross-validation (left-out conversation: choice): " + "; ".join(doc["cv_choices"]) + "."
        )
    return "\n".join(lines) + "\n"


@dataclass
class Live:
    """What the live pass measured: per question, its benchmark, conversation, type, R@10 and time."""

    rows: list[tuple[str, str, str, dict[str, float], dict[str, float]]]


def _live_asks(datasets: Path) -> list[tuple[str, str, str, str, Any, set[str], str, str]]:
    """``(benchmark, conversation, type, question, now, evidence, tenant, session)``, BEAM and LoCoMo 0-4."""
    out = []
    for conv in load_beam(datasets / BEAM):
        for q in conv.questions:
            if q.evidence:
                ev = {str(i) for i in q.evidence}
                out.append(("beam", conv.name, q.type, q.question, conv.last_at, ev, f"b{conv.name}", "s"))
    locomo, _ = load_locomo(datasets / LOCOMO)
    for pos in TUNE:
        lc = locomo[pos]
        for q in lc.questions:
            if q.category in (1, 2, 3, 4) and q.has_evidence:
                ev = set(q.evidence)
                args = (q.question, lc.last_session_at, ev, f"l{pos}", lc.sample_id)
                out.append(("locomo", str(pos), str(q.category), *args))
    return out


def live(db: Path, datasets: Path, boost: float) -> dict[str, Any]:
    """The graph stage on (``graph_boost=boost``) and off through the public API, interleaved in one process.

    Reopens a capture's database (both benchmarks remembered and linked) and asks every question under
    both configurations, so the extra candidates only the graph finds are included (the offline
    re-ranking cannot add them): R@10 per benchmark and question type with paired CIs, and p50/p95 recall
    latency in ms (query embedding included) of each, the shared machine's load falling on both alike.
    """
    store = SQLiteStore(db)
    embedder = LocalEmbedder()
    memories: dict[tuple[str, str, str], EpisodicMemory] = {}
    rows = []
    for bench, conv, kind, question, now, evidence, tenant, session in _live_asks(datasets):
        scores, times = {}, {}
        for name, b in (("off", None), ("on", boost)):
            key = (name, tenant, session)
            if key not in memories:
                config = MemoryConfig(track_retrievals=False, graph_boost=b)
                memories[key] = EpisodicMemory(
                    store, embedder, config=config, tenant_id=tenant, session_id=session, owns_store=False
                )
            start = time.perf_counter()
            hits = memories[key].recall_episodes(question, limit=10, now=now)
            times[name] = (time.perf_counter() - start) * 1000.0
            field = "message_id" if bench == "beam" else "dia_id"
            scores[name] = recall_at_k([str(h.episode.metadata[field]) for h in hits], evidence, 10)
        rows.append((bench, conv, kind, scores, times))
    store.close()
    return _live_doc(rows, boost)


def _live_doc(rows: list[Any], boost: float) -> dict[str, Any]:
    out: dict[str, Any] = {"graph_boost": boost, "benchmarks": {}}
    for bench in sorted({r[0] for r in rows}):
        mine = [r for r in rows if r[0] == bench]
        kinds = ["all", *sorted({r[2] for r in mine})]
        table: dict[str, Any] = {}
        for kind in kinds:
            sub = [r for r in mine if kind in ("all", r[2])]
            on = np.array([r[3]["on"] for r in sub])
            off = np.array([r[3]["off"] for r in sub])
            table[kind] = {
                "n": len(sub),
                "off": float(off.mean()),
                "on": float(on.mean()),
                "on_minus_off": paired_ci(on, off, [r[1] for r in sub]),
            }
        times = {name: [r[4][name] for r in mine] for name in ("off", "on")}
        latency = {
            name: {"p50_ms": percentile(t, 50), "p95_ms": percentile(t, 95)} for name, t in times.items()
        }
        out["benchmarks"][bench] = {"recall_at_10": table, "latency": latency}
    return out


def live_markdown(doc: dict[str, Any]) -> str:
    """R@10 per type and latency, graph stage off and on, through the public API."""
    lines = [
        "Graph stage through the public API (benchmarks/entity_study.py --live): "
        "`recall_episodes(question, limit=10)` with the library defaults (off) and with "
        f"`MemoryConfig(graph_boost={doc['graph_boost']:g})` "
        "(on, extra candidates included), interleaved in one process; CIs: per-conversation paired "
        "bootstrap, 95%. Latency includes the query embedding.",
    ]
    for bench, body in doc["benchmarks"].items():
        lines += [
            "",
            f"**{bench}**",
            "",
            "| question type | n | R@10 off | R@10 on | on - off |",
            "| --- | ---: | ---: | ---: | --- |",
        ]
        for kind, row in body["recall_at_10"].items():
            lines.append(
                f"| {kind} | {row['n']} | {row['off']:.3f} | {row['on']:.3f} | {_cell(row['on_minus_off'])} |"
            )
        lat = body["latency"]
        lines += [
            "",
            f"Latency off: p50 {lat['off']['p50_ms']:.1f} ms, p95 {lat['off']['p95_ms']:.1f} ms; "
            f"on: p50 {lat['on']['p50_ms']:.1f} ms, p95 {lat['on']['p95_ms']:.1f} ms.",
        ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workdir", type=Path, default=Path("/tmp"))
    parser.add_argument("--datasets", type=Path, default=DATASETS)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    parser.add_argument("--held-out", nargs="*", default=None, help="variant labels to score on LoCoMo 5-9")
    parser.add_argument("--cache", type=Path, default=None, help="pickle of a capture to reuse (or write)")
    parser.add_argument("--live", type=float, default=None, help="graph_boost to run through the public API")
    args = parser.parse_args()
    if args.live is not None:
        found = live(args.workdir / "entity-study.db", args.datasets, args.live)
        (args.out / "entity_study_live.json").write_text(json.dumps(found, indent=2) + "\n", encoding="utf-8")
        (args.out / "entity_study_live.md").write_text(live_markdown(found), encoding="utf-8")
        print(live_markdown(found))
        return
    held = args.held_out is not None
    if args.cache is not None and args.cache.exists():
        data = pickle.loads(args.cache.read_bytes())
    else:
        data = capture(args.workdir, args.datasets, HELD_OUT if held else TUNE, beam=not held)
        if args.cache is not None:
            args.cache.write_bytes(pickle.dumps(data))
    doc = study(data, {v: v for v in args.held_out} if held else None)
    stem = "entity_study_heldout" if held else "entity_study"
    where = "LoCoMo 5-9 (held out, looked at once)" if held else "BEAM 1-10 and LoCoMo 0-4"
    title = (
        f"Entity study (benchmarks/entity_study.py): {where}, R@10 of `recall_episodes(question, limit=10)` "
        "re-ranked offline from the recorded candidates with the graph entity signal (the episodes only "
        "the graph would add are not modelled: `entity_study_live.md` runs the stage itself); CIs: "
        "per-conversation paired bootstrap, 95%, against the defaults. Variants: `specific/m` is the "
        "library's signal (`memlane.recall.entities.graph_signal`), `plain share` weighs every query entity "
        "1, `relative specific` normalises the weights among the query's entities, `rare only` keeps the "
        "entities on at most 20% of the candidates; `b` is `Boosts.graph`."
    )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{stem}.json").write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    (args.out / f"{stem}.md").write_text(markdown(doc, title), encoding="utf-8")
    print(markdown(doc, title))


if __name__ == "__main__":
    main()
