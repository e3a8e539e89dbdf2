"""Why the old defaults lost to dense on BEAM, per signal, and the coverage-adaptive fusion replacing them.

A study (issue #20 item 1): it reads BEAM 1-10 and LoCoMo 0-4 in place (never LoCoMo 5-9), records the
candidate signals that ``recall_episodes(question, limit=10)`` hands to
:func:`memlane.recall.ranking.rank` with the library defaults, checks that re-ranking them with the
default profile gives exactly the public API's hits, and re-ranks them under variant profiles:

* per signal, from the defaults: no conversation context, no neighbours, no group, no boosts, other
  fusions, fixed dense weights 0.5-0.8;
* the fusion before issue #20 (``coverage_power=0``: fixed keyword share 0.6, keyword saturation 4);
* the grid the defaults were chosen from: the keyword share ``0.6 * (1 - coverage) ** p``
  (:func:`memlane.recall.relevance.coverage_dense_weight`, ``coverage`` = the fraction of the recall's
  candidates that match any query term) for ``p`` in {0, 1, 1.5, 2, 3} and keyword saturation {4, 8}.

Decision by leave-one-conversation-out cross-validation over the 15 conversations (choose the grid
point with the best mean of the two benchmarks' R@10 on 14, score it on the 15th), with per-conversation
paired bootstrap CIs. Writes ``benchmarks/results/fusion_study.{json,md}``.

    python benchmarks/fusion_study.py          # ~10 min on 2 cores (embeds both benchmarks)
    python benchmarks/fusion_study.py /tmp /work/shared/datasets   # workdir, datasets directory

It wraps ``memlane.recall.pipeline.rank`` and ``merge_candidates`` to record the signals, so it follows
the pipeline's internals (update the two hooks if the pipeline moves).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

import memlane.recall.pipeline as pipeline
from memlane import EpisodicMemory
from memlane.config.profile import Boosts, ContextWeights, Fusion, RankingProfile
from memlane.embeddings.local import LocalEmbedder
from memlane.evaluation.beam import _remember, load_beam
from memlane.evaluation.bootstrap import paired_bootstrap
from memlane.evaluation.locomo import load_locomo
from memlane.evaluation.locomo_run import _turn_inputs, fresh_database
from memlane.evaluation.metrics import recall_at_k
from memlane.recall.ranking import CandidateSignals, RankOptions, rank
from memlane.stores.sqlite import SQLiteStore

DATASETS = Path("../shared/datasets")
BEAM = "beam/100K"
LOCOMO = "locomo/locomo10.json"
TUNE = range(5)  # LoCoMo conversations 0-4 only: 5-9 stay held out
BASE = RankingProfile()


@dataclass
class Question:
    """One question's recorded candidates: signals, options, each candidate's evidence id and row key."""

    conversation: str
    type: str
    evidence: set[str]
    signals: CandidateSignals
    options: RankOptions
    ids: list[str]
    top: list[str]
    keys: list[int]


@contextmanager
def recording() -> Iterator[list[tuple[CandidateSignals, RankOptions, Any]]]:
    """Record ``(signals, options, candidate keys)`` of every ranked recall while active."""
    seen: list[tuple[CandidateSignals, RankOptions, Any]] = []
    keys: list[Any] = []
    real_rank, real_merge = pipeline.rank, pipeline.merge_candidates

    def merge(*args: Any, **kwargs: Any) -> Any:
        candidates = real_merge(*args, **kwargs)
        keys.append(candidates.keys.copy())
        return candidates

    def ranked(signals: CandidateSignals, profile: RankingProfile, options: RankOptions) -> Any:
        seen.append((signals, options, keys[-1]))
        return real_rank(signals, profile, options)

    pipeline.rank, pipeline.merge_candidates = ranked, merge  # type: ignore[assignment]
    try:
        yield seen
    finally:
        pipeline.rank, pipeline.merge_candidates = real_rank, real_merge  # type: ignore[assignment]


def ask_each(
    store: SQLiteStore, reader: EpisodicMemory, asks: list[tuple[str, str, set[str], Any]], id_field: str
) -> Iterator[tuple[Question, Any]]:
    """Ask each question once through ``recall_episodes(question, limit=10)``; yield it recorded
    (:class:`Question`) with its candidates' row keys (for studies that look up more per candidate)."""
    names: dict[int, str] = {}
    with recording() as seen:
        for conversation, kind, evidence, (question, now) in asks:
            hits = reader.recall_episodes(question, limit=10, now=now)
            signals, options, keys = seen[-1]
            fetched = store.fetch([int(k) for k in keys if int(k) not in names])
            names.update({k: str(e.metadata[id_field]) for k, e in fetched.items()})
            top = [str(h.episode.metadata[id_field]) for h in hits]
            ids = [names[int(k)] for k in keys]
            row_keys = [int(k) for k in keys]
            yield Question(conversation, kind, evidence, signals, options, ids, top, row_keys), keys


def _ask(
    store: SQLiteStore, reader: EpisodicMemory, asks: list[tuple[str, str, set[str], Any]], id_field: str
) -> list[Question]:
    return [q for q, _ in ask_each(store, reader, asks, id_field)]


def capture(workdir: Path, datasets: Path = DATASETS) -> dict[str, list[Question]]:
    """Remember both benchmarks with the bundled model and record every question's candidates."""
    embedder = LocalEmbedder()
    store = SQLiteStore(fresh_database(workdir / "fusion-study.db"))
    data: dict[str, list[Question]] = {"beam": [], "locomo": []}
    for conv in load_beam(datasets / BEAM):
        memory = EpisodicMemory(store, embedder, tenant_id=f"b{conv.name}", session_id="s", owns_store=False)
        _remember(memory, conv)
        asks = [
            (conv.name, q.type, {str(i) for i in q.evidence}, (q.question, conv.last_at))
            for q in conv.questions
        ]
        data["beam"] += _ask(store, memory, [a for a in asks if a[2]], "message_id")
    locomo, _ = load_locomo(datasets / LOCOMO)
    for pos in TUNE:
        lc = locomo[pos]
        memory = EpisodicMemory(
            store, embedder, tenant_id=f"l{pos}", session_id=lc.sample_id, owns_store=False
        )
        items = _turn_inputs(lc)
        for start in range(0, len(items), 64):
            memory.remember_episodes(items[start : start + 64])
        asks = [
            (str(pos), str(q.category), set(q.evidence), (q.question, lc.last_session_at))
            for q in lc.questions
            if q.category in (1, 2, 3, 4) and q.has_evidence
        ]
        data["locomo"] += _ask(store, memory, asks, "dia_id")
    store.close()
    return data


def grid() -> dict[str, RankingProfile]:
    """The grid the defaults were chosen from: coverage power ``p`` x keyword saturation ``s``."""
    return {
        f"p={p:g} s={s:g}": replace(BASE, fusion=replace(BASE.fusion, coverage_power=p), keyword_saturation=s)
        for p in (0.0, 1.0, 1.5, 2.0, 3.0)
        for s in (4.0, 8.0)
    }


Variant = RankingProfile


def variants() -> dict[str, tuple[Variant, str | None]]:
    """Label -> (profile, retrieval mode override)."""
    no_ctx = ContextWeights(neighbour=0.0, neighbour2=0.0, group=0.0)
    fixed = replace(BASE.fusion, coverage_power=0.0)
    out: dict[str, tuple[Variant, str | None]] = {
        "library defaults": (BASE, None),
        "dense": (BASE, "dense"),
        "keyword": (BASE, "keyword"),
        "before #20 (fixed 0.4/0.6, saturation 4)": (
            replace(BASE, fusion=fixed, keyword_saturation=4.0),
            None,
        ),
        "no context": (replace(BASE, context=no_ctx), None),
        "no neighbours": (replace(BASE, context=ContextWeights(neighbour=0.0, neighbour2=0.0)), None),
        "no group": (replace(BASE, context=ContextWeights(group=0.0)), None),
        "no boosts": (replace(BASE, boosts=Boosts(entity=0.0, time_window=0.0)), None),
        "rrf": (replace(BASE, fusion=Fusion(method="rrf")), None),
        "noisy_or": (replace(BASE, fusion=Fusion(method="noisy_or")), None),
    }
    for w in (0.5, 0.6, 0.7, 0.8):
        out[f"fixed dense weight {w}"] = (replace(BASE, fusion=replace(fixed, dense_weight=w)), None)
    out.update({f"grid {label}": (profile, None) for label, profile in grid().items()})
    return out


def recall10(questions: list[Question], variant: Variant, mode: str | None) -> np.ndarray:
    """R@10 of each question re-ranked under ``variant``."""
    out = []
    for q in questions:
        ranked = rank(q.signals, variant, replace(q.options, retrieval=mode or q.options.retrieval))
        out.append(recall_at_k([q.ids[r.index] for r in ranked], q.evidence, 10))
    return np.asarray(out)


def cross_validate(
    conversations: Mapping[str, Sequence[str]],
    scores: Mapping[str, Mapping[str, np.ndarray]],
    labels: list[str],
) -> tuple[dict[str, np.ndarray], list[str]]:
    """Leave one conversation out: pick the label with the best mean of the benchmarks' R@10 on the rest.

    Args:
        conversations: Per benchmark, each question's conversation (in the order of its scores).
        scores: Per benchmark and label, each question's R@10.
        labels: The candidates to choose from.

    Returns:
        Per benchmark each question's R@10 under the label chosen without its conversation, and the
        choices made (``"<benchmark> <conversation>: <label>"``).
    """
    convs = {n: np.asarray(c, dtype=object) for n, c in conversations.items()}
    picked = {n: np.zeros(len(c)) for n, c in convs.items()}
    choices = []
    for name, held in convs.items():
        for conv in sorted(set(held), key=lambda c: (len(c), c)):
            keep = {n: ~((n == name) & (c == conv)) for n, c in convs.items()}

            def objective(label: str) -> float:
                return float(np.mean([scores[n][label][keep[n]].mean() for n in convs]))  # noqa: B023

            best = max(labels, key=objective)
            choices.append(f"{name} {conv}: {best}")
            picked[name][~keep[name]] = scores[name][best][~keep[name]]
    return picked, choices


def _conversations(data: Mapping[str, Sequence[Question]]) -> dict[str, list[str]]:
    return {n: [q.conversation for q in qs] for n, qs in data.items()}


def paired_ci(a: np.ndarray, b: np.ndarray, clusters: list[str]) -> dict[str, float]:
    """``a - b`` per question, bootstrapped by conversation: mean, 95 % CI, better and worse counts."""
    d = paired_bootstrap(a, b, clusters)
    return {"mean": d.mean, "low": d.low, "high": d.high, "better": d.better, "worse": d.worse}


def main(workdir: Path, out_dir: Path, datasets: Path = DATASETS) -> None:
    data = capture(workdir, datasets)
    exact = {
        n: float(np.mean([[q.ids[r.index] for r in rank(q.signals, BASE, q.options)] == q.top for q in qs]))
        for n, qs in data.items()
    }
    table = variants()
    scores = {n: {label: recall10(qs, v, m) for label, (v, m) in table.items()} for n, qs in data.items()}
    grid_labels = [f"grid {label}" for label in grid()]
    picked, choices = cross_validate(_conversations(data), scores, grid_labels)
    doc: dict[str, Any] = {"reproduces_public_recall": exact, "benchmarks": {}, "cv_choices": choices}
    for n, qs in data.items():
        clusters = [q.conversation for q in qs]
        rows = {
            label: {
                "recall_at_10": float(s.mean()),
                "minus_defaults": paired_ci(s, scores[n]["library defaults"], clusters),
                "minus_dense": paired_ci(s, scores[n]["dense"], clusters),
                "minus_keyword": paired_ci(s, scores[n]["keyword"], clusters),
            }
            for label, s in {**scores[n], "cross-validated grid choice": picked[n]}.items()
        }
        doc["benchmarks"][n] = {"questions": len(qs), "rows": rows}
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "fusion_study.json").write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    (out_dir / "fusion_study.md").write_text(markdown(doc), encoding="utf-8")
    print(markdown(doc))


def _cell(c: dict[str, float]) -> str:
    return f"{c['mean']:+.3f} [{c['low']:+.3f}, {c['high']:+.3f}]"


def markdown(doc: dict[str, Any]) -> str:
    """The study's tables: per benchmark, each variant's R@10 and paired CIs."""
    lines = [
        "Fusion study (benchmarks/fusion_study.py): BEAM 1-10 and LoCoMo 0-4, R@10 of "
        "`recall_episodes(question, limit=10)` re-ranked offline from the recorded candidates "
        "(re-ranking with the defaults reproduces the public API's hits on "
        f"{doc['reproduces_public_recall']}). CIs: per-conversation paired bootstrap, 95%.",
    ]
    for name, bench in doc["benchmarks"].items():
        lines += [
            "",
            f"**{name}** ({bench['questions']} questions)",
            "",
            "| variant | R@10 | minus defaults | minus dense | minus keyword |",
            "| --- | ---: | --- | --- | --- |",
        ]
        for label, row in bench["rows"].items():
            lines.append(
                f"| {label} | {row['recall_at_10']:.3f} | {_cell(row['minus_defaults'])} | "
                f"{_cell(row['minus_dense'])} | {_cell(row['minus_keyword'])} |"
            )
    lines += [
        "",
        "Cross-validation over the grid (left-out conversation: choice): "
        + "; ".join(doc["cv_choices"])
        + ".",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    args = [Path(a) for a in sys.argv[1:3]]
    main(args[0] if args else Path("/tmp"), Path("benchmarks/results"), *args[1:])
