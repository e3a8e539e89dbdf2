"""A fusion that adapts continuously to the keyword evidence (issue #20 item 1): a study, none ships.

A study in the manner of ``benchmarks/prf_study.py``: it reuses ``fusion_study``'s capture (the
candidates ``recall_episodes(question, limit=10)`` ranks with the library defaults, BEAM 1-10 and
LoCoMo 0-4; LoCoMo 5-9 is never read) and re-ranks them offline with the defaults except for the
convex fusion's dense share ``w`` (the defaults: ``w = 1 - 0.6 * (1 - coverage)``,
:func:`memlane.recall.relevance.coverage_dense_weight`; ``coverage`` = the share of the candidates
that match a query term). Every rule of families (a) and (b) gives a keyword share ``s = 1 - w`` in
[0, 0.6] from the recall's calibrated signals (``d`` dense, ``k`` keyword, ``[n]`` over the
candidates) and keeps the defaults' ``s = 0.6`` when no candidate matches a query term: a recall
without keyword evidence never gets a larger dense share than one with it, so a candidate's keyword
evidence never lowers its score below what the same dense score earns where nothing matches (the case
of LangGraph's ``test_vector_update_with_embedding``, which the withdrawn "dense share 1 without
matches" broke; ``tests/unit/test_relevance_signals.py`` holds it as a property test):

* **(a) best match**: ``s = 0.6 * (1 - coverage) ** p * min(1, max(k) / x0)``: the keyword share
  shrinks continuously as the recall's best calibrated keyword score ``max(k) = 1 - exp(-bm25 / 8)``
  falls below ``x0``;
* **(b) spread** (query-performance prediction: Zhou & Croft 2007, *Query performance prediction in
  web search environments*, SIGIR '07, WIG = the top results' mean score minus the corpus's; Shtok,
  Kurland, Carmel, Raiber & Markovits 2012, *Predicting query performance by query-drift estimation*,
  ACM TOIS, NQC = the spread of the top scores): each signal's spread ``g`` over the candidates,
  ``wig`` (mean of the top 5 minus the mean of all) or ``head`` (``(max - mean(top 50)) / max``,
  scale-free), weighs it: ``s = 0.6 * min(1, (g_k / (g_k + g_d)) / t) * (1 - coverage) ** p``
  ("spread ratio"), or the keyword's alone, ``s = 0.6 * min(1, head(k) / t) * (1 - coverage) ** p``
  ("keyword head");
* **(c) broad context**, for spread-out evidence (summarization, multi-session): the context weights
  (the group's, or all) times ``(1 - coverage) ** q``, since BEAM's summarization, multi-session and
  preference questions are the ones whose words most candidates carry (median coverage 0.71-0.80).

An **oracle** row (each question's best of the fixed shares 0.4-1.0, chosen knowing its evidence)
bounds what any rule of the share alone can reach. Each family's grid is chosen by
leave-one-conversation-out cross-validation over the 15 conversations
(:func:`fusion_study.cross_validate`; the defaults are a candidate), with per-conversation paired
bootstrap CIs against the defaults, dense and keyword (:func:`prf_study.summarise`); the shipping
rule is :func:`prf_study.verdict`'s. Nothing is fitted. Writes
``benchmarks/results/fusion_cont_study.{json,md}``.

Found (the results file has the figures): no family ships. The best calibrated keyword score is
*higher* on BEAM (median 0.84) than on LoCoMo (0.70): long technical turns give large BM25, so (a)
moves the share the wrong way (LoCoMo loses up to 0.023). The spread ratio (``head``, no coverage
term) is chosen in 15/15 folds and ties the defaults (BEAM -0.005, LoCoMo +0.002, CIs include 0):
it finds the same signal coverage does. (c) loses on both. The oracle reaches only +0.030 on BEAM
and +0.021 on LoCoMo over the defaults: BEAM's target (dense + 0.05, i.e. 0.658) is not within reach
of the fusion's share alone. Nor does any statistic here point to the oracle's share within a benchmark:
over the questions whose R@10 depends on it (51 BEAM, 223 LoCoMo), Spearman's rho of coverage with the
oracle's share is -0.02 / -0.01, and the strongest (head(k) on BEAM -0.31, max(k) on LoCoMo +0.23)
change sign between the benchmarks (:func:`oracle_agreement`).

    python benchmarks/fusion_cont_study.py [workdir] [datasets] [out]   # reuses workdir/capture.pkl
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fusion_study
import prf_study
from chunk_study import _cached
from fusion_study import BASE, DATASETS, Question

import memlane.recall.ranking as ranking
from memlane.config.profile import Fusion, RankingProfile
from memlane.evaluation.metrics import recall_at_k
from memlane.recall.ranking import CandidateSignals, rank
from memlane.recall.relevance import dense_relevance, keyword_coverage, keyword_relevance

FloatArray = NDArray[np.float64]
Share = Callable[[FloatArray, FloatArray], float]
"""Keyword share ``s`` in [0, 0.6] of one recall from its ``[n]`` calibrated dense and keyword signals."""

TOP_SHARE = 1.0 - BASE.fusion.dense_weight  # 0.6: the keyword share with no other evidence
X0S = (0.5, 0.6, 0.7, 0.8, 0.9)
POWERS = (0.0, 1.0)
RATIOS = (0.5, 0.6, 0.7)
HEADS = (0.5, 0.6, 0.7, 0.8)
ORACLE_WEIGHTS = (0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
ORACLE = "oracle: each question's best dense share of 0.4-1.0 (a ceiling, not a rule)"
HEAD = 50  # the head the "head" spread compares the best with


def coverage_factor(k: FloatArray, p: float) -> float:
    """``(1 - coverage) ** p`` (1 for ``p = 0``): the defaults' shrinking of the keyword share."""
    return (1.0 - keyword_coverage(k)) ** p if p > 0.0 else 1.0


def best_match(x0: float, p: float) -> Share:
    """Family (a): ``0.6 * (1 - coverage) ** p * min(1, max(k) / x0)``."""

    def share(d: FloatArray, k: FloatArray) -> float:
        return TOP_SHARE * coverage_factor(k, p) * min(1.0, float(k.max()) / x0)

    return share


def wig(values: FloatArray) -> float:
    """``mean(top 5) - mean(all)`` (>= 0): how far the signal's best stand out of the pool (WIG-like)."""
    return float(np.sort(values)[::-1][:5].mean() - values.mean())


def head(values: FloatArray) -> float:
    """``(max - mean(top 50)) / max`` in [0, 1] (0 when all are 0): how far the best stands out of the
    head, scale-free (calibrated dense and keyword scores have different ranges)."""
    top = np.sort(values)[::-1][:HEAD]
    return float((top[0] - top.mean()) / top[0]) if top[0] > 0.0 else 0.0


SPREADS: dict[str, Callable[[FloatArray], float]] = {"wig": wig, "head": head}


def discriminative(kind: str, t: float, p: float) -> Share:
    """Family (b): ``0.6 * min(1, r / t) * (1 - coverage) ** p``, ``r = g_k / (g_k + g_d)`` the keyword's
    part of the two signals' spreads ``g`` (:data:`SPREADS`; 0.5 when both are 0)."""
    measure = SPREADS[kind]

    def share(d: FloatArray, k: FloatArray) -> float:
        gk, gd = measure(k), measure(d)
        r = 0.5 if gk + gd <= 0.0 else gk / (gk + gd)
        return TOP_SHARE * min(1.0, r / t) * coverage_factor(k, p)

    return share


def keyword_head(t: float, p: float) -> Share:
    """Family (b), the keyword's spread alone: ``0.6 * min(1, head(k) / t) * (1 - coverage) ** p``."""

    def share(d: FloatArray, k: FloatArray) -> float:
        return TOP_SHARE * min(1.0, head(k) / t) * coverage_factor(k, p)

    return share


def constant(share: float) -> Share:
    """A fixed keyword share (the :data:`ORACLE`'s choices)."""
    return lambda d, k: share


def families() -> dict[str, dict[str, Share]]:
    """Family -> grid label -> keyword share rule."""
    return {
        "best match": {f"best match x0={x0:g} p={p:g}": best_match(x0, p) for x0 in X0S for p in POWERS},
        "spread ratio": {
            f"spread ratio {kind} t={t:g} p={p:g}": discriminative(kind, t, p)
            for kind in SPREADS
            for t in RATIOS
            for p in POWERS
        },
        "keyword head": {f"keyword head t={t:g} p={p:g}": keyword_head(t, p) for t in HEADS for p in POWERS},
    }


def dense_weight_of(rule: Share) -> Callable[[CandidateSignals, Fusion], float]:
    """``rule`` as the ranking's ``convex_dense_weight``: ``1 - s``, and the defaults' 0.4 without matches."""

    def weight(signals: CandidateSignals, fusion: Fusion) -> float:
        if signals.keyword is None or signals.cosine is None or keyword_coverage(signals.keyword) == 0.0:
            return fusion.dense_weight
        d = dense_relevance(signals.cosine, BASE.dense)
        k = keyword_relevance(signals.keyword, BASE.keyword_saturation)
        return 1.0 - min(TOP_SHARE, max(0.0, rule(d, k)))

    return weight


@contextmanager
def dense_share(rule: Share) -> Iterator[None]:
    """Rank with ``rule``'s dense share while active (patches ``ranking.convex_dense_weight``)."""
    real = ranking.convex_dense_weight
    ranking.convex_dense_weight = dense_weight_of(rule)  # type: ignore[assignment]
    try:
        yield
    finally:
        ranking.convex_dense_weight = real  # type: ignore[assignment]


def recall10(
    questions: list[Question],
    mode: str | None = None,
    profile_of: Callable[[Question], RankingProfile] | None = None,
) -> FloatArray:
    """Each question's R@10 re-ranked with the defaults, or ``profile_of(question)`` (``mode`` overrides
    the retrieval)."""
    out = []
    for q in questions:
        profile = BASE if profile_of is None else profile_of(q)
        ranked = rank(q.signals, profile, replace(q.options, retrieval=mode or q.options.retrieval))
        out.append(recall_at_k([q.ids[r.index] for r in ranked], q.evidence, 10))
    return np.asarray(out)


def broad_context(part: str, q_power: float) -> Callable[[Question], RankingProfile]:
    """Family (c): the defaults with the context weights (``part``: ``"group"`` or every ``"context"``
    weight) times ``(1 - coverage) ** q``: a query whose words most candidates carry (BEAM's
    summarization, multi-session and preference questions: coverage 0.71-0.80) asks for evidence spread
    over the conversation, which the group and neighbour lifts around the best match crowd out."""

    def profile_of(question: Question) -> RankingProfile:
        assert question.signals.keyword is not None
        scale = (1.0 - keyword_coverage(question.signals.keyword)) ** q_power
        c = BASE.context
        if part == "group":
            return replace(BASE, context=replace(c, group=c.group * scale))
        return replace(
            BASE,
            context=replace(
                c, neighbour=c.neighbour * scale, neighbour2=c.neighbour2 * scale, group=c.group * scale
            ),
        )

    return profile_of


CONTEXT_GRID = {
    f"broad context {part} q={qp:g}": broad_context(part, qp)
    for part in ("group", "context")
    for qp in (0.5, 1.0, 2.0)
}


def scored(questions: list[Question]) -> dict[str, FloatArray]:
    """Each label's per-question R@10: defaults, dense, keyword, every rule of every family and the
    :data:`ORACLE` (per question the best of the fixed dense shares :data:`ORACLE_WEIGHTS`: what no rule
    of the share alone can beat)."""
    out = {"library defaults": recall10(questions), "dense": recall10(questions, "dense")}
    out["keyword"] = recall10(questions, "keyword")
    for grid in families().values():
        for label, rule in grid.items():
            with dense_share(rule):
                out[label] = recall10(questions)
    for label, profile_of in CONTEXT_GRID.items():
        out[label] = recall10(questions, profile_of=profile_of)
    out[ORACLE] = fixed_shares(questions).max(axis=0)
    return out


def fixed_shares(questions: list[Question]) -> FloatArray:
    """``[len(ORACLE_WEIGHTS), q]``: each question's R@10 under each fixed dense share."""
    rows = []
    for w in ORACLE_WEIGHTS:
        with dense_share(constant(1.0 - w)):
            rows.append(recall10(questions))
    return np.vstack(rows)


def _ranks(values: FloatArray) -> FloatArray:
    """Ranks 0..n-1 of ``values``, ties sharing their mean rank."""
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values))
    ranks[order] = np.arange(len(values), dtype=np.float64)
    _, tie, counts = np.unique(values, return_inverse=True, return_counts=True)
    return np.asarray(np.bincount(tie, weights=ranks) / counts)[tie]


def oracle_agreement(questions: list[Question]) -> dict[str, float]:
    """How well each :data:`DIAGNOSTICS` statistic predicts the share the oracle wants.

    Over the questions whose R@10 depends on the fixed share, the mean of each question's best shares
    (ties averaged) and Spearman's rho between it and each statistic (a rule built on a statistic can
    only follow the oracle as far as this goes).
    """
    table = fixed_shares(questions)
    matters = table.max(axis=0) > table.min(axis=0)
    weights = np.asarray(ORACLE_WEIGHTS)
    best = np.array([weights[col == col.max()].mean() for col in table.T])[matters]
    picked = [q for q, m in zip(questions, matters, strict=True) if m]
    out = {
        "questions where the share matters": float(matters.sum()),
        "oracle's mean w there": float(best.mean()),
    }
    for label, f in DIAGNOSTICS.items():
        values = np.array([f(*calibrated(q)) for q in picked])
        out[f"rho({label}, oracle w)"] = float(np.corrcoef(_ranks(values), _ranks(best))[0, 1])
    return out


def calibrated(q: Question) -> tuple[FloatArray, FloatArray]:
    """The question's ``[n]`` calibrated dense and keyword signals under the defaults."""
    assert q.signals.cosine is not None and q.signals.keyword is not None
    d = dense_relevance(q.signals.cosine, BASE.dense)
    return d, keyword_relevance(q.signals.keyword, BASE.keyword_saturation)


DIAGNOSTICS: dict[str, Callable[[FloatArray, FloatArray], float]] = {
    "best keyword max(k)": lambda d, k: float(k.max()),
    "coverage": lambda d, k: keyword_coverage(k),
    "head(d)": lambda d, k: head(d),
    "head(k)": lambda d, k: head(k),
    "wig(d)": lambda d, k: wig(d),
    "wig(k)": lambda d, k: wig(k),
}
"""The pool statistics the rules read, per question (their medians per question type are reported)."""


def diagnostics(data: Mapping[str, list[Question]]) -> dict[str, dict[str, dict[str, float]]]:
    """Per benchmark and question type, the median of each :data:`DIAGNOSTICS` statistic and the
    defaults' mean dense share ``w``."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for n, qs in data.items():
        out[n] = {}
        for kind in sorted({q.type for q in qs}):
            signals = [calibrated(q) for q in qs if q.type == kind]
            row = {label: float(np.median([f(d, k) for d, k in signals])) for label, f in DIAGNOSTICS.items()}
            weights = [ranking.convex_dense_weight(q.signals, BASE.fusion) for q in qs if q.type == kind]
            out[n][kind] = {**row, "defaults' w (mean)": float(np.mean(weights)), "questions": len(weights)}
    return out


def diagnostics_markdown(table: Mapping[str, Mapping[str, Mapping[str, float]]]) -> str:
    """The diagnostics as one table per benchmark."""
    lines = ["", "Pool statistics per question type (medians; the rules' inputs):"]
    for n, kinds in table.items():
        columns = list(next(iter(kinds.values())))
        lines += ["", f"| {n} type | " + " | ".join(columns) + " |", "| --- |" + " ---: |" * len(columns)]
        lines += [
            f"| {kind} | " + " | ".join(f"{row[c]:.3g}" for c in columns) + " |"
            for kind, row in kinds.items()
        ]
    return "\n".join(lines) + "\n"


def main(workdir: Path, out_dir: Path, datasets: Path = DATASETS) -> None:
    data: dict[str, list[Question]] = _cached(
        workdir / "capture.pkl", lambda: fusion_study.capture(workdir, datasets)
    )
    scores = {n: scored(qs) for n, qs in data.items()}
    grids = {name: list(grid) for name, grid in families().items()}
    grids["broad context"] = list(CONTEXT_GRID)
    doc: dict[str, Any] = prf_study.summarise(data, scores, grids, baselines=("dense", "keyword"))
    doc["diagnostics"] = diagnostics(data)
    doc["oracle_agreement"] = {n: oracle_agreement(qs) for n, qs in data.items()}
    title = (
        "Continuous fusion study (benchmarks/fusion_cont_study.py): BEAM 1-10 and LoCoMo 0-4, R@10 of "
        "`recall_episodes(question, limit=10)` re-ranked offline from fusion_study's recorded candidates "
        "with the defaults except the convex fusion's dense share (families a, b) or the context weights "
        "(family c)"
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "fusion_cont_study.json").write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    text = prf_study.markdown(doc, title) + diagnostics_markdown(doc["diagnostics"])
    text += "\nThe oracle's share against the pool statistics:\n\n" + "".join(
        f"* {n}: " + "; ".join(f"{k} {v:.3g}" for k, v in row.items()) + "\n"
        for n, row in doc["oracle_agreement"].items()
    )
    (out_dir / "fusion_cont_study.md").write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    args = [Path(a) for a in sys.argv[1:4]]
    main(
        args[0] if args else Path("/tmp"),
        args[2] if len(args) > 2 else Path("benchmarks/results"),
        *args[1:2],
    )
