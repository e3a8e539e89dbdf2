"""Run the LoCoMo retrieval benchmark end to end through :class:`memlane.EpisodicMemory`.

For each conversation: every turn is remembered as an episode (event type ``turn``,
content ``"<speaker>: <text>"``, ``created_at`` = its session's date, session = the
conversation, tags = [speaker], the turn's ``dia_id`` in metadata), in one SQLite file.
Then every question of the chosen categories that has evidence is asked with
``now`` = the conversation's last session time, once per configuration (retrieval mode,
fusion, time windows on/off, ranking weights: :class:`EvalConfiguration`), and the ranked
``dia_id``s are scored with recall@5, recall@10, NDCG@10 and Hit@10 against the cleaned
evidence (Maharana et al. 2024, *Evaluating Very Long-Term Conversational Memory of LLM
Agents*, ACL).

Tuning discipline: every parameter memlane ships (fusion method, ``keyword_weight``,
``rrf_k``, dense weight, temporal boost) was chosen on conversations 0-4 only; conversations 5-9 are reported
separately as the held-out figure. No rule keys on a question, speaker or dataset string.

Timing: remember throughput counts turns per second including embedding; recall latency
(p50/p95, milliseconds) is measured per configuration around the whole
``recall_episodes`` call, query embedding included (queries are embedded afresh for every
configuration).
"""

from __future__ import annotations

import math
import platform
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memlane.embeddings.base import Embedder
from memlane.evaluation.bootstrap import PairedDifference, paired_bootstrap
from memlane.evaluation.configurations import DEFAULT_CONFIGURATIONS, EvalConfiguration
from memlane.evaluation.locomo import (
    LOCOMO_CATEGORIES,
    EvidenceCleaning,
    LocomoConversation,
    LocomoQuestion,
    load_locomo,
)
from memlane.evaluation.metrics import MetricSummary, MetricTable, QuestionScore, aggregate, percentile
from memlane.memory import EpisodeInput, EpisodicMemory
from memlane.recall.ranking import RankingWeights, resolve_weights
from memlane.stores.sqlite import SQLiteStore

__all__ = [
    "DEFAULT_CONFIGURATIONS",
    "EvalConfiguration",
    "LocomoReport",
    "MemoEmbedder",
    "RunResult",
    "report_to_markdown",
    "run_locomo",
]


BASELINES = {
    "BM25 (measured here, issue #2)": 0.576,
    "MiniLM dense (measured here)": 0.497,
    "RRF of both (measured here)": 0.606,
}
"""Reference figures on categories 1-4 (1,536 questions), quoted from the issue, not rerun.

A BM25 rerun here with the same cleaned evidence gives 0.574 for "any evidence in the top 10"
(:func:`memlane.evaluation.metrics.hit_at_k`) and 0.518 for the evidence fraction
(:func:`~memlane.evaluation.metrics.recall_at_k`), so these are hit rates.
"""


HELDOUT_LOOKS = 8
"""How many times conversations 5-9 were evaluated while the current defaults were designed:
twice by the design study (the frozen defaults; one pre-registered extension), once for the first
committed results, once for a quiet-machine latency rerun, once after the exact top-N pool and the
kept scope statistics landed (same figures), once for the committed results with the turn
metrics taken from ``limit=10`` recalls (the pool size, 500, was chosen on 0-4 before that run),
once for a later quiet latency rerun, and once after the convex fusion's dense share of 1 without
any keyword match (issue #20; held-out figures unchanged; withdrawn). Nothing was retuned after a look."""

TURN_LIMIT = 10
"""Hits asked per question for the turn metrics and the latency: what a user asking for 10 gets
(the candidate pool, ``max(20 * limit, 500)``, depends on the limit)."""

SESSION_LIMIT = 50
"""Hits asked per question, in a second untimed recall, for the session metrics: the first 10
distinct LoCoMo sessions among them."""


def dialogue_session(dia_id: str) -> str:
    """The LoCoMo session of a turn id: ``"D3:5"`` -> ``"D3"``."""
    return dia_id.split(":", 1)[0]


class MemoEmbedder:
    """Wraps an embedder and remembers vectors of texts it has embedded (an exact cache).

    Args:
        inner: The embedder to wrap; ``model_id`` and ``dims`` are passed through.
    """

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self._cache: dict[str, NDArray[np.float32]] = {}

    @property
    def model_id(self) -> str:
        """The wrapped embedder's model id."""
        return self.inner.model_id

    @property
    def dims(self) -> int:
        """The wrapped embedder's dimension."""
        return self.inner.dims

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed ``texts`` (``[n, dims]`` float32), computing only texts not seen before."""
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            for text, vector in zip(missing, self.inner.embed(missing), strict=True):
                self._cache[text] = vector
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        return np.stack([self._cache[t] for t in texts])


@dataclass(frozen=True)
class RunResult:
    """Scores of one ranking configuration.

    Attributes:
        name: Configuration label.
        weights: Its ranking weights.
        all: Metrics over every evaluated conversation.
        splits: Metrics per conversation split (``"tune (0-4)"``, ``"held-out (5-9)"``), when present.
        configuration: What was run.
        recall_ms_p50: Median recall latency (ms), query embedding included.
        recall_ms_p95: 95th-percentile recall latency (ms), query embedding included.
        per_question: ``(conversation position, R@10)`` of each question, in the order asked (the
            same order for every configuration of a run), for paired comparisons.
    """

    name: str
    weights: RankingWeights
    all: MetricTable
    splits: dict[str, MetricTable] = field(default_factory=dict)
    configuration: EvalConfiguration = field(default_factory=EvalConfiguration)
    recall_ms_p50: float = math.nan
    recall_ms_p95: float = math.nan
    per_question: tuple[tuple[int, float], ...] = ()


@dataclass(frozen=True)
class LocomoReport:
    """Everything one benchmark run measured.

    Attributes:
        results: One :class:`RunResult` per configuration, in the order given.
        cleaning: Evidence-cleaning counts over the whole file (every conversation and category).
        conversations: Number of conversations evaluated.
        turns: Episodes remembered.
        questions: Questions scored per configuration.
        skipped_without_evidence: Questions of the chosen categories with no evidence left.
        remember_per_second: Turns remembered per second, embedding included.
        recall_ms_p50: Median recall latency of the first configuration in milliseconds
            (query embedding included); every configuration's is in its :class:`RunResult`.
        recall_ms_p95: 95th-percentile recall latency of the first configuration (ms).
        embedding_model: Model id of the embedder.
        categories: Categories evaluated.
        meta: Machine and run information.
    """

    results: list[RunResult]
    cleaning: EvidenceCleaning
    conversations: int
    turns: int
    questions: int
    skipped_without_evidence: int
    remember_per_second: float
    recall_ms_p50: float
    recall_ms_p95: float
    embedding_model: str
    categories: tuple[int, ...]
    meta: dict[str, Any] = field(default_factory=dict)

    def paired_differences(self) -> dict[str, PairedDifference]:
        """R@10 of the first configuration minus ``dense`` and ``keyword`` (those present), with a
        per-conversation paired bootstrap 95% CI (:func:`memlane.evaluation.bootstrap.paired_bootstrap`)."""
        first = self.results[0]
        return {
            f"{first.name} - {r.name}": paired_bootstrap(
                [v for _, v in first.per_question],
                [v for _, v in r.per_question],
                [pos for pos, _ in first.per_question],
            )
            for r in self.results[1:]
            if r.name in ("dense", "keyword") and len(r.per_question) == len(first.per_question)
        }

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serialisable dict of the report."""

        def table(t: MetricTable) -> dict[str, Any]:
            return {
                "overall": vars(t.overall),
                "by_category": {str(c): vars(s) for c, s in t.by_category.items()},
            }

        return {
            "benchmark": "LoCoMo (locomo10.json), turn-level retrieval",
            "categories": list(self.categories),
            "conversations": self.conversations,
            "turns": self.turns,
            "questions": self.questions,
            "skipped_without_evidence": self.skipped_without_evidence,
            "evidence_cleaning": vars(self.cleaning) | {"dropped": self.cleaning.dropped},
            "embedding_model": self.embedding_model,
            "remember_per_second": self.remember_per_second,
            "recall_ms_p50": self.recall_ms_p50,
            "recall_ms_p95": self.recall_ms_p95,
            "configurations": [
                {
                    "name": r.name,
                    "description": r.configuration.description,
                    "retrieval": r.configuration.retrieval,
                    "fusion": r.configuration.fusion,
                    "temporal": r.configuration.temporal,
                    "weights": {
                        "relevance": r.weights.relevance,
                        "recency": r.weights.recency,
                        "importance": r.weights.importance,
                    },
                    "recall_ms_p50": r.recall_ms_p50,
                    "recall_ms_p95": r.recall_ms_p95,
                    "all": table(r.all),
                    "splits": {name: table(t) for name, t in r.splits.items()},
                }
                for r in self.results
            ],
            "paired_differences_r_at_10": {k: asdict(d) for k, d in self.paired_differences().items()},
            "baselines_hit_at_10": BASELINES,
            "meta": self.meta,
        }


def _split_name(position: int) -> str:
    return "tune (0-4)" if position < 5 else "held-out (5-9)"


def fresh_database(db: Path) -> Path:
    """``db``, with any earlier file of that name (and its WAL files) removed."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    return db


def _turn_inputs(conv: LocomoConversation) -> list[EpisodeInput]:
    """One ``turn`` episode per dialogue turn, with its ``dia_id`` (and image caption) as metadata."""
    return [
        EpisodeInput(
            event_type="turn",
            content=turn.content,
            tags=[turn.speaker],
            created_at=turn.created_at,
            metadata={"dia_id": turn.dia_id} | ({"caption": turn.blip_caption} if turn.blip_caption else {}),
        )
        for turn in conv.turns
    ]


def _remember_all(
    store: SQLiteStore,
    embedder: Embedder,
    selected: Sequence[tuple[int, LocomoConversation]],
    batch_size: int,
    progress: Callable[[str, int, int], None] | None,
) -> tuple[dict[str, EpisodicMemory], float]:
    """Remember every turn, one memory (tenant) per conversation; returns them and the seconds spent."""
    total_turns = sum(len(c.turns) for _, c in selected)
    remember_seconds = 0.0
    done = 0
    memories: dict[str, EpisodicMemory] = {}
    for _, conv in selected:
        memory = EpisodicMemory(
            store, embedder, tenant_id=f"locomo-{conv.sample_id}", session_id=conv.sample_id, owns_store=False
        )
        memories[conv.sample_id] = memory
        items = _turn_inputs(conv)
        for start in range(0, len(items), batch_size):
            began = time.perf_counter()
            memory.remember_episodes(items[start : start + batch_size])
            remember_seconds += time.perf_counter() - began
            done += len(items[start : start + batch_size])
            if progress:
                progress("remember", done, total_turns)
    return memories, remember_seconds


def _score_question(
    reader: EpisodicMemory, conv: LocomoConversation, q: LocomoQuestion
) -> tuple[QuestionScore, float]:
    """Score one question: the turn metrics of a ``limit=10`` recall (and its latency in ms), the
    session metrics of a ``limit=50`` one."""
    began = time.perf_counter()
    hits = reader.recall_episodes(q.question, limit=TURN_LIMIT, now=conv.last_session_at)
    milliseconds = (time.perf_counter() - began) * 1000.0
    wide = reader.recall_episodes(q.question, limit=SESSION_LIMIT, now=conv.last_session_at)
    score = QuestionScore.from_ranking(
        q.category,
        [str(h.episode.metadata["dia_id"]) for h in hits],
        q.evidence,
        session_of=dialogue_session,
        session_ranking=[str(h.episode.metadata["dia_id"]) for h in wide],
    )
    return score, milliseconds


def _run_result(
    name: str,
    weights: RankingWeights,
    setup: EvalConfiguration,
    rows: Sequence[tuple[int, QuestionScore]],
    latencies: Sequence[float],
) -> RunResult:
    """One configuration's :class:`RunResult`: all questions, and per split when there are two."""
    split_rows: dict[str, list[QuestionScore]] = {}
    for pos, score in rows:
        split_rows.setdefault(_split_name(pos), []).append(score)
    return RunResult(
        name=name,
        weights=weights,
        all=aggregate(s for _, s in rows),
        splits={k: aggregate(v) for k, v in sorted(split_rows.items(), reverse=True)}
        if len(split_rows) > 1
        else {},
        configuration=setup,
        recall_ms_p50=percentile(latencies, 50),
        recall_ms_p95=percentile(latencies, 95),
        per_question=tuple((pos, score.recall_at_10) for pos, score in rows),
    )


def run_locomo(
    path: str | Path,
    *,
    embedder: Embedder,
    workdir: str | Path,
    configurations: Mapping[str, EvalConfiguration | RankingWeights | str] = DEFAULT_CONFIGURATIONS,
    categories: Sequence[int] = (1, 2, 3, 4),
    conversations: Sequence[int] | None = None,
    batch_size: int = 64,
    progress: Callable[[str, int, int], None] | None = None,
) -> LocomoReport:
    """Remember every LoCoMo turn and score recall for every question.

    Args:
        path: ``locomo10.json``.
        embedder: The embedder under test.
        workdir: Directory for the SQLite file (``locomo-eval.db``, replaced if present).
        configurations: Label -> :class:`EvalConfiguration`, or just ranking weights (a preset
            name or :class:`RankingWeights`) with the library's retrieval defaults.
        categories: Question categories to evaluate (LoCoMo 1-5; default 1-4).
        conversations: Positions (0-9) of the conversations to run; default all.
        batch_size: Turns per ``remember_episodes`` call (>= 1).
        progress: Called as ``progress(stage, done, total)`` with stage ``"remember"`` or
            ``"recall"``; counts are turns or questions.

    Returns:
        The :class:`LocomoReport`.

    Raises:
        LocomoFormatError: the file is not LoCoMo-shaped. ValidationError: a bad configuration.
        ValueError: no question to evaluate.
    """
    data, cleaning = load_locomo(path)
    chosen = list(range(len(data))) if conversations is None else list(conversations)
    selected: list[tuple[int, LocomoConversation]] = [(i, data[i]) for i in chosen]
    setups = {
        name: c if isinstance(c, EvalConfiguration) else EvalConfiguration(weights=c)
        for name, c in configurations.items()
    }
    weights = {name: resolve_weights(c.weights, RankingWeights()) for name, c in setups.items()}
    configs = {name: c.memory_config() for name, c in setups.items()}
    if not weights:
        raise ValueError("at least one configuration is needed")
    store = SQLiteStore(fresh_database(Path(workdir) / "locomo-eval.db"))
    total_turns = sum(len(c.turns) for _, c in selected)
    questions = [(pos, conv, q) for pos, conv in selected for q in conv.questions if q.category in categories]
    askable = [(pos, conv, q) for pos, conv, q in questions if q.has_evidence]
    if not askable:
        raise ValueError("no question with evidence in the chosen categories")
    scores: dict[str, list[tuple[int, QuestionScore]]] = {name: [] for name in weights}
    latencies: dict[str, list[float]] = {name: [] for name in weights}
    try:
        memories, remember_seconds = _remember_all(store, embedder, selected, batch_size, progress)
        readers = {
            (sample_id, name): memory.with_context(config=configs[name])
            for sample_id, memory in memories.items()
            for name in weights
        }
        for n, (pos, conv, q) in enumerate(askable, start=1):
            for name in weights:
                score, milliseconds = _score_question(readers[conv.sample_id, name], conv, q)
                latencies[name].append(milliseconds)
                scores[name].append((pos, score))
            if progress:
                progress("recall", n, len(askable))
    finally:
        store.close()
    results = [
        _run_result(name, weights[name], setups[name], rows, latencies[name]) for name, rows in scores.items()
    ]
    first = results[0]
    return LocomoReport(
        results=results,
        cleaning=cleaning,
        conversations=len(selected),
        turns=total_turns,
        questions=len(askable),
        skipped_without_evidence=len(questions) - len(askable),
        remember_per_second=total_turns / remember_seconds if remember_seconds else math.nan,
        recall_ms_p50=first.recall_ms_p50,
        recall_ms_p95=first.recall_ms_p95,
        embedding_model=embedder.model_id,
        categories=tuple(categories),
        meta={
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "python": platform.python_version(),
            "numpy": np.__version__,
            "machine": platform.machine(),
            "cpus": _cpu_count(),
            "heldout_looks": HELDOUT_LOOKS,
            "positions": [pos for pos, _ in selected],
        },
    )


def _cpu_count() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _cells(m: MetricSummary | None) -> str:
    if m is None:
        return "| | | | | |"
    return (
        f"{m.recall_at_5:.3f} | {m.recall_at_10:.3f} | {m.ndcg_at_10:.3f} | {m.hit_at_10:.3f} | "
        f"{m.session_hit_at_5:.3f} | {m.session_hit_at_10:.3f}"
    )


def _baselines_and_held_out(positions: object) -> str:
    """What the baselines compare with and whether this run looked at the held-out conversations."""
    ran = sorted(positions) if isinstance(positions, list) else list(range(10))
    baselines = (
        "The baselines are quoted from issue #2 (not rerun here); a BM25 rerun with the same cleaned "
        "evidence gives Hit@10 0.574 and R@10 0.518, so they are comparable to the Hit@10 column"
    )
    if len(ran) < 10:
        baselines += f" of a run over all 10 conversations, not of this one (conversations {_ranges(ran)})"
    held_out = [p for p in ran if p >= 5]
    if held_out:
        looked = f"5-9 are held out and were looked at {HELDOUT_LOOKS} times in all (this run included)."
    else:
        looked = "this run evaluated none of the held-out conversations 5-9."
    return (
        f"{baselines}. Session Hit@k: an evidence session is among the first k distinct LoCoMo sessions "
        f"of the ranking. Parameters were tuned on conversations 0-4 only; {looked}"
    )


def _ranges(positions: Sequence[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``"0-2, 5"``."""
    spans: list[list[int]] = []
    for p in positions:
        if spans and p == spans[-1][-1] + 1:
            spans[-1].append(p)
        else:
            spans.append([p])
    return ", ".join(f"{s[0]}-{s[-1]}" if len(s) > 1 else str(s[0]) for s in spans)


def report_to_markdown(report: LocomoReport) -> str:
    """Render the report as Markdown tables: overall, tune vs held-out, per category."""
    cats = list(report.categories)
    metric_head = "R@5 | R@10 | NDCG@10 | Hit@10 | session Hit@5 | session Hit@10"
    lines = [
        f"LoCoMo turn-level retrieval, categories {', '.join(map(str, cats))}: "
        f"{report.questions:,} questions over {report.turns:,} turns in {report.conversations} "
        f"conversations; embedding model `{report.embedding_model}`.",
        "",
        f"| configuration | {metric_head} | "
        + " | ".join(f"R@10 cat {c} ({LOCOMO_CATEGORIES.get(c, '?')})" for c in cats)
        + " | recall p50 ms | recall p95 ms |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | "
        + " | ".join("---:" for _ in cats)
        + " | ---: | ---: |",
    ]
    for r in report.results:
        per_cat = [r.all.by_category.get(c) for c in cats]
        lines.append(
            f"| {r.name} | {_cells(r.all.overall)} | "
            + " | ".join("-" if m is None else f"{m.recall_at_10:.3f}" for m in per_cat)
            + f" | {r.recall_ms_p50:.1f} | {r.recall_ms_p95:.1f} |"
        )
    for name, value in BASELINES.items():
        lines.append(f"| {name} | | | | {value:.3f} | | | " + " | ".join("" for _ in cats) + " | | |")
    split_names = list(dict.fromkeys(k for r in report.results for k in r.splits))
    if split_names:
        lines += [
            "",
            "| configuration | "
            + " | ".join(
                " | ".join(
                    f"{m} {split}" for m in ("R@5", "R@10", "NDCG@10", "Hit@10", "sess Hit@5", "sess Hit@10")
                )
                for split in split_names
            )
            + " |",
            "| --- | " + " | ".join("---: | ---: | ---: | ---: | ---: | ---:" for _ in split_names) + " |",
        ]
        for r in report.results:
            lines.append(
                f"| {r.name} | "
                + " | ".join(_cells(r.splits[k].overall if k in r.splits else None) for k in split_names)
                + " |"
            )
    lines += [
        "",
        f"| configuration | category | {metric_head} |"
        + "".join(f" R@10 {split} |" for split in split_names),
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |" + "".join(" ---: |" for _ in split_names),
    ]
    for r in report.results:
        for c in cats:
            m = r.all.by_category.get(c)
            if m is None:
                continue
            split_cells = "".join(
                f" {r.splits[k].by_category[c].recall_at_10:.3f} |"
                if k in r.splits and c in r.splits[k].by_category
                else " - |"
                for k in split_names
            )
            lines.append(f"| {r.name} | {c} ({LOCOMO_CATEGORIES.get(c, '?')}) | {_cells(m)} |{split_cells}")
    differences = report.paired_differences()
    if differences:
        lines += [
            "",
            "| R@10 difference (per-conversation paired bootstrap) | mean | 95% CI | better on | worse on |",
            "| --- | ---: | --- | ---: | ---: |",
        ]
        lines += [
            f"| {k} | {d.mean:+.3f} | [{d.low:+.3f}, {d.high:+.3f}] | {d.better} | {d.worse} |"
            for k, d in differences.items()
        ]
    cleaning = report.cleaning
    legend = [
        f"`{r.name}`: {r.configuration.description}" for r in report.results if r.configuration.description
    ]
    lines += [
        "",
        ("Configurations: " + "; ".join(legend) + ".") if legend else "",
        "",
        "R@k is the fraction of a question's evidence turns found in the top k; Hit@10 is 1 when any "
        "evidence turn is in the top 10. " + _baselines_and_held_out(report.meta.get("positions")),
        f"Remember: {report.remember_per_second:,.0f} turns/s (embedding included). Recall latency is "
        "per configuration, around the whole recall call, query embedding included.",
        f"Evidence ids: {cleaning.ids_seen:,} seen, {cleaning.kept:,} kept ({cleaning.split_ids} split "
        f"out of {cleaning.multi_id_entries} multi-id strings, {cleaning.normalised} repaired), "
        f"{cleaning.dropped_malformed} malformed and {cleaning.dropped_missing} missing dropped, "
        f"{cleaning.dropped_duplicate} duplicates removed; "
        f"{report.skipped_without_evidence} questions without evidence skipped.",
    ]
    return "\n".join(lines) + "\n"
