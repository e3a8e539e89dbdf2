"""Pseudo-relevance feedback and diversity of the top 10 on multi-evidence questions (issue #20 item 1).

A study in the manner of ``benchmarks/fusion_study.py``: it reuses that study's capture (the candidates
``recall_episodes(question, limit=10)`` ranks with the library defaults, BEAM 1-10 and LoCoMo 0-4; LoCoMo
5-9 is never read), reads the candidates' stored vectors from the capture's SQLite file by row key, and
re-ranks offline under three corpus-independent techniques, none of them fitted:

* **dense Rocchio** (Rocchio 1971; its dense form as in e.g. Li et al. 2023, *Pseudo Relevance Feedback
  with Deep Language Models and Dense Retrievers*, ACM TOIS): ``q' = normalize(q + beta * c)``, ``c`` the
  mean vector of the top ``m`` candidates by base relevance (``source=base``) or of the defaults' top
  ``m`` hits (``source=hits``); every candidate with a cosine gets ``cos(q', v) = (cos(q, v) + beta * c.v)
  / |q + beta * c|`` with ``|q + beta c|^2 = 1 + 2 beta mean(cos_top) + beta^2 |c|^2`` (unit vectors), so
  no second embedding call and no query vector is needed; the rest of the ranking is the defaults';
* **MMR** (Carbonell & Goldstein 1998, SIGIR '98) over the defaults' top 50: greedily take
  ``argmax lam * score - (1 - lam) * max cos(v, v_selected)``;
* **a cap per group**: at most ``c`` hits of one conversation group (the context signal's groups: a
  session's candidates without an hour's pause), the rest filled in score order.

Each technique's grid is chosen by leave-one-conversation-out cross-validation over the 15
conversations (:func:`fusion_study.cross_validate`, mean of both benchmarks' R@10; the defaults are a
candidate, so "no change" can win a fold), with per-conversation paired bootstrap CIs against the
defaults and against dense. Writes ``benchmarks/results/prf_study.{json,md}``.

    python benchmarks/prf_study.py [workdir] [datasets]   # reuses workdir/capture.pkl, else ~20 min
"""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fusion_study
from chunk_study import _cached
from fusion_study import BASE, DATASETS, Question, cross_validate, paired_ci

from memlane.evaluation.metrics import recall_at_k
from memlane.recall.ranking import RankedCandidate, rank, relevance_of, resolve_retrieval
from memlane.stores.sqlite.base import decode_vectors

FloatArray = NDArray[np.float64]
Reranker = Callable[[Question, FloatArray, list[RankedCandidate]], list[int]]
"""Re-ranks one question given its candidates' ``[n, d]`` unit vectors and the defaults' top :data:`POOL`:
candidate indices, best first."""

POOL = 50  # the defaults' top candidates MMR and the cap choose from
BETAS = (0.25, 0.5, 1.0)
MS = (3, 5, 10)
LAMBDAS = (0.95, 0.9, 0.8, 0.7, 0.5)
CAPS = (1, 2, 3, 5)


def stored_vectors(database: Path) -> dict[int, NDArray[np.float32]]:
    """Every stored episode's vector by row key (the capture's SQLite file)."""
    with sqlite3.connect(database) as conn:
        rows = conn.execute("SELECT seq, embedding FROM episodes WHERE embedding IS NOT NULL").fetchall()
    vectors = decode_vectors([r[1] for r in rows])
    return {int(r[0]): v for r, v in zip(rows, vectors, strict=True)}


def question_vectors(q: Question, store: Mapping[int, NDArray[np.float32]]) -> FloatArray:
    """``[n, d]`` the candidates' vectors (zeros for a candidate without one)."""
    dims = len(next(iter(store.values())))
    return np.vstack([store.get(k, np.zeros(dims, dtype=np.float32)) for k in q.keys]).astype(np.float64)


def defaults(q: Question, limit: int = 10) -> list[RankedCandidate]:
    """The defaults' ranking (best first)."""
    return rank(q.signals, BASE, replace(q.options, limit=limit))


def rocchio_cosine(cosine: FloatArray, vectors: FloatArray, top: NDArray[np.intp], beta: float) -> FloatArray:
    """``cos(normalize(q + beta * mean(vectors[top])), v)`` of each candidate from its ``cos(q, v)``.

    Args:
        cosine: ``[n]`` cosines to the unit query vector (NaN: none, stays NaN).
        vectors: ``[n, d]`` unit vectors of the candidates.
        top: The feedback candidates (indices with a cosine), non-empty.
        beta: Feedback weight >= 0.
    """
    centroid = vectors[top].mean(axis=0)
    norm = np.sqrt(1.0 + 2.0 * beta * float(np.mean(cosine[top])) + beta * beta * float(centroid @ centroid))
    return np.asarray((cosine + beta * (vectors @ centroid)) / norm, dtype=np.float64)


def rocchio(beta: float, m: int, source: str) -> Reranker:
    """The defaults over Rocchio-expanded cosines (feedback from the ``m`` best by base relevance or hits)."""

    def run(q: Question, vectors: FloatArray, pool: list[RankedCandidate]) -> list[int]:
        cosine = q.signals.cosine
        if cosine is None or resolve_retrieval(q.signals, q.options.retrieval) == "keyword":
            return [r.index for r in pool]
        cos = np.asarray(cosine, dtype=np.float64)
        if source == "base":
            base = relevance_of(q.signals, BASE, "hybrid").base
            order = np.argsort(-base, kind="stable")
        else:
            order = np.asarray([r.index for r in pool], dtype=np.intp)
        top = order[~np.isnan(cos[order])][:m]
        if not len(top):
            return [r.index for r in pool]
        signals = replace(q.signals, cosine=rocchio_cosine(cos, vectors, top, beta))
        return [r.index for r in rank(signals, BASE, q.options)]

    return run


def mmr(lam: float) -> Reranker:
    """Maximal marginal relevance over the defaults' top :data:`POOL` (their scores, vector similarity)."""

    def run(q: Question, vectors: FloatArray, pool: list[RankedCandidate]) -> list[int]:
        idx = np.asarray([r.index for r in pool], dtype=np.intp)
        score = np.asarray([r.breakdown.score for r in pool])
        sim = vectors[idx] @ vectors[idx].T
        chosen: list[int] = []
        closest = np.zeros(len(idx))  # max similarity to the chosen ones (0 before the first)
        free = np.ones(len(idx), dtype=bool)
        for _ in range(min(10, len(idx))):
            value = lam * score - (1.0 - lam) * closest
            pick = int(np.argmax(np.where(free, value, -np.inf)))
            chosen.append(pick)
            free[pick] = False
            closest = sim[pick] if len(chosen) == 1 else np.maximum(closest, sim[pick])
        return idx[chosen].tolist()

    return run


def capped(cap: int) -> Reranker:
    """The defaults' order with at most ``cap`` hits per conversation group (later ones pushed below)."""

    def run(q: Question, vectors: FloatArray, pool: list[RankedCandidate]) -> list[int]:
        ranked = [r.index for r in pool]
        groups = q.signals.groups
        if groups is None:
            return ranked
        seen: dict[int, int] = {}
        kept, spill = [], []
        for i in ranked:
            g = int(groups[i])
            seen[g] = seen.get(g, 0) + 1
            (kept if seen[g] <= cap else spill).append(i)
        return (kept + spill)[:10]

    return run


def techniques() -> dict[str, dict[str, Reranker]]:
    """Technique -> grid label -> re-ranker."""
    return {
        "rocchio": {
            f"rocchio beta={b:g} m={m} source={s}": rocchio(b, m, s)
            for s in ("base", "hits")
            for b in BETAS
            for m in MS
        },
        "mmr": {f"mmr lambda={lam:g}": mmr(lam) for lam in LAMBDAS},
        "cap": {f"cap {c} per group": capped(c) for c in CAPS},
    }


def scored(questions: list[Question], store: Mapping[int, NDArray[np.float32]]) -> dict[str, FloatArray]:
    """Each label's per-question R@10 (defaults, dense and every grid point)."""
    out: dict[str, list[float]] = {"library defaults": [], "dense": []}
    grids = {label: r for grid in techniques().values() for label, r in grid.items()}
    for label in grids:
        out[label] = []
    for q in questions:
        vectors = question_vectors(q, store)
        pool = defaults(q, POOL)
        hits = {
            "library defaults": [r.index for r in pool],
            "dense": [r.index for r in rank(q.signals, BASE, replace(q.options, retrieval="dense"))],
        }
        hits.update({label: r(q, vectors, pool) for label, r in grids.items()})
        for label, idx in hits.items():
            out[label].append(recall_at_k([q.ids[i] for i in idx[:10]], q.evidence, 10))
    return {label: np.asarray(v) for label, v in out.items()}


def per_type(questions: list[Question], scores: FloatArray) -> dict[str, float]:
    """Mean R@10 per question type."""
    kinds = np.asarray([q.type for q in questions])
    return {t: float(scores[kinds == t].mean()) for t in sorted(set(kinds.tolist()))}


def study(data: Mapping[str, list[Question]], store: Mapping[int, NDArray[np.float32]]) -> dict[str, Any]:
    """The study's figures (the JSON document)."""
    scores = {n: scored(qs, store) for n, qs in data.items()}
    return summarise(data, scores, {name: list(grid) for name, grid in techniques().items()})


def summarise(
    data: Mapping[str, list[Question]],
    scores: Mapping[str, Mapping[str, FloatArray]],
    grids: Mapping[str, list[str]],
    baselines: tuple[str, ...] = ("dense",),
) -> dict[str, Any]:
    """The JSON document of a re-ranking study: each grid chosen by cross-validation, paired CIs, types.

    Args:
        data: Per benchmark, the recorded questions.
        scores: Per benchmark and label, each question's R@10; holds ``"library defaults"``, the
            ``baselines`` and every label of ``grids``.
        grids: Technique -> its grid's labels (the defaults are a candidate of every grid).
        baselines: The labels (besides the defaults) every row is compared with.
    """
    conversations = {n: [q.conversation for q in qs] for n, qs in data.items()}
    doc: dict[str, Any] = {
        "reproduces_public_recall": {
            n: float(np.mean([[q.ids[r.index] for r in defaults(q)] == q.top for q in qs]))
            for n, qs in data.items()
        },
        "baselines": list(baselines),
        "cv": {},
        "benchmarks": {n: {"questions": len(qs), "rows": {}, "types": {}} for n, qs in data.items()},
    }
    picked_rows: dict[str, dict[str, FloatArray]] = {n: {} for n in data}
    for name, grid in grids.items():
        picked, choices = cross_validate(conversations, scores, ["library defaults", *grid])
        trivial = sum(c.endswith(": library defaults") for c in choices)
        doc["cv"][name] = {
            "choices": choices,
            "non_trivial_folds": len(choices) - trivial,
            "folds": len(choices),
        }
        for n in data:
            picked_rows[n][f"{name}: cross-validated choice"] = picked[n]
    for n, qs in data.items():
        clusters = conversations[n]
        rows = {**scores[n], **picked_rows[n]}
        doc["benchmarks"][n]["rows"] = {
            label: {
                "recall_at_10": float(s.mean()),
                "minus_defaults": paired_ci(s, scores[n]["library defaults"], clusters),
                **{f"minus_{b}": paired_ci(s, scores[n][b], clusters) for b in baselines},
            }
            for label, s in rows.items()
        }
        shown = ["library defaults", *baselines, *picked_rows[n]]
        doc["benchmarks"][n]["types"] = {label: per_type(qs, rows[label]) for label in shown}
    doc["verdict"] = verdict(doc)
    return doc


def verdict(doc: dict[str, Any]) -> dict[str, str]:
    """Per technique, whether its cross-validated choice meets the shipping rule: a non-trivial choice in
    most folds, a paired CI against the defaults above 0 on at least one benchmark and below 0 on none."""
    out = {}
    for name, cv in doc["cv"].items():
        label = f"{name}: cross-validated choice"
        cis = {n: b["rows"][label]["minus_defaults"] for n, b in doc["benchmarks"].items()}
        most = cv["non_trivial_folds"] > cv["folds"] / 2
        gains = sum(c["low"] > 0 for c in cis.values())
        ships = most and gains > 0 and all(c["high"] >= 0 for c in cis.values())
        out[name] = (
            f"{'ships' if ships else 'does not ship'}: non-trivial in "
            f"{cv['non_trivial_folds']}/{cv['folds']} "
            f"folds, CI vs defaults above 0 on {gains} benchmark(s), below 0 on "
            f"{sum(c['high'] < 0 for c in cis.values())}"
        )
    return out


def _cell(c: dict[str, float]) -> str:
    return f"{c['mean']:+.3f} [{c['low']:+.3f}, {c['high']:+.3f}] ({c['better']:g}/{c['worse']:g})"


TITLE = (
    "Pseudo-relevance feedback and diversity study (benchmarks/prf_study.py): BEAM 1-10 and LoCoMo 0-4, "
    "R@10 of `recall_episodes(question, limit=10)` re-ranked offline from fusion_study's recorded "
    "candidates and their stored vectors"
)


def markdown(doc: dict[str, Any], title: str = TITLE) -> str:
    """The study's tables: per benchmark each grid point's R@10 and paired CIs, per-type R@10, CV choices."""
    baselines = ["defaults", *doc.get("baselines", ["dense"])]
    lines = [
        f"{title} (re-ranking with the defaults reproduces the public API's hits "
        f"on {doc['reproduces_public_recall']}). CIs: per-conversation paired bootstrap, 95 %, "
        "(questions better/worse).",
    ]
    for name, bench in doc["benchmarks"].items():
        lines += [
            "",
            f"**{name}** ({bench['questions']} questions)",
            "",
            "| variant | R@10 | " + " | ".join(f"minus {b}" for b in baselines) + " |",
            "| --- | ---: |" + " --- |" * len(baselines),
        ]
        lines += [
            f"| {label} | {row['recall_at_10']:.3f} | "
            + " | ".join(_cell(row[f"minus_{b}"]) for b in baselines)
            + " |"
            for label, row in bench["rows"].items()
        ]
        kinds = list(next(iter(bench["types"].values())))
        lines += [
            "",
            f"| {name} R@10 per type | " + " | ".join(kinds) + " |",
            "| --- |" + " ---: |" * len(kinds),
        ]
        lines += [
            f"| {label} | " + " | ".join(f"{v[k]:.3f}" for k in kinds) + " |"
            for label, v in bench["types"].items()
        ]
    lines += ["", "Cross-validation (left-out conversation: choice; the defaults are a candidate):", ""]
    for name, cv in doc["cv"].items():
        lines.append(f"* {name}: {doc['verdict'][name]}. " + "; ".join(cv["choices"]) + ".")
    return "\n".join(lines) + "\n"


def main(workdir: Path, out_dir: Path, datasets: Path = DATASETS) -> None:
    data: dict[str, list[Question]] = _cached(
        workdir / "capture.pkl", lambda: fusion_study.capture(workdir, datasets)
    )
    doc = study(data, stored_vectors(workdir / "fusion-study.db"))
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "prf_study.json").write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    (out_dir / "prf_study.md").write_text(markdown(doc), encoding="utf-8")
    print(markdown(doc))


if __name__ == "__main__":
    args = [Path(a) for a in sys.argv[1:4]]
    main(
        args[0] if args else Path("/tmp"),
        args[2] if len(args) > 2 else Path("benchmarks/results"),
        *args[1:2],
    )
